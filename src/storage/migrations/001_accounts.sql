-- Organisations, their members, and the credentials used to sign in.
CREATE TABLE organizations (
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL,
  plan TEXT NOT NULL DEFAULT 'free',
  created_at BIGINT NOT NULL
);

CREATE TABLE users (
  id TEXT PRIMARY KEY,
  org_id TEXT NOT NULL REFERENCES organizations (id),
  email TEXT NOT NULL UNIQUE,
  password_hash TEXT,
  role TEXT NOT NULL,
  external_issuer TEXT,
  external_subject TEXT,
  created_at BIGINT NOT NULL
);

CREATE UNIQUE INDEX users_external_identity ON users (external_issuer, external_subject);
CREATE INDEX users_org ON users (org_id);

-- Refresh tokens rotate: each use marks the row used and issues a sibling in the same family.
CREATE TABLE refresh_tokens (
  id TEXT PRIMARY KEY,
  family_id TEXT NOT NULL,
  user_id TEXT NOT NULL REFERENCES users (id),
  token_hash TEXT NOT NULL UNIQUE,
  expires_at BIGINT NOT NULL,
  used_at BIGINT,
  revoked_at BIGINT,
  created_at BIGINT NOT NULL
);

CREATE INDEX refresh_tokens_family ON refresh_tokens (family_id);

CREATE TABLE login_failures (
  subject TEXT PRIMARY KEY,
  failures INTEGER NOT NULL,
  locked_until BIGINT NOT NULL,
  updated_at BIGINT NOT NULL
)
