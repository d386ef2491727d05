import { expect, test } from 'bun:test'
import { AccountStore } from '../../src/auth/account-store.ts'
import { createAccessService } from '../../src/auth/access-service.ts'
import { createAccessTokens } from '../../src/auth/access-tokens.ts'
import { memoryLogger } from '../../src/log.ts'
import { openDatabase } from '../../src/storage/database.ts'
import { migrate } from '../../src/storage/migrate.ts'
import { migrations } from '../../src/storage/migrations/index.ts'

test('a cached token is refused as soon as it expires', async () => {
  const db = await openDatabase({ sqliteFile: ':memory:' })
  await migrate(db, migrations)
  let clock = Date.UTC(2026, 0, 1)
  const now = () => clock
  const tokens = createAccessTokens({ secret: 'k'.repeat(40), issuer: 'iss', audience: 'aud', ttlSeconds: 60, now })
  const access = createAccessService({
    accounts: new AccountStore(db),
    tokens,
    logger: memoryLogger(),
    issuer: 'iss',
    refreshTtlSeconds: 3600,
    defaultPlan: 'free',
    login: { maxFailures: 5, lockSeconds: 60 },
    now,
  })
  await access.createAccount({ email: 'c@example.com', password: 'cache-password-1', role: 'member' })
  const { accessToken } = await access.login('c@example.com', 'cache-password-1', '127.0.0.1')
  const first = await access.authenticate(accessToken)
  expect(await access.authenticate(accessToken)).toBe(first) // served from the cache
  clock += 61_000
  await expect(access.authenticate(accessToken)).rejects.toMatchObject({ code: 'invalid_token', message: 'token expired' })
  await db.close()
})
