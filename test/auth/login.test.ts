import { afterAll, describe, expect, test } from 'bun:test'
import { hashPassword } from '../../src/auth/access-service.ts'
import { loadConfig } from '../../src/main/config.ts'
import { ADMIN, CHEAP_PASSWORD_HASHING, bearer, login, makeApp } from '../helpers.ts'

describe('sign-in, refresh and sign-out', async () => {
  const t = await makeApp({ ADMIN_EMAIL: ADMIN.email, ADMIN_PASSWORD: ADMIN.password, LOGIN_MAX_FAILURES: '3' })
  afterAll(() => t.close())

  test('the first owner exists from ADMIN_EMAIL / ADMIN_PASSWORD, and email is case-insensitive', async () => {
    const res = await t.send('POST', '/auth/login', { email: 'Owner@Example.COM', password: ADMIN.password })
    expect(res.status).toBe(200)
    const pair = await res.json()
    expect(pair).toMatchObject({ tokenType: 'Bearer', expiresIn: 900, user: { email: ADMIN.email, role: 'owner' } })
    expect(pair.refreshToken).toStartWith('rt_')
    const me = await t.request('/auth/me', { headers: bearer(pair.accessToken) })
    expect(me.status).toBe(200)
    expect((await me.json()).role).toBe('owner')
  })

  test('the first owner is not created again once users exist', async () => {
    expect(await t.deps.access.ensureFirstOwner({ email: 'second@example.com', password: 'x'.repeat(12) })).toBeUndefined()
  })

  test('a wrong password and an unknown email get the same 401, with no hint', async () => {
    const wrongPassword = await t.send('POST', '/auth/login', { email: ADMIN.email, password: 'nope' }, { 'x-request-id': 'a' })
    const unknownEmail = await t.send('POST', '/auth/login', { email: 'ghost@example.com', password: 'nope' })
    expect(wrongPassword.status).toBe(401)
    expect(unknownEmail.status).toBe(401)
    const a = await wrongPassword.json()
    const b = await unknownEmail.json()
    expect(a.code).toBe('invalid_credentials')
    expect(a.detail).toBe(b.detail)
    expect(a.detail).toBe('Email or password is wrong')
  })

  test('malformed login bodies name the field', async () => {
    const res = await t.send('POST', '/auth/login', { email: 'not-an-email', password: 'x' })
    expect(res.status).toBe(422)
    expect((await res.json()).errors[0].field).toBe('email')
    const missing = await t.send('POST', '/auth/login', { email: ADMIN.email })
    expect((await missing.json()).errors).toContainEqual({ field: 'password', message: 'is required' })
  })

  test('repeated failures lock the account for a while, then the right password is refused too', async () => {
    const victim = await t.deps.access.createAccount({ email: 'victim@example.com', password: 'victim-password-1', role: 'member' })
    for (let i = 0; i < 3; i++) expect((await t.send('POST', '/auth/login', { email: victim.email, password: 'guess' })).status).toBe(401)
    const locked = await t.send('POST', '/auth/login', { email: victim.email, password: 'victim-password-1' })
    expect(locked.status).toBe(429)
    expect((await locked.json()).code).toBe('account_locked')
    expect(Number(locked.headers.get('retry-after'))).toBeGreaterThan(800)
  })

  test('refresh rotates: the new pair works and the old refresh token is spent', async () => {
    const pair = await login(t, ADMIN.email, ADMIN.password)
    const rotated = await t.send('POST', '/auth/refresh', { refreshToken: pair.refreshToken })
    expect(rotated.status).toBe(200)
    const next = await rotated.json()
    expect(next.refreshToken).not.toBe(pair.refreshToken)
    expect((await t.request('/auth/me', { headers: bearer(next.accessToken) })).status).toBe(200)
  })

  test('a refresh token reused after rotation revokes the whole family', async () => {
    const pair = await login(t, ADMIN.email, ADMIN.password)
    const next = await (await t.send('POST', '/auth/refresh', { refreshToken: pair.refreshToken })).json()
    const replay = await t.send('POST', '/auth/refresh', { refreshToken: pair.refreshToken })
    expect(replay.status).toBe(401)
    expect((await replay.json()).detail).toContain('reuse')
    // The legitimate holder's newer token died with the family.
    const after = await t.send('POST', '/auth/refresh', { refreshToken: next.refreshToken })
    expect(after.status).toBe(401)
  })

  test('concurrent use of one refresh token yields at most one new pair', async () => {
    const pair = await login(t, ADMIN.email, ADMIN.password)
    const results = await Promise.all(Array.from({ length: 5 }, () => t.send('POST', '/auth/refresh', { refreshToken: pair.refreshToken })))
    expect(results.filter((r) => r.status === 200).length).toBeLessThanOrEqual(1)
  })

  test('logout revokes the refresh token and its family', async () => {
    const pair = await login(t, ADMIN.email, ADMIN.password)
    const out = await t.send('POST', '/auth/logout', { refreshToken: pair.refreshToken })
    expect(out.status).toBe(204)
    expect((await t.send('POST', '/auth/refresh', { refreshToken: pair.refreshToken })).status).toBe(401)
  })

  test('an unknown refresh token is 401', async () => {
    expect((await t.send('POST', '/auth/refresh', { refreshToken: 'rt_forged' })).status).toBe(401)
  })

  test('refresh tokens are stored hashed', async () => {
    const pair = await login(t, ADMIN.email, ADMIN.password)
    const rows = await t.deps.db.sql`SELECT token_hash FROM refresh_tokens`
    expect(rows.some((r: { token_hash: string }) => r.token_hash === pair.refreshToken)).toBe(false)
    expect(rows.every((r: { token_hash: string }) => /^[0-9a-f]{64}$/.test(r.token_hash))).toBe(true)
  })

  test('passwords are stored as argon2id hashes, over PASSWORD_HASH_MEMORY_KIB (64 MiB unless set, never under 19 MiB)', async () => {
    const [row] = await t.deps.db.sql`SELECT password_hash FROM users WHERE email = ${ADMIN.email}`
    expect(row.password_hash).toStartWith(`$argon2id$v=19$m=${CHEAP_PASSWORD_HASHING.PASSWORD_HASH_MEMORY_KIB},t=2,p=1$`)
    expect(loadConfig({ DATA_DIR: t.config.dataDir }).login.passwordHashMemoryKib).toBe(65_536)
    expect(await hashPassword('a-long-enough-password')).toStartWith('$argon2id$v=19$m=65536,t=2,p=1$')
    expect(() => loadConfig({ DATA_DIR: t.config.dataDir, PASSWORD_HASH_MEMORY_KIB: '16384' })).toThrow(/PASSWORD_HASH_MEMORY_KIB/)
  })

  test('failures from one address across many accounts lock the address', async () => {
    const res = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        t.send('POST', '/auth/login', { email: `spray${i}@example.com`, password: 'guess' }, { 'x-request-id': `spray-${i}` }),
      ),
    )
    expect(res.every((r) => r.status === 401 || r.status === 429)).toBe(true)
    const next = await t.send('POST', '/auth/login', { email: 'spray-next@example.com', password: 'guess' })
    expect(next.status).toBe(429)
  })

  test('registration is off unless enabled', async () => {
    const res = await t.send('POST', '/auth/register', { email: 'new@example.com', password: 'long-enough-password' })
    expect(res.status).toBe(403)
    expect((await res.json()).code).toBe('registration_disabled')
  })
})

describe('registration when enabled', async () => {
  const t = await makeApp({ ALLOW_REGISTRATION: 'true' })
  afterAll(() => t.close())

  test('creates an owner of a new free organisation', async () => {
    const res = await t.send('POST', '/auth/register', { email: 'founder@example.com', password: 'long-enough-password', organizationName: 'Acme' })
    expect(res.status).toBe(201)
    const pair = await res.json()
    expect(pair.user.role).toBe('owner')
    const me = await (await t.request('/auth/me', { headers: bearer(pair.accessToken) })).json()
    expect(me.plan).toBe('free')
  })

  test('a taken email is 409 and a short password 422', async () => {
    expect((await t.send('POST', '/auth/register', { email: 'founder@example.com', password: 'long-enough-password' })).status).toBe(409)
    const short = await t.send('POST', '/auth/register', { email: 'other@example.com', password: 'short' })
    expect(short.status).toBe(422)
    expect((await short.json()).errors[0].field).toBe('password')
  })
})
