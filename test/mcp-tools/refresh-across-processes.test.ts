/**
 * An MCP server's OAuth refresh token spent once across processes: two service instances on one database, as two
 * processes behind a load balancer are, against an authorization server that rotates refresh tokens and answers a
 * reused one with invalid_grant. Who reaches the server first is decided by holding its token endpoint, and a
 * process waiting for another's lease is seen through the lease clock both share: ordering, never timing.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, test } from 'bun:test'
import { McpServerStore } from '../../plugins/mcp-tools/store.ts'
import { createMcpToolsService, type McpToolsService } from '../../plugins/mcp-tools/service.ts'
import { createHttpClient } from '../../src/http.ts'
import { memoryLogger } from '../../src/log.ts'
import { leaseLongerThan, REFRESH_LEASE_MS } from '../../src/refresh-lease.ts'
import { createSecretBox } from '../../src/secret-box.ts'
import { openDatabase, type Database } from '../../src/storage/database.ts'
import { migrate } from '../../src/storage/migrate.ts'
import { migrations } from '../../src/storage/migrations/index.ts'
import { startOAuthMcpServer } from '../fakes/mcp-servers.ts'
import { announceSkip, freshPostgres, postgresUrl, tempDir } from '../helpers.ts'
import { steerableLeaseClock } from '../lease-clock.ts'

const BACKENDS = postgresUrl ? (['sqlite', 'postgres'] as const) : (['sqlite'] as const)
if (!postgresUrl) announceSkip('PostgreSQL variant of the MCP refresh across processes suite', 'DATABASE_URL')

const fake = startOAuthMcpServer()
afterAll(() => fake.close())

/** The lease clock both processes share. */
const clock = steerableLeaseClock()

/**
 * Holds the first refresh_token grant at the server until released, before its token is looked up (or, with
 * `answer`, after the server rotated it, before it answers); later ones go through.
 */
function holdFirstRefresh(at: 'request' | 'answer' = 'request') {
  const arrived = Promise.withResolvers<void>()
  const another = Promise.withResolvers<void>()
  const release = Promise.withResolvers<void>()
  let first = true
  fake[at === 'request' ? 'beforeRefresh' : 'beforeRefreshAnswer'] = async () => {
    if (!first) return another.resolve()
    first = false
    arrived.resolve()
    await release.promise
  }
  return { arrived: arrived.promise, another: another.promise, release: () => release.resolve() }
}

const CALL_TIMEOUT_MS = 60_000

const refreshes = () => fake.tokenRequests.filter((r) => r.grant_type === 'refresh_token').length

async function serviceOn(db: Database, key: string): Promise<McpToolsService> {
  return createMcpToolsService({
    db,
    box: await createSecretBox({ key }),
    http: createHttpClient({ timeoutMs: 60_000 }),
    audit: { recordAudit: async () => undefined },
    logger: memoryLogger('warn'),
    settings: {
      allowHosts: ['127.0.0.1'],
      resultMaxBytes: 64 * 1024,
      responseMaxBytes: 16 * 1024 ** 2,
      callTimeoutMs: CALL_TIMEOUT_MS,
      returnUrl: 'http://localhost/mcp-servers',
    },
    publicBaseUrl: 'http://localhost',
    stateTtlMs: 600_000,
    leaseClock: clock,
  })
}

