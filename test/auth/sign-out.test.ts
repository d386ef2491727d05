/** Signing out ends the session's access tokens at once, in this process and in the others sharing Redis or PostgreSQL. */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { revokedSessionsInDatabase } from '../../src/auth/revoked-sessions.ts'
import { memoryLogger } from '../../src/log.ts'
import { openDatabase } from '../../src/storage/database.ts'
import { migrate } from '../../src/storage/migrate.ts'
import { migrations } from '../../src/storage/migrations/index.ts'
import { ADMIN, announceSkip, bearer, freshPostgres, login, makeApp, postgresUrl, redisUrl, tempDir, type TestApp } from '../helpers.ts'

const JWT_SECRET = 'sign-out-test-secret-'.padEnd(48, 'x')
const env = (extra: Record<string, string> = {}) => ({ ADMIN_EMAIL: ADMIN.email, ADMIN_PASSWORD: ADMIN.password, JWT_SECRET, ...extra })

const me = (t: TestApp, token: string) => t.request('/auth/me', { headers: bearer(token) })

async function expectRevoked(res: Response) {
  expect(res.status).toBe(401)
  expect(res.headers.get('www-authenticate')).toContain('Bearer realm="api", error="invalid_token"')
  expect(await res.json()).toMatchObject({ code: 'invalid_token', detail: 'token revoked' })
}

/** Another process hears of a sign-out through a notification, so it is given a moment (far less than the reload interval). */
async function eventuallyRevoked(t: TestApp, token: string) {
  const deadline = Date.now() + 1000
  let res = await me(t, token)
  while (res.status === 200 && Date.now() < deadline) {
    await Bun.sleep(10)
    res = await me(t, token)
  }
  await expectRevoked(res)
}

describe('in one process', async () => {
  const t = await makeApp(env())
  afterAll(() => t.close())

  test('after logout the access token is refused at once, though it was verified and cached before', async () => {
    const pair = await login(t, ADMIN.email, ADMIN.password)
    const other = await login(t, ADMIN.email, ADMIN.password)
    expect((await me(t, pair.accessToken)).status).toBe(200)
    expect((await t.send('POST', '/auth/logout', { refreshToken: pair.refreshToken })).status).toBe(204)
    await expectRevoked(await me(t, pair.accessToken))
    // Another sign-in of the same user is another session.
    expect((await me(t, other.accessToken)).status).toBe(200)
  })

  test('a refresh token used twice revokes every access token of its family, and only of its family', async () => {
    const first = await login(t, ADMIN.email, ADMIN.password)
    const bystander = await login(t, ADMIN.email, ADMIN.password)
    const second = await (await t.send('POST', '/auth/refresh', { refreshToken: first.refreshToken })).json()
    for (const token of [first.accessToken, second.accessToken]) expect((await me(t, token)).status).toBe(200)

    const replay = await t.send('POST', '/auth/refresh', { refreshToken: first.refreshToken })
    expect(replay.status).toBe(401)
    await expectRevoked(await me(t, first.accessToken))
    await expectRevoked(await me(t, second.accessToken))
    expect((await me(t, bystander.accessToken)).status).toBe(200)
  })

  test('access tokens carry their session, the refresh family', async () => {
    const pair = await login(t, ADMIN.email, ADMIN.password)
    const refreshed = await (await t.send('POST', '/auth/refresh', { refreshToken: pair.refreshToken })).json()
    const sid = (token: string) => JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString()).sid
    expect(sid(pair.accessToken)).toEqual(expect.any(String))
    expect(sid(refreshed.accessToken)).toBe(sid(pair.accessToken))
  })
})

