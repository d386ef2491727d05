import { afterAll, beforeAll, beforeEach, describe, expect, test } from 'bun:test'
import { createSecretBox } from '../../src/secret-box.ts'
import { openDatabase, type Database } from '../../src/storage/database.ts'
import { migrate } from '../../src/storage/migrate.ts'
import { migrations } from '../../src/storage/migrations/index.ts'
import { ConnectionStore } from '../../plugins/integrations/connection-store.ts'
import { freshPostgres, tempDir } from '../helpers.ts'
import { BACKENDS, connectThrough, serviceOn, startProvider, type Backend } from './support.ts'

const fake = startProvider()
afterAll(() => fake.close())
beforeEach(() => {
  fake.accessTokenTtlSeconds = 3600
  fake.refreshDelayMs = 0
})

const randomKey = () => Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString('base64')

/** Two connections to one database: what two processes of the service would have. */
async function sharedDatabase(backend: Backend): Promise<{ a: Database; b: Database; close(): Promise<void> }> {
  const dir = tempDir()
  const pg = backend === 'postgres' ? await freshPostgres() : undefined
  const open = () => openDatabase({ databaseUrl: pg?.url, dataDir: dir.path })
  const a = await open()
  await migrate(a, migrations)
  const b = await open()
  return {
    a,
    b,
    async close() {
      await a.close()
      await b.close()
      await pg?.drop()
      dir.remove()
    },
  }
}

// By the fake's own record: a random access token can hold `_r_`, the refresh tokens' marker, so text cannot tell them apart.
const accessTokensSince = (count: number) => fake.issuedAccessTokens.slice(count)

async function works(token: string | undefined): Promise<boolean> {
  const res = await fetch(`${fake.url}/user`, { headers: { authorization: `Bearer ${token}` } })
  await res.body?.cancel()
  return res.status === 200
}

describe.each(BACKENDS)('tokenFor on %s', (backend) => {
  const key = randomKey()
  let db: Awaited<ReturnType<typeof sharedDatabase>>
  let processA: Awaited<ReturnType<typeof serviceOn>>
  let processB: Awaited<ReturnType<typeof serviceOn>>
  let userId: string
  beforeAll(async () => {
    db = await sharedDatabase(backend)
    processA = await serviceOn(db.a, fake, { key })
    processB = await serviceOn(db.b, fake, { key })
  })
  afterAll(() => db.close())
  beforeEach(() => {
    userId = crypto.randomUUID()
  })

  test('a token with more than a minute left is handed out as stored, without a refresh', async () => {
    const issued = fake.issuedAccessTokens.length
    await connectThrough(processA, fake, userId)
    const refreshes = fake.grants.refresh_token
    expect(await processA.tokenFor(userId, 'github')).toBe(accessTokensSince(issued)[0]!)
    expect(fake.grants.refresh_token).toBe(refreshes)
  })

  test('a token expiring within a minute is refreshed first, and the new one works', async () => {
    fake.accessTokenTtlSeconds = 30
    const issued = fake.issuedAccessTokens.length
    await connectThrough(processA, fake, userId)
    const refreshes = fake.grants.refresh_token
    const token = await processA.tokenFor(userId, 'github')
    expect(fake.grants.refresh_token).toBe(refreshes + 1)
    const [first, second] = accessTokensSince(issued)
    expect(token).toBe(second!)
    expect(token).not.toBe(first!)
    expect(await works(token)).toBe(true)
  })

  test('concurrent callers in one process share one refresh', async () => {
    fake.accessTokenTtlSeconds = 30
    await connectThrough(processA, fake, userId)
    fake.accessTokenTtlSeconds = 3600
    fake.refreshDelayMs = 50
    const refreshes = fake.grants.refresh_token
    const tokens = await Promise.all(Array.from({ length: 25 }, () => processA.tokenFor(userId, 'github')))
    expect(fake.grants.refresh_token).toBe(refreshes + 1)
    expect(new Set(tokens).size).toBe(1)
    expect(await works(tokens[0])).toBe(true)
  })

  test('two processes sharing the database spend the single-use refresh token once', async () => {
    fake.accessTokenTtlSeconds = 30
    await connectThrough(processA, fake, userId)
    fake.accessTokenTtlSeconds = 3600
    fake.refreshDelayMs = 50
    const refreshes = fake.grants.refresh_token
    const tokens = await Promise.all(Array.from({ length: 20 }, (_, i) => (i % 2 ? processA : processB).tokenFor(userId, 'github')))
    expect(fake.grants.refresh_token).toBe(refreshes + 1)
    expect(new Set(tokens).size).toBe(1)
    expect(await works(tokens[0])).toBe(true)
    expect(await processB.status(userId, 'github')).toMatchObject({ connected: true })
  })

  test('the refresh lease is compare-and-set on the row version', async () => {
    await connectThrough(processA, fake, userId)
    const storeA = new ConnectionStore(db.a)
    const storeB = new ConnectionStore(db.b)
    const row = (await storeA.get(userId, 'github'))!
    const until = Date.now() + 30_000
    const [first, second] = await Promise.all([
      storeA.leaseRefresh(userId, 'github', row.version, until, Date.now()),
      storeB.leaseRefresh(userId, 'github', row.version, until, Date.now()),
    ])
    expect([first, second].filter((v) => v !== undefined)).toEqual([row.version + 1])
  })

  test('a refused refresh token leaves the connection disconnected with refresh_failed', async () => {
    fake.accessTokenTtlSeconds = 30
    await connectThrough(processA, fake, userId)
    fake.revokeAll()
    expect(await processA.tokenFor(userId, 'github')).toBeUndefined()
    expect(await processB.status(userId, 'github')).toMatchObject({ connected: false, reason: 'refresh_failed' })
    const listed = (await processB.list(userId)).find((p) => p.provider === 'github')
    expect(listed).toMatchObject({ connected: false, reason: 'refresh_failed', account: { name: 'octo-dev' } })
  })

  test('nothing for a user without a connection or a provider that does not exist', async () => {
    expect(await processA.tokenFor(userId, 'github')).toBeUndefined()
    expect(await processA.tokenFor(userId, 'bitbucket')).toBeUndefined()
  })

  test('after a key rotation old ciphertexts still open and are re-sealed under the new key', async () => {
    await connectThrough(processA, fake, userId)
    const token = await processA.tokenFor(userId, 'github')
    const newKey = randomKey()
    const rotated = await serviceOn(db.b, fake, { key: newKey, previousKeys: [key] })
    expect(await rotated.tokenFor(userId, 'github')).toBe(token!)
    const newKeyId = (await createSecretBox({ key: newKey })).keyId
    const [row] = await db.a.sql`SELECT access_token, refresh_token FROM integration_connections WHERE user_id = ${userId}`
    expect(row.access_token.split('.')[1]).toBe(newKeyId)
    expect(row.refresh_token.split('.')[1]).toBe(newKeyId)
    // The old key can now be dropped; a service with neither key cannot read the connection and says why.
    expect(await (await serviceOn(db.b, fake, { key: newKey })).tokenFor(userId, 'github')).toBe(token!)
    const stranger = await serviceOn(db.b, fake, { key: randomKey() })
    expect(await stranger.tokenFor(userId, 'github')).toBeUndefined()
    expect(await stranger.status(userId, 'github')).toMatchObject({ connected: false, reason: 'key_unavailable' })
  })
})
