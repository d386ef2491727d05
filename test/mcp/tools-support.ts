/** Shared set-up of the MCP tools suites: the service on a real port with the fake model, and real MCP servers. */
import createClient from 'openapi-fetch'
import { startOAuthMcpServer, startOpenMcpServer, type FakeMcpServer, type FakeOAuthMcpServer } from '../fakes/mcp-servers.ts'
import { chatHarness, type ChatHarness } from '../chat/helpers.ts'
import { announceSkip, freshPostgres, postgresUrl, UNLIMITED_BUDGETS, userWithRole } from '../helpers.ts'

export interface McpHarness extends ChatHarness {
  open: FakeMcpServer
  oauth: FakeOAuthMcpServer
  /** openapi-fetch against the listening service, with the owner's token. */
  api: ReturnType<typeof createClient<any>>
  /** openapi-fetch with another token (or none). */
  apiAs(token?: string): ReturnType<typeof createClient<any>>
  member(): Promise<{ token: string; userId: string }>
}

/** Runs `body` once per backend: SQLite always, PostgreSQL when DATABASE_URL is set. */
export function forEachMcpBackend(body: (backend: { name: string; start(env?: Record<string, string>): Promise<McpHarness> }) => void) {
  const start =
    (postgres: boolean) =>
    async (env: Record<string, string> = {}) => {
      const pg = postgres ? await freshPostgres() : undefined
      const open = startOpenMcpServer()
      const oauth = startOAuthMcpServer()
      const harness = await chatHarness(
        {
          ...UNLIMITED_BUDGETS,
          MCP_TOOLS_ALLOW_HOSTS: '127.0.0.1',
          // Short, so the hanging server's test ends soon; long enough for a 10 MB answer on a loaded machine.
          MCP_TOOLS_CALL_TIMEOUT_SECONDS: '10',
          CHAT_SEARCH_AUGMENTATION: 'false',
          ...(pg ? { DATABASE_URL: pg.url } : {}),
          ...env,
        },
        { search: false },
      )
      const apiAs = (token?: string) => createClient<any>({ baseUrl: harness.url, headers: token ? { authorization: `Bearer ${token}` } : {} })
      return {
        ...harness,
        open,
        oauth,
        api: apiAs(harness.token),
        apiAs,
        async member() {
          const owner = await harness.t.deps.accounts.userByEmail('owner@example.com')
          const { user, token } = await userWithRole(harness.t, 'member', { orgId: owner!.orgId })
          return { token, userId: user.id }
        },
        async close() {
          await harness.close()
          open.close()
          oauth.close()
          await pg?.drop()
        },
      }
    }
  body({ name: 'sqlite', start: start(false) })
  if (postgresUrl) body({ name: 'postgres', start: start(true) })
  else announceSkip('PostgreSQL variants of the MCP tools suites', 'DATABASE_URL')
}