// Set up in beforeAll: a skipped describe's body still runs, and must not reach for a server that is not there.
describe.skipIf(!redisUrl)('two instances sharing Redis, each with its own database', () => {
  let a: TestApp
  let b: TestApp
  beforeAll(async () => {
    a = await makeApp(env({ REDIS_URL: redisUrl! }))
    b = await makeApp(env({ REDIS_URL: redisUrl! }))
  })
  afterAll(async () => {
    await a.close()
    await b.close()
  })

  test('logout on one instance makes the other refuse the access token, even from its cache', async () => {
    const pair = await login(a, ADMIN.email, ADMIN.password)
    const other = await login(a, ADMIN.email, ADMIN.password)
    expect((await me(b, pair.accessToken)).status).toBe(200)
    expect((await a.send('POST', '/auth/logout', { refreshToken: pair.refreshToken })).status).toBe(204)
    await eventuallyRevoked(b, pair.accessToken)
    expect((await me(b, other.accessToken)).status).toBe(200)
  })

  test('refresh-token reuse detected on one instance revokes the family on the other', async () => {
    const first = await login(a, ADMIN.email, ADMIN.password)
    const second = await (await a.send('POST', '/auth/refresh', { refreshToken: first.refreshToken })).json()
    expect((await me(b, second.accessToken)).status).toBe(200)
    expect((await a.send('POST', '/auth/refresh', { refreshToken: first.refreshToken })).status).toBe(401)
    await eventuallyRevoked(b, second.accessToken)
  })
})
if (!redisUrl) announceSkip('sign-out across instances sharing Redis', 'REDIS_URL')

describe.skipIf(!postgresUrl)('instances sharing PostgreSQL, without Redis', () => {
  let database: NonNullable<Awaited<ReturnType<typeof freshPostgres>>>
  let a: TestApp
  let b: TestApp
  const started: TestApp[] = []
  beforeAll(async () => {
    database = (await freshPostgres())!
    a = await makeApp(env({ DATABASE_URL: database.url }))
    b = await makeApp(env({ DATABASE_URL: database.url }))
  })
  afterAll(async () => {
    for (const t of [a, b, ...started]) await t.close()
    await database.drop()
  })

  test('logout on one instance makes the other refuse the access token, even from its cache', async () => {
    const pair = await login(a, ADMIN.email, ADMIN.password)
    const other = await login(b, ADMIN.email, ADMIN.password)
    expect((await me(b, pair.accessToken)).status).toBe(200)
    expect((await a.send('POST', '/auth/logout', { refreshToken: pair.refreshToken })).status).toBe(204)
    await eventuallyRevoked(b, pair.accessToken)
    expect((await me(b, other.accessToken)).status).toBe(200)
    expect((await me(a, other.accessToken)).status).toBe(200)
  })

  test('an instance started after the logout refuses the token from its first request', async () => {
    const pair = await login(a, ADMIN.email, ADMIN.password)
    expect((await a.send('POST', '/auth/logout', { refreshToken: pair.refreshToken })).status).toBe(204)
    const c = await makeApp(env({ DATABASE_URL: database.url }))
    started.push(c)
    await expectRevoked(await me(c, pair.accessToken))
  })
})
if (!postgresUrl) announceSkip('sign-out across instances sharing PostgreSQL', 'DATABASE_URL')

test('processes sharing a SQLite file, which has no notifications, learn of a sign-out at their next reload', async () => {
  const dir = tempDir()
  const open = async () => {
    const db = await openDatabase({ sqliteFile: `${dir.path}/shared.db` })
    await migrate(db, migrations)
    return db
  }
  const [dbA, dbB] = [await open(), await open()]
  const a = revokedSessionsInDatabase(dbA, { logger: memoryLogger() })
  const b = revokedSessionsInDatabase(dbB, { logger: memoryLogger(), reloadMs: 20 })
  try {
    await Promise.all([a.start(), b.start()])
    await a.revoke('session-1', Date.now() + 60_000)
    await a.revoke('session-expired', Date.now() - 1)
    expect(a.has('session-1')).toBe(true)
    const deadline = Date.now() + 2000
    while (!b.has('session-1') && Date.now() < deadline) await Bun.sleep(10)
    expect(b.has('session-1')).toBe(true)
    expect(b.has('session-expired')).toBe(false)
    expect(b.has('session-2')).toBe(false)
  } finally {
    await Promise.all([a.close(), b.close()])
    await Promise.all([dbA.close(), dbB.close()])
    dir.remove()
  }
})
