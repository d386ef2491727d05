-- First run: one-time codes that create the first owner at /setup, kept only as SHA-256 hashes. Every start
-- while no user exists adds one (each process logs its own); all are deleted once an owner exists.
CREATE TABLE setup_codes (
  code_hash TEXT PRIMARY KEY,
  expires_at BIGINT NOT NULL,
  created_at BIGINT NOT NULL
);

-- At most one row: taken by the request that creates the first owner, so two valid codes used at once
-- cannot both create one. user_id is filled once the owner exists.
CREATE TABLE setup_completion (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  user_id TEXT,
  claimed_at BIGINT NOT NULL
)
