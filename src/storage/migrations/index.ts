import type { Migration } from '../migrate.ts'
import accounts from './001_accounts.sql' with { type: 'text' }
import usage from './002_usage.sql' with { type: 'text' }

// Imported as text so `bun build --compile` embeds them in the executable.
export const migrations: readonly Migration[] = [
  { version: 1, name: 'accounts', sql: accounts },
  { version: 2, name: 'usage', sql: usage },
]