describe.each(BACKENDS)('an MCP connection refreshed by two processes on %s', (backend) => {
  const key = Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString('base64')
  const dir = tempDir('mcp-refresh-')
  let pg: Awaited<ReturnType<typeof freshPostgres>>
  let dbA: Database
  let dbB: Database
  let processA: McpToolsService
  let processB: McpToolsService
  beforeAll(async () => {
    pg = backend === 'postgres' ? await freshPostgres() : undefined
    dbA = await openDatabase({ databaseUrl: pg?.url, dataDir: dir.path })
    await migrate(dbA, migrations)
    dbB = await openDatabase({ databaseUrl: pg?.url, dataDir: dir.path })
    processA = await serviceOn(dbA, key)
    processB = await serviceOn(dbB, key)
  })
  afterAll(async () => {
    await dbA.close()
    await dbB.close()
    await pg?.drop()
    dir.remove()
  })
  beforeEach(() => {
    fake.beforeRefresh = undefined
    fake.beforeRefreshAnswer = undefined
    fake.refreshFailure = undefined
    fake.expiresIn = 3600
    fake.nextUser = 'alice'
    clock.reset()
  })

  /** A new organisation's server, connected through process A with a token that is due (30 s left). */
  async function connectedWithDueToken() {
    const caller = { userId: crypto.randomUUID(), orgId: crypto.randomUUID() }
    const name = `guarded${Math.random().toString(36).slice(2, 8)}`
    const server = await processA.add(caller, { name, url: fake.url })
    expect(server.auth).toBe('oauth_required')
    fake.expiresIn = 30
    await connect(processA, caller, server.id)
    fake.expiresIn = 3600
    const connection = async () => (await dbA.sql`SELECT * FROM mcp_connections WHERE server_id = ${server.id} AND user_id = ${caller.userId}`)[0]
    return { caller, name, id: server.id, connection }
  }

  async function connect(service: McpToolsService, caller: { userId: string; orgId: string }, id: string) {
    const begun = await service.beginAuth(caller, id)
    const answer = await fetch(begun.authorizationUrl, { redirect: 'manual' })
    const back = new URL(answer.headers.get('location')!)
    const outcome = await service.completeAuth(id, { state: back.searchParams.get('state')!, code: back.searchParams.get('code')! }, begun.binding)
    expect(outcome.connected).toBe(true)
  }

  /** Calls the server's whoami tool as the caller through `service`: the user the token belongs to, or why not. */
  async function whoami(service: McpToolsService, caller: { userId: string; orgId: string }, name: string): Promise<unknown> {
    const tools = await service.tools.forCaller(caller, { servers: [name] })
    const answer = await tools.call(`mcp__${name}__whoami`, {}, AbortSignal.timeout(60_000))
    return answer.isError ? 'refused' : answer.output.content
  }

  test('two processes calling a tool with a due token at the same moment: one refresh reaches the server, both calls work, the connection stays', async () => {
    const { caller, name, connection } = await connectedWithDueToken()
    const before = refreshes()
    const held = holdFirstRefresh()
    const calls = [whoami(processA, caller, name), whoami(processB, caller, name)]
    await held.arrived
    // The other process is waiting for the lease (or, without one, has sent a second refresh or answered).
    await Promise.race([clock.waited(), held.another, Promise.any(calls)])
    held.release()
    expect(await Promise.all(calls)).toEqual(['alice', 'alice'])
    expect(refreshes()).toBe(before + 1)
    expect(await connection()).toBeDefined()
    expect(await whoami(processB, caller, name)).toBe('alice')
    expect(refreshes()).toBe(before + 1)
  })

  test('a refusal that lands after another process replaced the refresh token keeps the connection', async () => {
    const { caller, name, connection } = await connectedWithDueToken()
    const before = refreshes()
    const held = holdFirstRefresh()
    const slow = whoami(processA, caller, name)
    await held.arrived
    // A's lease runs out while its call hangs at the server: B takes it over, and the server honours B's refresh.
    clock.advance(leaseLongerThan(CALL_TIMEOUT_MS) + 1)
    expect(await whoami(processB, caller, name)).toBe('alice')
    const stored = (await connection()).refresh_token
    // A's request now reaches the server with the refresh token B already spent: invalid_grant.
    held.release()
    expect(await slow).toBe('alice')
    expect(refreshes()).toBe(before + 2)
    expect(fake.tokenRequests.at(-1)?.grant_type).toBe('refresh_token')
    expect((await connection())?.refresh_token).toBe(stored)
    expect(await whoami(processA, caller, name)).toBe('alice')
  })

  test('a holder whose lease ran out keeps the tokens the server honoured on its call; the process that took over fails that call as retryable', async () => {
    const { caller, name, id, connection } = await connectedWithDueToken()
    const before = refreshes()
    const held = holdFirstRefresh('answer')
    const slow = whoami(processA, caller, name)
    // The server has rotated the refresh token on A's call; its answer is on the way while A's lease runs out.
    await held.arrived
    clock.advance(leaseLongerThan(CALL_TIMEOUT_MS) + 1)
    // B takes the lease over and is refused the token A spent: B's call fails as retryable, and the connection stays.
    await expect(processB.update(caller, id, { refreshTools: true })).rejects.toMatchObject({ code: 'unavailable' })
    expect(await connection()).toBeDefined()
    held.release()
    expect(await slow).toBe('alice')
    expect(refreshes()).toBe(before + 2)
    expect(await connection()).toBeDefined()
    expect(await whoami(processB, caller, name)).toBe('alice')
    expect(refreshes()).toBe(before + 2)
  })

  test('a refusal that lands after the user connected again keeps the new connection', async () => {
    const { caller, name, id, connection } = await connectedWithDueToken()
    const held = holdFirstRefresh()
    const slow = whoami(processA, caller, name)
    await held.arrived
    // The user withdraws the old grant at the server and connects again through the other process.
    fake.revokeRefreshTokens()
    await connect(processB, caller, id)
    const reconnected = (await connection()).refresh_token
    held.release()
    expect(await slow).toBe('alice')
    expect((await connection())?.refresh_token).toBe(reconnected)
    expect(await whoami(processB, caller, name)).toBe('alice')
  })

  test('a refresh token the server revoked still disconnects the user', async () => {
    const { caller, name, id, connection } = await connectedWithDueToken()
    fake.revokeRefreshTokens()
    const before = refreshes()
    const tools = await processB.tools.forCaller(caller, { servers: [name] })
    expect(tools.definitions).toHaveLength(0)
    expect(refreshes()).toBe(before + 1)
    expect(await connection()).toBeUndefined()
    expect((await processA.get(caller, id)).connection).toMatchObject({ connected: false })
    expect(await whoami(processA, caller, name)).toBe('refused')
  })

  for (const failure of [
    { status: 500 },
    { status: 500, error: 'server_error' },
    { status: 400, error: 'server_error' },
    { status: 503, error: 'temporarily_unavailable' },
    { status: 400, error: 'invalid_request' },
  ])
    test(`an authorization server answering ${failure.status} ${failure.error ?? 'without an OAuth error'} keeps the connection and fails the call as retryable`, async () => {
      const { caller, id, name, connection } = await connectedWithDueToken()
      const kept = (await connection()).refresh_token
      fake.refreshFailure = failure
      const code = failure.error === 'temporarily_unavailable' ? 'unavailable' : 'upstream_error'
      await expect(processA.update(caller, id, { refreshTools: true })).rejects.toMatchObject({ code })
      expect(await connection()).toMatchObject({ refresh_token: kept, refresh_lease_until: null })
      // Once the server answers again, the same refresh token is spent and works.
      fake.refreshFailure = undefined
      expect(await whoami(processB, caller, name)).toBe('alice')
    })

  test('an answer cut short (a 200 whose JSON ends mid-way) keeps the connection and fails the call; the same refresh token works after', async () => {
    const { caller, id, name, connection } = await connectedWithDueToken()
    const kept = (await connection()).refresh_token
    fake.refreshFailure = { cutOff: true }
    await expect(processA.update(caller, id, { refreshTools: true })).rejects.toMatchObject({ code: expect.stringMatching(/^(upstream_error|unavailable)$/) })
    expect(await connection()).toMatchObject({ refresh_token: kept, refresh_lease_until: null })
    fake.refreshFailure = undefined
    expect(await whoami(processB, caller, name)).toBe('alice')
  })

  test('a token endpoint that refuses the connection keeps the connection and fails the call as retryable; the same refresh token works once it answers', async () => {
    const { caller, id, name, connection } = await connectedWithDueToken()
    const kept = (await connection()).refresh_token
    const [server] = await dbA.sql`SELECT oauth_issuer FROM mcp_servers WHERE id = ${id}`
    const issuer = JSON.parse(server.oauth_issuer)
    // A port that was just listened on and closed: connecting to it is refused.
    const closed = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: () => new Response() })
    const refusing = { ...issuer, metadata: { ...issuer.metadata, token_endpoint: `http://127.0.0.1:${closed.port}/token` } }
    await closed.stop(true)
    await dbA.sql`UPDATE mcp_servers SET oauth_issuer = ${JSON.stringify(refusing)} WHERE id = ${id}`
    const before = refreshes()
    await expect(processA.update(caller, id, { refreshTools: true })).rejects.toMatchObject({ code: expect.stringMatching(/^(upstream_error|unavailable)$/) })
    expect(refreshes()).toBe(before)
    expect(await connection()).toMatchObject({ refresh_token: kept, refresh_lease_until: null })
    await dbA.sql`UPDATE mcp_servers SET oauth_issuer = ${server.oauth_issuer} WHERE id = ${id}`
    expect(await whoami(processB, caller, name)).toBe('alice')
  })

  test('a refusal of the client (invalid_client) disconnects the user', async () => {
    const { caller, name, connection } = await connectedWithDueToken()
    fake.refreshFailure = { status: 401, error: 'invalid_client' }
    expect(await whoami(processA, caller, name)).toBe('refused')
    expect(await connection()).toBeUndefined()
  })

  test('the refresh lease is compare-and-set on the row version', async () => {
    const { caller, id } = await connectedWithDueToken()
    const storeA = new McpServerStore(dbA)
    const storeB = new McpServerStore(dbB)
    const row = (await storeA.connection(id, caller.userId))!
    const until = Date.now() + REFRESH_LEASE_MS
    const leased = await Promise.all([
      storeA.leaseRefresh(id, caller.userId, row.version, until, Date.now()),
      storeB.leaseRefresh(id, caller.userId, row.version, until, Date.now()),
    ])
    expect(leased.filter((v) => v !== undefined)).toEqual([row.version + 1])
    // A held lease is not claimed again, even for the version it left.
    expect(await storeB.leaseRefresh(id, caller.userId, row.version + 1, until, Date.now())).toBeUndefined()
  })
})

