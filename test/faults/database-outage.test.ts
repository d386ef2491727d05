/**
 * PostgreSQL goes away under a running service and comes back: while it is gone every route that needs it
 * answers `503 unavailable` with a Retry-After, promptly, and /ready says not ready; once it is back the same
 * process serves again, without a restart. The server is the test's own (killed with SIGKILL and started
 * again); the classification is checked against the errors Bun's SQL client really throws.
 */
import { SQL } from 'bun'
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { isDatabaseUnavailable } from '../../src/storage/outage.ts'
import { startFakeOpenAi, type FakeOpenAi } from '../fakes/openai.ts'
import { tempDir } from '../helpers.ts'
import { clusterAdmin, json, signIn, startServiceProcess, type ServiceProcess } from '../scale-out/cluster.ts'
import { privatePostgresMissing, startPrivatePostgres, type PrivatePostgres } from './private-postgres.ts'

if (privatePostgresMissing) console.warn(`[skip] database outage suite: ${privatePostgresMissing}`)

/** What a request answered, or that it did not answer within the bound. */
interface Outcome {
  route: string
  status: number | 'no answer'
  code?: string
  retryAfter?: string | null
  contentType?: string | null
}

const thrown = async (work: () => Promise<unknown>) => {
  try {
    await work()
  } catch (err) {
    return err
  }
  throw new Error('expected the query to fail')
}

