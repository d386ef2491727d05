-- Remote MCP servers an organisation adds: their tools are offered to chat and to develop tasks. `tools` is the
-- last tools/list answer (JSON), `allowed_tools` the allow list (JSON array; NULL offers every tool). An OAuth
-- server keeps its discovered authorization server (`oauth_issuer`, JSON) and the client the service registered
-- there (`oauth_client`, a secret-box ciphertext bound to the row).
CREATE TABLE mcp_servers (
  id TEXT PRIMARY KEY,
  org_id TEXT NOT NULL,
  name TEXT NOT NULL,
  url TEXT NOT NULL,
  auth TEXT NOT NULL,
  allowed_tools TEXT,
  offered_by_default INTEGER NOT NULL,
  tools TEXT NOT NULL,
  tools_listed_at BIGINT,
  oauth_issuer TEXT,
  oauth_client TEXT,
  created_by TEXT NOT NULL,
  created_at BIGINT NOT NULL,
  updated_at BIGINT NOT NULL
);

CREATE UNIQUE INDEX mcp_servers_org_name ON mcp_servers (org_id, name);

-- Each user's OAuth grant for an MCP server that asks for one. Token columns hold secret-box ciphertexts bound
-- to (server, user), so a token copied into another user's row does not open there.
CREATE TABLE mcp_connections (
  server_id TEXT NOT NULL,
  user_id TEXT NOT NULL,
  access_token TEXT NOT NULL,
  refresh_token TEXT,
  scopes TEXT NOT NULL,
  expires_at BIGINT,
  connected_at BIGINT NOT NULL,
  updated_at BIGINT NOT NULL,
  PRIMARY KEY (server_id, user_id)
);

-- Connection flows in progress, as oauth_states: the state stored as its SHA-256, the PKCE verifier sealed, the
-- browser binding hashed. A row is deleted by the callback that uses it.
CREATE TABLE mcp_oauth_states (
  state_hash TEXT PRIMARY KEY,
  server_id TEXT NOT NULL,
  user_id TEXT NOT NULL,
  code_verifier TEXT NOT NULL,
  binding_hash TEXT NOT NULL,
  return_to TEXT NOT NULL,
  expires_at BIGINT NOT NULL,
  created_at BIGINT NOT NULL
);

CREATE INDEX mcp_oauth_states_expires ON mcp_oauth_states (expires_at)
