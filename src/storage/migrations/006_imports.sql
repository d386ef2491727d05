-- Repositories an organisation imported: one workspace under DATA_DIR/imports and one code index entry each.
CREATE TABLE codehost_repositories (
  id TEXT PRIMARY KEY,
  org_id TEXT NOT NULL,
  -- Identity of the repository: scheme, lower-cased host and path without a trailing .git.
  url_key TEXT NOT NULL,
  clone_url TEXT NOT NULL,
  name TEXT NOT NULL,
  -- Commit the code index holds; null until an import succeeds.
  indexed_commit TEXT,
  analysis TEXT,
  created_at BIGINT NOT NULL,
  updated_at BIGINT NOT NULL
);

CREATE UNIQUE INDEX codehost_repositories_org_url ON codehost_repositories (org_id, url_key);

CREATE TABLE codehost_imports (
  id TEXT PRIMARY KEY,
  org_id TEXT NOT NULL,
  user_id TEXT NOT NULL,
  repository_id TEXT NOT NULL REFERENCES codehost_repositories (id),
  ref TEXT,
  depth INTEGER,
  status TEXT NOT NULL,
  previous_commit TEXT,
  commit_id TEXT,
  progress TEXT,
  summary TEXT,
  error_code TEXT,
  error_message TEXT,
  created_at BIGINT NOT NULL,
  updated_at BIGINT NOT NULL,
  -- Written every few seconds by the process running the import; a stale one means that process died.
  heartbeat_at BIGINT NOT NULL,
  finished_at BIGINT
);

-- At most one import per repository is queued or running, across processes.
CREATE UNIQUE INDEX codehost_imports_one_active ON codehost_imports (repository_id) WHERE status IN ('queued', 'cloning', 'analysing', 'indexing');
CREATE INDEX codehost_imports_org_created ON codehost_imports (org_id, created_at);
CREATE INDEX codehost_imports_status ON codehost_imports (status);

-- Progress events in order, so a client can follow an import from any process and resume after a disconnect.
CREATE TABLE codehost_import_events (
  import_id TEXT NOT NULL REFERENCES codehost_imports (id),
  seq INTEGER NOT NULL,
  event TEXT NOT NULL,
  data TEXT NOT NULL,
  at BIGINT NOT NULL,
  PRIMARY KEY (import_id, seq)
)
