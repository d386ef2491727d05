-- Personal API keys: a user's long-lived bearer tokens for scripts. Only the SHA-256 of the key's secret part is
-- kept; the key itself is shown once, when it is created. A revoked key keeps its row (revoked_at), so using it
-- says "revoked" and the owner's list shows when; deleting the user deletes their keys.
CREATE TABLE api_keys (
  id TEXT PRIMARY KEY,
  user_id TEXT NOT NULL REFERENCES users (id),
  org_id TEXT NOT NULL REFERENCES organizations (id),
  name TEXT NOT NULL,
  scopes TEXT NOT NULL,
  secret_hash TEXT NOT NULL,
  created_at BIGINT NOT NULL,
  expires_at BIGINT NOT NULL,
  last_used_at BIGINT,
  revoked_at BIGINT
);

CREATE INDEX api_keys_user ON api_keys (user_id);
