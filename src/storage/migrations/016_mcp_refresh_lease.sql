-- A user's MCP connection is refreshed by one process at a time, as integration_connections are: `version` changes
-- on every token change, and the refresh lease is claimed by compare-and-set on it, so a refresh token the
-- authorization server rotates is spent once. Rows of before start at version 1 with no lease.
ALTER TABLE mcp_connections ADD COLUMN version BIGINT NOT NULL DEFAULT 1;
ALTER TABLE mcp_connections ADD COLUMN refresh_lease_until BIGINT;
