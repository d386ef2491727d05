/**
 * A connection's refresh token spent by two processes (two services on one database) against a provider that
 * rotates refresh tokens and refuses a reused one with invalid_grant, and one that fails without refusing. Who
 * reaches the provider first is decided by holding its token endpoint, and a lease running out by moving the lease
 * clock both processes share: ordering, never timing.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, test } from 'bun:test'
import { REFRESH_LEASE_MS } from '../../src/refresh-lease.ts'
import { openDatabase, type Database } from '../../src/storage/database.ts'
import { migrate } from '../../src/storage/migrate.ts'
import { migrations } from '../../src/storage/migrations/index.ts'
import { freshPostgres, tempDir } from '../helpers.ts'
import { BACKENDS, connectThrough, serviceOn, startProvider } from './support.ts'
import { steerableLeaseClock } from '../lease-clock.ts'

const fake = startProvider()
afterAll(() => fake.close())

/** The lease clock both processes share. */
const clock = steerableLeaseClock()

/** Holds the first refresh grant at the provider (before its token is looked up, or after it rotated) until released. */
function holdFirstRefresh(at: 'request' | 'answer') {
  const arrived = Promise.withResolvers<void>()
  const release = Promise.withResolvers<void>()
  let first = true
  fake[at === 'request' ? 'beforeRefresh' : 'beforeRefreshAnswer'] = async () => {
    if (!first) return
    first = false
    arrived.resolve()
    await release.promise
  }
  return { arrived: arrived.promise, release: () => release.resolve() }
}

const randomKey = () => Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString('base64')

