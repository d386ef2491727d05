// The .sql imports' type, named here so the app's type also checks in projects that import it (Eden clients).
/// <reference path="../sql.d.ts" />
import type { Migration } from '../migrate.ts'
import accounts from './001_accounts.sql' with { type: 'text' }
import usage from './002_usage.sql' with { type: 'text' }
import chat from './003_chat.sql' with { type: 'text' }
import billing from './004_billing.sql' with { type: 'text' }
import integrations from './005_integrations.sql' with { type: 'text' }
import imports from './006_imports.sql' with { type: 'text' }
import codeIndex from './007_code_index.sql' with { type: 'text' }
import identity from './008_identity.sql' with { type: 'text' }
import setup from './009_setup.sql' with { type: 'text' }
import endedSessions from './010_ended_sessions.sql' with { type: 'text' }
import apiKeys from './011_api_keys.sql' with { type: 'text' }
import mcpServers from './012_mcp_servers.sql' with { type: 'text' }
import chatManagement from './013_chat_management.sql' with { type: 'text' }
import files from './014_files.sql' with { type: 'text' }
import orgModel from './015_org_model.sql' with { type: 'text' }
import mcpRefreshLease from './016_mcp_refresh_lease.sql' with { type: 'text' }

// Imported as text so `bun build --compile` embeds them in the executable.
export const migrations: readonly Migration[] = [
  { version: 1, name: 'accounts', sql: accounts },
  { version: 2, name: 'usage', sql: usage },
  { version: 3, name: 'chat', sql: chat },
  { version: 4, name: 'billing', sql: billing },
  { version: 5, name: 'integrations', sql: integrations },
  { version: 6, name: 'imports', sql: imports },
  { version: 7, name: 'code_index', sql: codeIndex },
  { version: 8, name: 'identity', sql: identity },
  { version: 9, name: 'setup', sql: setup },
  { version: 10, name: 'ended_sessions', sql: endedSessions },
  { version: 11, name: 'api_keys', sql: apiKeys },
  { version: 12, name: 'mcp_servers', sql: mcpServers },
  { version: 13, name: 'chat_management', sql: chatManagement },
  { version: 14, name: 'files', sql: files },
  { version: 15, name: 'org_model', sql: orgModel },
  { version: 16, name: 'mcp_refresh_lease', sql: mcpRefreshLease },
]
