-- The snapshot each organisation's code index is at; processes sharing the database reload when it moves.
CREATE TABLE code_index_versions (
  org_id TEXT PRIMARY KEY,
  version BIGINT NOT NULL,
  snapshot TEXT NOT NULL,
  updated_at BIGINT NOT NULL
)
