/**
 * A refresh and a logout of the same session sent at once: the logout always wins. Every call either makes to
 * the account store (and to the revoked-sessions list) is a scheduled step, and fast-check runs them in every
 * order it picks; afterwards nothing the refresh handed out works: not its refresh token, not its access token,
 * and not the access token of the session before it. Then the same race against a real process, over HTTP.
 */
import { afterAll, describe, expect, test } from 'bun:test'
import fc from 'fast-check'
import { AccountStore } from '../../src/auth/account-store.ts'
import { createAccessService } from '../../src/auth/access-service.ts'
import { createAccessTokens } from '../../src/auth/access-tokens.ts'
import { revokedSessionsInProcess } from '../../src/auth/revoked-sessions.ts'
import { memoryLogger } from '../../src/log.ts'
import { openDatabase } from '../../src/storage/database.ts'
import { migrate } from '../../src/storage/migrate.ts'
import { migrations } from '../../src/storage/migrations/index.ts'
import { startServiceProcess } from '../scale-out/cluster.ts'
import { tempDir } from '../helpers.ts'

/** `target` with each method's call made a step that the scheduler of the current run decides the order of. */
function scheduled<T extends object>(target: T, current: () => fc.Scheduler, label: string): T {
  return new Proxy(target, {
    get(object, key, receiver) {
      const value = Reflect.get(object, key, receiver)
      if (typeof value !== 'function') return value
      return (...args: unknown[]) =>
        current()
          .schedule(Promise.resolve(), `${label}.${String(key)}`)
          .then(() => value.apply(object, args))
    },
  })
}

describe('refresh racing logout', () => {
  test('under any interleaving of their steps, nothing issued from the session works once the logout is done', async () => {
    const db = await openDatabase({ sqliteFile: ':memory:' })
    await migrate(db, migrations)
    const logger = memoryLogger('error')
    const tokens = createAccessTokens({ secret: 'r'.repeat(40), issuer: 'iss', audience: 'aud', ttlSeconds: 60 })
    const base = { tokens, logger, issuer: 'iss', refreshTtlSeconds: 3600, defaultPlan: 'free', login: { maxFailures: 1000, lockSeconds: 60 } }
    // A cheap password hash (bcrypt at its lowest cost), so each of the runs can sign in afresh in a millisecond.
    const accounts = new AccountStore(db)
    const org = await accounts.createOrganization('race', 'free')
    await accounts.createUser({
      orgId: org.id,
      email: 'race@example.com',
      role: 'member',
      passwordHash: await Bun.password.hash('race-password-12', { algorithm: 'bcrypt', cost: 4 }),
    })
    let interleavings = 0
    let refreshWon = 0
    let currentScheduler: fc.Scheduler | undefined
    const revoked = revokedSessionsInProcess({ logger })
    // Made once: a service hashes a decoy password when it is made.
    const raced = createAccessService({
      ...base,
      accounts: scheduled(accounts, () => currentScheduler!, 'db'),
      revoked: scheduled(revoked, () => currentScheduler!, 'revoked'),
    })
    const checker = createAccessService({ ...base, accounts, revoked })

    await fc.assert(
      fc.asyncProperty(fc.scheduler(), async (scheduler) => {
        interleavings++
        currentScheduler = scheduler
        const session = await checker.login('race@example.com', 'race-password-12', '127.0.0.1')
        const refreshing = raced.refresh(session.refreshToken).then(
          (pair) => ({ pair }),
          (error: unknown) => ({ error }),
        )
        const loggingOut = raced.logout(session.refreshToken)
        await scheduler.waitFor(Promise.all([refreshing, loggingOut]))
        const refreshed = await refreshing
        // Whatever came out of the race, the session is over.
        await expect(checker.authenticate(session.accessToken)).rejects.toMatchObject({ code: 'invalid_token' })
        if ('pair' in refreshed) {
          refreshWon++
          await expect(checker.authenticate(refreshed.pair.accessToken)).rejects.toMatchObject({ code: 'invalid_token' })
          await expect(checker.refresh(refreshed.pair.refreshToken)).rejects.toMatchObject({ code: 'invalid_token' })
        }
        await expect(checker.refresh(session.refreshToken)).rejects.toMatchObject({ code: 'invalid_token' })
      }),
      { numRuns: 300 },
    )
    // Both ways the race can go were tried.
    expect(interleavings).toBe(300)
    expect(refreshWon).toBeGreaterThan(0)
    expect(refreshWon).toBeLessThan(interleavings)
    await db.close()
  })
})

describe('refresh racing logout against a real process', () => {
  const dataDir = tempDir('refresh-race-')
  const owner = { email: 'owner@race.example', password: 'race-owner-password-1' }
  let service: Awaited<ReturnType<typeof startServiceProcess>> | undefined
  afterAll(async () => {
    await service?.stop()
    dataDir.remove()
  })

  test('30 races of POST /auth/refresh and POST /auth/logout: no token the refresh answered works afterwards', async () => {
    service = await startServiceProcess('refresh-race', {
      DATA_DIR: dataDir.path,
      ADMIN_EMAIL: owner.email,
      ADMIN_PASSWORD: owner.password,
      RATE_LIMIT_BURST: '100000',
    })
    const post = (path: string, body: unknown) =>
      service!.request(path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })
    const me = (token: string) => service!.request('/auth/me', { headers: { authorization: `Bearer ${token}` } })
    let refreshWon = 0
    for (let round = 0; round < 30; round++) {
      const session = await (await post('/auth/login', owner)).json()
      const [refreshed, loggedOut] = await Promise.all([
        post('/auth/refresh', { refreshToken: session.refreshToken }),
        post('/auth/logout', { refreshToken: session.refreshToken }),
      ])
      expect(loggedOut.status).toBe(204)
      expect([200, 401]).toContain(refreshed.status)
      expect((await me(session.accessToken)).status).toBe(401)
      if (refreshed.status !== 200) continue
      refreshWon++
      const pair = await refreshed.json()
      expect((await me(pair.accessToken)).status).toBe(401)
      expect((await post('/auth/refresh', { refreshToken: pair.refreshToken })).status).toBe(401)
    }
    console.log(`refresh answered 200 in ${refreshWon} of 30 races; none of its tokens worked afterwards`)
  })
})