describe.skipIf(Boolean(privatePostgresMissing))('a PostgreSQL outage', () => {
  let pg: PrivatePostgres
  let model: FakeOpenAi
  let service: ServiceProcess
  let token: string
  let refreshToken: string
  let chatId: string
  const dataDir = tempDir('svc-outage-')

  beforeAll(async () => {
    pg = await startPrivatePostgres()
    model = startFakeOpenAi()
    service = await startServiceProcess('outage', {
      DATABASE_URL: pg.url,
      DATA_DIR: dataDir.path,
      JWT_SECRET: `outage-jwt-secret-${crypto.randomUUID()}`,
      TOKEN_ENCRYPTION_KEY: Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString('base64'),
      ADMIN_EMAIL: clusterAdmin.email,
      ADMIN_PASSWORD: clusterAdmin.password,
      OPENAI_BASE_URL: model.baseUrl,
      CHAT_MODEL: 'fake-model',
      CHAT_SEARCH_AUGMENTATION: 'false',
    })
    ;({ accessToken: token, refreshToken } = await signIn(service))
    chatId = crypto.randomUUID()
    const chat = await service.request('/api/chat', json({ id: chatId, messages: [{ role: 'user', content: 'hello' }] }, token))
    expect(chat.status).toBe(200)
    await chat.text()
  }, 120_000)

  afterAll(async () => {
    await service?.kill()
    await model?.close()
    await pg?.remove()
    dataDir.remove()
  })

  const auth = () => ({ authorization: `Bearer ${token}` })
  /** Routes whose work needs the database, each as a fresh request. */
  const routes: [string, () => Promise<Response>][] = [
    ['POST /auth/login', () => service.request('/auth/login', json(clusterAdmin))],
    [
      'POST /auth/refresh',
      async () => {
        // A refresh token works once: a reused one would end the session.
        const res = await service.request('/auth/refresh', json({ refreshToken }))
        if (res.status === 200) ({ accessToken: token, refreshToken } = (await res.clone().json()) as { accessToken: string; refreshToken: string })
        return res
      },
    ],
    ['GET /api/chats', () => service.request('/api/chats', { headers: auth() })],
    ['GET /api/chat/:id', () => service.request(`/api/chat/${chatId}`, { headers: auth() })],
    ['POST /api/chat', () => service.request('/api/chat', json({ id: crypto.randomUUID(), messages: [{ role: 'user', content: 'hi' }] }, token))],
  ]

  // Bounded: an answer that takes longer than this is as bad as none.
  const ask = async (route: string, send: () => Promise<Response>): Promise<Outcome> => {
    const res = await Promise.race([send(), Bun.sleep(8000).then(() => undefined)])
    if (!res) return { route, status: 'no answer' }
    const text = await res.text()
    const code = res.headers.get('content-type')?.includes('json') ? (JSON.parse(text) as { code?: string }).code : undefined
    return { route, status: res.status, code, retryAfter: res.headers.get('retry-after'), contentType: res.headers.get('content-type') }
  }

  test('every route that needs the database answers 503 unavailable with a Retry-After, then serves again once it is back', async () => {
    for (const [route, send] of routes) expect({ route, status: (await ask(route, send)).status }).toMatchObject({ route, status: 200 })
    expect((await service.request('/ready')).status).toBe(200)

    await pg.kill()
    const during: Outcome[] = []
    // A few rounds: the first finds connections the server closed, the next ones find none to open.
    for (let round = 0; round < 3; round++) for (const [route, send] of routes) during.push(await ask(route, send))
    const ready = await ask('GET /ready', () => service.request('/ready'))
    const health = await ask('GET /health', () => service.request('/health'))
    console.log(
      `during the outage: ${during.length} requests, ${during.filter((o) => o.status === 503 && o.code === 'unavailable').length} answered 503 unavailable, ` +
        `${during.filter((o) => o.status !== 503).length} otherwise`,
    )
    expect(during.filter((o) => o.status !== 503 || o.code !== 'unavailable')).toEqual([])
    for (const outcome of during) {
      expect(outcome.contentType).toStartWith('application/problem+json')
      expect(Number(outcome.retryAfter)).toBeGreaterThanOrEqual(1)
      expect(Number(outcome.retryAfter)).toBeLessThanOrEqual(30)
    }
    expect(ready.status).toBe(503)
    expect(health.status).toBe(200)
    expect(service.logs.some((line) => line.msg === 'unhandled error')).toBe(false)

    await pg.start()
    // The first queries may still meet "the database system is starting up" (503 too); then the pool reconnects.
    const after: Outcome[] = []
    for (let attempt = 0; attempt < 40; attempt++) {
      const probe = await ask('GET /api/chats', routes[2]![1])
      after.push(probe)
      if (probe.status === 200) break
      expect(probe.status).toBe(503)
      await Bun.sleep(250)
    }
    expect(after.at(-1)!.status).toBe(200)
    const recovered: Outcome[] = []
    for (const [route, send] of routes) recovered.push(await ask(route, send))
    console.log(
      `after the restart: ${after.length} probes until the first 200, then ${recovered.filter((o) => o.status === 200).length} of ${recovered.length} routes answered 200`,
    )
    expect(recovered.map((o) => ({ route: o.route, status: o.status }))).toEqual(routes.map(([route]) => ({ route, status: 200 })))
    expect((await service.request('/ready')).status).toBe(200)
    // The same process throughout.
    expect(await Promise.race([service.exited, Bun.sleep(0).then(() => 'running')])).toBe('running')
  }, 90_000)

  test("what counts as an outage: the client's connection errors do, a query's own errors do not", async () => {
    await pg.start()
    const sql = new SQL(pg.url, { max: 1 })
    try {
      await sql`CREATE TABLE IF NOT EXISTS outage_probe (id int PRIMARY KEY)`
      await sql`INSERT INTO outage_probe VALUES (1) ON CONFLICT DO NOTHING`
      const queryErrors = [
        await thrown(() => sql`SELECT * FROM no_such_table`),
        await thrown(() => sql`INSERT INTO outage_probe VALUES (1)`),
        await thrown(() => sql`SELECT 1 / 0`),
      ]
      expect(queryErrors.map((e) => (e as { errno?: string }).errno)).toEqual(['42P01', '23505', '22012'])
      expect(queryErrors.map(isDatabaseUnavailable)).toEqual([false, false, false])

      // An administrator ending the session: 57P01.
      const other = new SQL(pg.url, { max: 1 })
      const pid = (await other`SELECT pg_backend_pid() AS pid`)[0].pid
      const terminated = thrown(() => other`SELECT pg_sleep(5)`)
      await Bun.sleep(200)
      await sql`SELECT pg_terminate_backend(${pid})`
      const adminShutdown = await terminated
      await other.close()

      const inFlight = thrown(() => sql`SELECT pg_sleep(5)`)
      await Bun.sleep(200)
      await pg.kill()
      const closed = await inFlight
      const refused = await thrown(() => sql`SELECT 1`)
      // A server that takes the connection and never answers, as behind a dropped route.
      const silent = Bun.listen({ hostname: '127.0.0.1', port: 0, socket: { data() {} } })
      const unanswered = new SQL(`postgres://postgres@127.0.0.1:${silent.port}/postgres`, { max: 1, connectionTimeout: 1 })
      const timedOut = await thrown(() => unanswered`SELECT 1`)
      silent.stop(true)
      const outages = [adminShutdown, closed, refused, timedOut]
      expect(outages.map((e) => (e as { errno?: string; code?: string }).errno ?? (e as { code?: string }).code)).toEqual([
        '57P01',
        'ERR_POSTGRES_CONNECTION_CLOSED',
        'ERR_POSTGRES_CONNECTION_REFUSED',
        'ERR_POSTGRES_CONNECTION_TIMEOUT',
      ])
      expect(outages.map(isDatabaseUnavailable)).toEqual([true, true, true, true])
      // Wrapped by a caller, it is still recognised.
      expect(isDatabaseUnavailable(new Error('loading the account failed', { cause: refused }))).toBe(true)
    } finally {
      await sql.close().catch(() => {})
      await pg.start()
    }
  }, 120_000)

  test('a SQLite database held by another writer past busy_timeout counts as unavailable; a missing table does not', async () => {
    const dir = tempDir('svc-busy-')
    const file = `${dir.path}/busy.db`
    const writer = new SQL({ adapter: 'sqlite', filename: file })
    const other = new SQL({ adapter: 'sqlite', filename: file })
    try {
      await writer`PRAGMA journal_mode = WAL`
      await writer`CREATE TABLE held (x int)`
      await other`PRAGMA busy_timeout = 10`
      let release!: () => void
      const released = new Promise<void>((resolve) => (release = resolve))
      const holding = writer.begin(async (tx) => {
        await tx`INSERT INTO held VALUES (1)`
        await released
      })
      await Bun.sleep(50)
      const busy = await thrown(() => other`INSERT INTO held VALUES (2)`)
      release()
      await holding
      const missing = await thrown(() => other`SELECT * FROM nothing_here`)
      expect([(busy as { code?: string }).code, (missing as { code?: string }).code]).toEqual(['SQLITE_BUSY', 'SQLITE_ERROR'])
      expect([busy, missing].map(isDatabaseUnavailable)).toEqual([true, false])
    } finally {
      await writer.close()
      await other.close()
      dir.remove()
    }
  })
})
