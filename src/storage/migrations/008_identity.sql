-- An organisation an identity provider names: the issuer, the claim and its value, so two issuers never share one.
ALTER TABLE organizations ADD COLUMN external_key TEXT;

CREATE UNIQUE INDEX organizations_external_key ON organizations (external_key);

-- Signed-out sessions (refresh-token families): their access tokens are refused until expires_at, when the last has expired anyway.
CREATE TABLE revoked_sessions (
  session_id TEXT PRIMARY KEY,
  expires_at BIGINT NOT NULL
);

CREATE INDEX revoked_sessions_expiry ON revoked_sessions (expires_at)
