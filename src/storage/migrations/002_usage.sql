-- Metered actions, written in batches.
CREATE TABLE usage_events (
  id TEXT PRIMARY KEY,
  org_id TEXT NOT NULL,
  user_id TEXT NOT NULL,
  kind TEXT NOT NULL,
  model TEXT,
  quantity BIGINT NOT NULL,
  at BIGINT NOT NULL
);

CREATE INDEX usage_events_org_at ON usage_events (org_id, at)