describe.each(BACKENDS)('an integration refreshed by two processes on %s', (backend) => {
  const key = randomKey()
  const dir = tempDir('integration-refresh-')
  let pg: Awaited<ReturnType<typeof freshPostgres>>
  let dbA: Database
  let dbB: Database
  let processA: Awaited<ReturnType<typeof serviceOn>>
  let processB: Awaited<ReturnType<typeof serviceOn>>
  let userId: string
  beforeAll(async () => {
    pg = backend === 'postgres' ? await freshPostgres() : undefined
    dbA = await openDatabase({ databaseUrl: pg?.url, dataDir: dir.path })
    await migrate(dbA, migrations)
    dbB = await openDatabase({ databaseUrl: pg?.url, dataDir: dir.path })
    processA = await serviceOn(dbA, fake, { key, leaseClock: clock })
    processB = await serviceOn(dbB, fake, { key, leaseClock: clock })
  })
  afterAll(async () => {
    await dbA.close()
    await dbB.close()
    await pg?.drop()
    dir.remove()
  })
  beforeEach(async () => {
    fake.beforeRefresh = undefined
    fake.beforeRefreshAnswer = undefined
    fake.failRefresh({ status: 200 }, 0)
    clock.reset()
    userId = crypto.randomUUID()
    // Connected with a token that is due (30 s left): the next use refreshes it.
    fake.accessTokenTtlSeconds = 30
    await connectThrough(processA, fake, userId)
    fake.accessTokenTtlSeconds = 3600
  })

  const stored = async () => (await dbA.sql`SELECT * FROM integration_connections WHERE user_id = ${userId} AND provider = 'github'`)[0]

  test('a holder whose lease ran out keeps the tokens the provider granted on its call; the process that took over breaks nothing', async () => {
    const refreshes = fake.grants.refresh_token
    const held = holdFirstRefresh('answer')
    const slow = processA.tokenFor(userId, 'github')
    // The provider rotated the refresh token on A's call; its answer is on the way while A's lease runs out.
    await held.arrived
    clock.advance(REFRESH_LEASE_MS + 1)
    // B takes the lease over and is refused the token A spent: B's call fails as retryable, and nothing is broken.
    await expect(processB.tokenFor(userId, 'github')).rejects.toMatchObject({ code: 'unavailable' })
    expect((await stored()).broken_reason).toBeNull()
    held.release()
    const token = await slow
    expect(token).toBe(fake.issuedAccessTokens.at(-1)!)
    expect(fake.grants.refresh_token).toBe(refreshes + 2)
    expect(await processB.status(userId, 'github')).toMatchObject({ connected: true })
    // The refresh token A was granted is stored and works: the next refresh succeeds.
    expect(await processB.tokenFor(userId, 'github')).toBe(token!)
    await dbA.sql`UPDATE integration_connections SET expires_at = ${Date.now() + 30_000} WHERE user_id = ${userId}`
    const next = await processB.tokenFor(userId, 'github')
    expect(fake.grants.refresh_token).toBe(refreshes + 3)
    expect(next).toBe(fake.issuedAccessTokens.at(-1)!)
  })

  test('a refresh_failed judged on the token a slow holder spent is undone when its granted tokens land', async () => {
    const held = holdFirstRefresh('answer')
    const slow = processA.tokenFor(userId, 'github')
    await held.arrived
    clock.advance(REFRESH_LEASE_MS + 1)
    await expect(processB.tokenFor(userId, 'github')).rejects.toMatchObject({ code: 'unavailable' })
    // With no lease left to take over, the next refusal of the spent token breaks the connection.
    expect(await processB.tokenFor(userId, 'github')).toBeUndefined()
    expect((await stored()).broken_reason).toBe('refresh_failed')
    held.release()
    const token = await slow
    expect(token).toBe(fake.issuedAccessTokens.at(-1)!)
    expect(await stored()).toMatchObject({ broken_reason: null, broken_at: null })
    expect(await processB.tokenFor(userId, 'github')).toBe(token!)
  })

  test('a refusal that lands after the process that took over stored new tokens keeps them', async () => {
    const refreshes = fake.grants.refresh_token
    const held = holdFirstRefresh('request')
    const slow = processA.tokenFor(userId, 'github')
    await held.arrived
    // A's lease runs out while its request hangs: B takes over, and the provider honours B's refresh.
    clock.advance(REFRESH_LEASE_MS + 1)
    const token = await processB.tokenFor(userId, 'github')
    expect(token).toBe(fake.issuedAccessTokens.at(-1)!)
    const kept = (await stored()).refresh_token
    // A's request now reaches the provider with the refresh token B already spent: invalid_grant.
    held.release()
    expect(await slow).toBe(token!)
    expect(fake.grants.refresh_token).toBe(refreshes + 2)
    expect(await stored()).toMatchObject({ broken_reason: null, refresh_token: kept })
  })

  test('a refresh token the provider refuses still breaks the connection with refresh_failed', async () => {
    fake.revokeAll()
    expect(await processB.tokenFor(userId, 'github')).toBeUndefined()
    expect(await processA.status(userId, 'github')).toMatchObject({ connected: false, reason: 'refresh_failed' })
  })

  for (const failure of [
    { status: 500 },
    { status: 503, error: 'temporarily_unavailable' },
    { status: 200, error: 'server_error' },
    { status: 200, error: 'temporarily_unavailable' },
    { status: 400, error: 'invalid_request' },
  ])
    test(`a provider answering ${failure.status} ${failure.error ?? 'without an OAuth error'} keeps the connection and fails the call as retryable`, async () => {
      const kept = (await stored()).refresh_token
      fake.failRefresh(failure)
      const code = failure.error === 'temporarily_unavailable' ? 'unavailable' : 'upstream_error'
      await expect(processA.tokenFor(userId, 'github')).rejects.toMatchObject({ code })
      expect(await stored()).toMatchObject({ broken_reason: null, refresh_token: kept, refresh_lease_until: null })
      // Once the provider answers again, the same refresh token is spent and works.
      const token = await processB.tokenFor(userId, 'github')
      expect(token).toBe(fake.issuedAccessTokens.at(-1)!)
      expect(await processA.status(userId, 'github')).toMatchObject({ connected: true })
    })
})
