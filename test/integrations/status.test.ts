import { afterAll, beforeAll, beforeEach, describe, expect, test } from 'bun:test'
import { bearer, type TestApp } from '../helpers.ts'
import { BACKENDS, connect, connectThrough, integrationApp, outcome, quickUser, serviceOn, startProvider } from './support.ts'

const fake = startProvider()
afterAll(() => fake.close())
beforeEach(() => {
  fake.accessTokenTtlSeconds = 3600
  fake.failApi(200, 0)
})

describe.each(BACKENDS)('status and disconnect on %s', (backend) => {
  let t: TestApp
  let token: string
  let userId: string
  beforeAll(async () => {
    t = await integrationApp(fake, backend)
  })
  afterAll(() => t.close())
  beforeEach(async () => {
    ;({
      token,
      user: { id: userId },
    } = await quickUser(t))
  })

  const status = async (provider: string, query = '') => {
    const res = await t.request(`/api/integrations/${provider}/status${query}`, { headers: bearer(token) })
    return { res, body: await res.json() }
  }

  test('Supabase: the connected organisation, with its organisations and projects as metadata', async () => {
    expect(outcome(await connect(t, fake, token, 'supabase')).status).toBe('connected')
    const { res, body } = await status('supabase')
    expect(res.status).toBe(200)
    expect(body).toMatchObject({
      provider: 'supabase',
      connected: true,
      account: { id: 'org-fake-1', name: 'Fake Org' },
      metadata: {
        organizations: [{ id: 'org-fake-1', name: 'Fake Org' }],
        projects: [{ id: 'proj-fake-1', name: 'Fake Project', organizationId: 'org-fake-1', region: 'eu-west-1', status: 'ACTIVE_HEALTHY' }],
      },
    })
    // Supabase tokens expire; the expiry is reported.
    expect(Date.parse(body.expiresAt)).toBeGreaterThan(Date.now())
    // The Supabase token exchange authenticates the client with HTTP Basic.
    expect(fake.requests.filter((r) => r.path === '/v1/oauth/token').at(-1)!.headers.authorization).toStartWith('Basic ')
  })

  test('a status is answered from the cache, fresh=true asks again, and a new connection is seen at once', async () => {
    await connect(t, fake, token)
    let calls = fake.apiCalls
    const first = await status('github')
    expect(first.res.headers.get('x-cache')).toBe('MISS')
    expect(fake.apiCalls).toBe(calls + 1)
    const second = await status('github')
    expect(second.res.headers.get('x-cache')).toBe('HIT')
    expect(second.body).toMatchObject({ connected: true, cached: true, verifiedAt: first.body.verifiedAt })
    expect(fake.apiCalls).toBe(calls + 1)
    calls = fake.apiCalls
    expect((await status('github', '?fresh=true')).body.cached).toBe(false)
    expect(fake.apiCalls).toBe(calls + 1)
    await connect(t, fake, token)
    expect((await status('github')).body.cached).toBe(false)
  })

  test('a cached status is used until the TTL is over', async () => {
    let clock = Date.now()
    const service = await serviceOn(t.deps.db, fake, { key: t.config.secrets.tokenEncryptionKey, now: () => clock, statusCacheTtlSeconds: 60 })
    await connectThrough(service, fake, userId)
    expect((await service.status(userId, 'github')).cached).toBe(false)
    clock += 59_000
    expect((await service.status(userId, 'github')).cached).toBe(true)
    clock += 1_000
    expect((await service.status(userId, 'github')).cached).toBe(false)
  })

  test('a token revoked at the provider shows as disconnected with the reason, not as an error', async () => {
    fake.accessTokenTtlSeconds = undefined // classic OAuth app tokens: no expiry, no refresh token
    await connect(t, fake, token)
    expect((await status('github')).body.connected).toBe(true)
    fake.revokeAll()
    const { res, body } = await status('github', '?fresh=true')
    expect(res.status).toBe(200)
    expect(body).toMatchObject({ connected: false, reason: 'token_revoked', account: { name: 'octo-dev' } })
    expect(body.detail).toContain('connect again')
    expect(await t.deps.integrations.tokenFor(userId, 'github')).toBeUndefined()
    const list = await (await t.request('/api/integrations', { headers: bearer(token) })).json()
    expect(list.providers[0]).toMatchObject({ provider: 'github', connected: false, reason: 'token_revoked' })
  })

  test('a token refused before its expiry is refreshed once, and the connection stays', async () => {
    await connect(t, fake, token)
    fake.expireAccessTokens()
    const refreshes = fake.grants.refresh_token
    const { body } = await status('github', '?fresh=true')
    expect(body).toMatchObject({ connected: true })
    expect(fake.grants.refresh_token).toBe(refreshes + 1)
  })

  test('a provider that keeps failing is an upstream error naming it, after retries that honour Retry-After', async () => {
    await connect(t, fake, token)
    let calls = fake.apiCalls
    fake.failApi(503, 3, '0')
    let answer = await status('github', '?fresh=true')
    expect(answer.res.status).toBe(502)
    expect(answer.body).toMatchObject({ code: 'upstream_error', provider: 'github' })
    expect(fake.apiCalls).toBe(calls + 3)
    calls = fake.apiCalls
    fake.failApi(429, 3, '0')
    answer = await status('github', '?fresh=true')
    expect(answer.res.status).toBe(503)
    expect(answer.body).toMatchObject({ code: 'unavailable', provider: 'github' })
    expect(answer.res.headers.get('retry-after')).toBe('0')
    expect(fake.apiCalls).toBe(calls + 3)
    // One 429 then success: the retry gets through and the caller never sees the 429.
    fake.failApi(429, 1, '0')
    expect((await status('github', '?fresh=true')).body.connected).toBe(true)
  })

  for (const provider of ['github', 'supabase', 'gitlab']) {
    test(`DELETE revokes the ${provider} grant at the provider and forgets the tokens`, async () => {
      await connect(t, fake, token, provider)
      const held = await t.deps.integrations.tokenFor(userId, provider)
      const revocations = fake.revocations
      const res = await t.request(`/api/integrations/${provider}`, { method: 'DELETE', headers: bearer(token) })
      expect(res.status).toBe(200)
      expect(await res.json()).toEqual({ provider, disconnected: true, revocation: 'revoked' })
      expect(fake.revocations).toBe(revocations + 1)
      const probe = await fetch(`${fake.url}${provider === 'gitlab' ? '/api/v4/user' : provider === 'github' ? '/user' : '/v1/organizations'}`, {
        headers: bearer(held!),
      })
      expect(probe.status).toBe(401)
      expect((await status(provider)).body).toMatchObject({ connected: false, reason: 'not_connected' })
      const again = await t.request(`/api/integrations/${provider}`, { method: 'DELETE', headers: bearer(token) })
      expect(await again.json()).toEqual({ provider, disconnected: false, revocation: 'none' })
    })
  }
})