describe.each(BACKENDS)('migration 016 on %s', (backend) => {
  test('a connection stored before it starts at version 1 without a lease, and is leased once', async () => {
    const dir = tempDir('mcp-refresh-migration-')
    const pg = backend === 'postgres' ? await freshPostgres() : undefined
    const db = await openDatabase({ databaseUrl: pg?.url, dataDir: dir.path })
    try {
      await migrate(
        db,
        migrations.filter((m) => m.version < 16),
      )
      await db.sql`
        INSERT INTO mcp_connections (server_id, user_id, access_token, refresh_token, scopes, expires_at, connected_at, updated_at)
        VALUES ('mcps_before', 'user-before', 'sb1.access', 'sb1.refresh', 'tools', ${Date.now() + 30_000}, 1, 1)`
      expect(await migrate(db, migrations)).toEqual([16])
      const store = new McpServerStore(db)
      const row = (await store.connection('mcps_before', 'user-before'))!
      expect(row).toMatchObject({ accessToken: 'sb1.access', refreshToken: 'sb1.refresh', version: 1, refreshLeaseUntil: null })
      expect(await store.leaseRefresh('mcps_before', 'user-before', 1, Date.now() + REFRESH_LEASE_MS, Date.now())).toBe(2)
      expect(await store.leaseRefresh('mcps_before', 'user-before', 1, Date.now() + REFRESH_LEASE_MS, Date.now())).toBeUndefined()
    } finally {
      await db.close()
      await pg?.drop()
      dir.remove()
    }
  })
})
