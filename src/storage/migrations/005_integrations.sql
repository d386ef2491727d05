-- OAuth connections to third-party providers, one per user and provider. Token columns hold
-- secret-box ciphertexts (never clear text). `version` changes on every token change, so a refresh is
-- claimed by compare-and-set and two processes never both spend a single-use refresh token.
CREATE TABLE integration_connections (
  user_id TEXT NOT NULL,
  provider TEXT NOT NULL,
  access_token TEXT NOT NULL,
  refresh_token TEXT,
  token_type TEXT NOT NULL,
  scopes TEXT NOT NULL,
  expires_at BIGINT,
  refresh_expires_at BIGINT,
  account_id TEXT,
  account_name TEXT,
  account_url TEXT,
  version BIGINT NOT NULL,
  refresh_lease_until BIGINT,
  broken_reason TEXT,
  broken_at BIGINT,
  connected_at BIGINT NOT NULL,
  verified_at BIGINT,
  updated_at BIGINT NOT NULL,
  PRIMARY KEY (user_id, provider)
);

-- Connection flows in progress: the state is stored as its SHA-256 so the table alone cannot answer a
-- callback, and the PKCE verifier is sealed. A row is deleted by the callback that uses it.
CREATE TABLE oauth_states (
  state_hash TEXT PRIMARY KEY,
  user_id TEXT NOT NULL,
  provider TEXT NOT NULL,
  code_verifier TEXT NOT NULL,
  binding_hash TEXT NOT NULL,
  scopes TEXT NOT NULL,
  return_to TEXT NOT NULL,
  expires_at BIGINT NOT NULL,
  created_at BIGINT NOT NULL
);

CREATE INDEX oauth_states_expires ON oauth_states (expires_at)
