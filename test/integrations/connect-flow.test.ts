import { afterAll, beforeAll, beforeEach, describe, expect, test } from 'bun:test'
import { createApp } from '../../src/main/app.ts'
import { createHttpClient } from '../../src/http.ts'
import { createSecretBox } from '../../src/secret-box.ts'
import { codeChallenge } from '../../plugins/integrations/oauth.ts'
import { providersFromConfig } from '../../plugins/integrations/providers/index.ts'
import { createIntegrationsService } from '../../plugins/integrations/service.ts'
import { bearer, type TestApp } from '../helpers.ts'
import {
  BACKENDS,
  callback,
  CLIENTS,
  connect,
  integrationApp,
  outcome,
  PUBLIC_BASE_URL,
  quickUser,
  redirectUriOf,
  RETURN_URL,
  startConnect,
  startProvider,
} from './support.ts'

const fake = startProvider()
afterAll(() => fake.close())
beforeEach(() => {
  fake.decision = 'approve'
  fake.accessTokenTtlSeconds = 3600
})

describe.each(BACKENDS)('connect flow on %s', (backend) => {
  let t: TestApp
  let member: Awaited<ReturnType<typeof quickUser>>
  let other: Awaited<ReturnType<typeof quickUser>>
  beforeAll(async () => {
    t = await integrationApp(fake, backend)
  })
  // Fresh users per test: connections are per user, so tests cannot see each other's.
  beforeEach(async () => {
    member = await quickUser(t, 'member')
    other = await quickUser(t, 'member')
  })
  afterAll(async () => t?.close())

  test('POST auth, approval and callback end with status connected', async () => {
    const res = await t.send('POST', '/api/integrations/github/auth', {}, bearer(member.token))
    expect(res.status).toBe(200)
    expect(res.headers.get('cache-control')).toBe('no-store')
    const cookie = res.headers.get('set-cookie')!
    expect(cookie).toMatch(
      /^integration_flow_github=[A-Za-z0-9_-]{43}; Path=\/api\/integrations\/github\/callback; HttpOnly; SameSite=Lax; Max-Age=600; Secure$/,
    )
    const answer = await res.json()
    expect(answer.redirectUri).toBe(redirectUriOf('github'))
    const asked = new URL(answer.authorizationUrl)
    expect(asked.origin + asked.pathname).toBe(`${fake.url}/login/oauth/authorize`)
    expect(Object.fromEntries(asked.searchParams)).toMatchObject({
      client_id: CLIENTS.github.id,
      redirect_uri: redirectUriOf('github'),
      response_type: 'code',
      code_challenge_method: 'S256',
      scope: 'repo read:user',
    })
    expect(asked.searchParams.get('state')).toMatch(/^[A-Za-z0-9_-]{43}$/)

    const location = await callback(t, await fake.authorize(answer.authorizationUrl), cookie.split(';')[0])
    expect(location.startsWith(`${RETURN_URL}?`)).toBe(true)
    expect(outcome(location)).toEqual({ integration: 'github', status: 'connected' })

    // The code went back with the same redirect URI and the verifier of the challenge sent out.
    const exchange = new URLSearchParams(fake.requests.filter((r) => r.path === '/login/oauth/access_token').at(-1)!.body)
    expect(exchange.get('redirect_uri')).toBe(redirectUriOf('github'))
    expect(await codeChallenge(exchange.get('code_verifier')!)).toBe(asked.searchParams.get('code_challenge')!)

    const status = await (await t.request('/api/integrations/github/status', { headers: bearer(member.token) })).json()
    expect(status).toMatchObject({
      provider: 'github',
      label: 'GitHub',
      connected: true,
      account: { id: '4242', name: 'octo-dev', url: 'https://github.example/octo-dev' },
      scopes: ['repo', 'read:user'],
      metadata: { login: 'octo-dev', name: 'Octo Dev' },
    })
    expect(Date.parse(status.expiresAt) - Date.now()).toBeGreaterThan(3500_000)
    expect(status.verifiedAt).not.toBeNull()

    const list = await (await t.request('/api/integrations', { headers: bearer(member.token) })).json()
    expect(list.providers.map((p: { provider: string; connected: boolean }) => [p.provider, p.connected])).toEqual([
      ['github', true],
      ['supabase', false],
      ['gitlab', false],
    ])
    // Connections belong to their user.
    const theirs = await (await t.request('/api/integrations/github/status', { headers: bearer(other.token) })).json()
    expect(theirs).toMatchObject({ connected: false, reason: 'not_connected' })
  })

  test('{"redirect": true} answers 302 to the authorization URL', async () => {
    const res = await t.send('POST', '/api/integrations/supabase/auth', { redirect: true }, bearer(member.token))
    expect(res.status).toBe(302)
    const body = await res.json()
    expect(res.headers.get('location')).toBe(body.authorizationUrl)
    expect(new URL(body.authorizationUrl).pathname).toBe('/v1/oauth/authorize')
  })

  test('a replayed callback is refused and exchanges nothing', async () => {
    const started = await startConnect(t, member.token)
    const callbackUrl = await fake.authorize(started.authorizationUrl)
    expect(outcome(await callback(t, callbackUrl, started.cookie)).status).toBe('connected')
    const exchanges = fake.grants.authorization_code
    expect(outcome(await callback(t, callbackUrl, started.cookie))).toMatchObject({ status: 'error', error: 'invalid_state' })
    expect(fake.grants.authorization_code).toBe(exchanges)
  })

  test("another user's state is refused, and so is a state without the browser's flow cookie", async () => {
    const theirs = await startConnect(t, member.token)
    const mine = await startConnect(t, other.token)
    const theirCallback = await fake.authorize(theirs.authorizationUrl)
    expect(outcome(await callback(t, theirCallback, mine.cookie))).toMatchObject({ status: 'error', error: 'state_mismatch' })
    const exchanges = fake.grants.authorization_code
    const again = await startConnect(t, member.token)
    expect(outcome(await callback(t, await fake.authorize(again.authorizationUrl)))).toMatchObject({ error: 'state_mismatch' })
    expect(fake.grants.authorization_code).toBe(exchanges)
    for (const token of [member.token, other.token]) {
      const status = await (await t.request('/api/integrations/github/status', { headers: bearer(token) })).json()
      expect(status.connected).toBe(false)
    }
    // A state is bound to its provider too.
    const forGithub = await startConnect(t, member.token)
    const state = new URL(forGithub.authorizationUrl).searchParams.get('state')!
    const res = await t.request(`/api/integrations/supabase/callback?state=${state}&code=x`, { headers: { cookie: forGithub.cookie } })
    expect(outcome(res.headers.get('location')!)).toMatchObject({ integration: 'supabase', error: 'invalid_state' })
  })

  test('an unknown state is refused', async () => {
    expect(outcome(await callback(t, `${PUBLIC_BASE_URL}/api/integrations/github/callback?state=made-up&code=x`))).toMatchObject({
      status: 'error',
      error: 'invalid_state',
    })
  })

  test('a code cannot be redeemed without the PKCE verifier', async () => {
    const started = await startConnect(t, member.token)
    const code = new URL(await fake.authorize(started.authorizationUrl)).searchParams.get('code')!
    // What an attacker who intercepted the code would try: everything but the verifier.
    const form = new URLSearchParams({
      grant_type: 'authorization_code',
      code,
      redirect_uri: redirectUriOf('github'),
      client_id: CLIENTS.github.id,
      client_secret: CLIENTS.github.secret,
    })
    const res = await fetch(`${fake.url}/login/oauth/access_token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
      body: form,
    })
    expect(await res.json()).toMatchObject({ error: 'invalid_grant' })
  })

  test('a verifier that does not match the challenge fails the exchange and stores nothing', async () => {
    const started = await startConnect(t, member.token)
    const tampered = new URL(started.authorizationUrl)
    tampered.searchParams.set('code_challenge', await codeChallenge('x'.repeat(43)))
    const location = await callback(t, await fake.authorize(tampered.toString()), started.cookie)
    expect(outcome(location)).toEqual({ integration: 'github', status: 'error', error: 'exchange_failed', provider_error: 'invalid_grant' })
    const status = await (await t.request('/api/integrations/github/status', { headers: bearer(member.token) })).json()
    expect(status).toMatchObject({ connected: false, reason: 'not_connected' })
  })

  test('a refusal at the consent screen comes back as access_denied', async () => {
    fake.decision = 'deny'
    const started = await startConnect(t, member.token)
    expect(outcome(await callback(t, await fake.authorize(started.authorizationUrl), started.cookie))).toMatchObject({
      status: 'error',
      error: 'access_denied',
    })
  })

  test('returnTo picks the front-end page on the configured origin; another origin is refused', async () => {
    const started = await startConnect(t, member.token, 'github', { returnTo: '/settings/connections?tab=git' })
    const location = await callback(t, await fake.authorize(started.authorizationUrl), started.cookie)
    expect(location).toBe(`${PUBLIC_BASE_URL}/settings/connections?tab=git&integration=github&status=connected`)
    const refused = await t.send('POST', '/api/integrations/github/auth', { returnTo: 'https://evil.example/x' }, bearer(member.token))
    expect(refused.status).toBe(422)
    expect((await refused.json()).errors).toEqual([{ field: 'returnTo', message: `must be a path or a URL on ${PUBLIC_BASE_URL}` }])
  })
})

describe('provider lookup and access', async () => {
  const t = await integrationApp(fake, 'sqlite', { SUPABASE_CLIENT_ID: '', SUPABASE_CLIENT_SECRET: '' })
  const member = await quickUser(t, 'member')
  const viewer = await quickUser(t, 'viewer')
  afterAll(() => t.close())

  test('an unknown provider is 404 listing the known ones', async () => {
    const res = await t.send('POST', '/api/integrations/bitbucket/auth', {}, bearer(member.token))
    expect(res.status).toBe(404)
    expect(await res.json()).toMatchObject({ code: 'not_found', knownProviders: ['github', 'supabase', 'gitlab'] })
    expect((await t.request('/api/integrations/bitbucket/status', { headers: bearer(member.token) })).status).toBe(404)
  })

  test('a known provider without settings is 503 not_configured naming them', async () => {
    const res = await t.send('POST', '/api/integrations/supabase/auth', {}, bearer(member.token))
    expect(res.status).toBe(503)
    expect(await res.json()).toMatchObject({ code: 'not_configured', provider: 'supabase', variables: ['SUPABASE_CLIENT_ID', 'SUPABASE_CLIENT_SECRET'] })
    const list = await (await t.request('/api/integrations', { headers: bearer(member.token) })).json()
    expect(list.providers[1]).toMatchObject({ provider: 'supabase', configured: false, variables: ['SUPABASE_CLIENT_ID', 'SUPABASE_CLIENT_SECRET'] })
  })

  test('connecting needs integrations:write, reading needs integrations:read, and a token is required', async () => {
    const denied = await t.send('POST', '/api/integrations/github/auth', {}, bearer(viewer.token))
    expect(denied.status).toBe(403)
    expect(await denied.json()).toMatchObject({ code: 'insufficient_scope', requiredScope: 'integrations:write' })
    expect((await t.request('/api/integrations/github', { method: 'DELETE', headers: bearer(viewer.token) })).status).toBe(403)
    expect((await t.request('/api/integrations/github/status', { headers: bearer(viewer.token) })).status).toBe(200)
    expect((await t.request('/api/integrations')).status).toBe(401)
  })

  test('unknown body fields are 422 naming the field', async () => {
    const res = await t.send('POST', '/api/integrations/github/auth', { scope: 'repo' }, bearer(member.token))
    expect(res.status).toBe(422)
    expect(JSON.stringify((await res.json()).errors)).toContain('scope')
  })

  test('a state past its lifetime is refused', async () => {
    let clock = Date.now()
    const integrations = createIntegrationsService({
      db: t.deps.db,
      box: await createSecretBox({ key: t.config.secrets.tokenEncryptionKey }),
      http: createHttpClient(),
      logger: t.deps.logger,
      providers: providersFromConfig(t.config.integrations),
      publicBaseUrl: PUBLIC_BASE_URL,
      returnUrl: RETURN_URL,
      stateTtlSeconds: 600,
      now: () => clock,
    })
    const app = createApp({ ...t.deps, integrations })
    const res = await app.handle(new Request('http://localhost/api/integrations/github/auth', { method: 'POST', headers: bearer(member.token) }))
    const { authorizationUrl } = await res.json()
    const cookie = res.headers.get('set-cookie')!.split(';')[0]!
    const callbackUrl = new URL(await fake.authorize(authorizationUrl))
    clock += 600_000
    const late = await app.handle(new Request(`http://localhost${callbackUrl.pathname}${callbackUrl.search}`, { headers: { cookie } }))
    expect(outcome(late.headers.get('location')!)).toMatchObject({ status: 'error', error: 'state_expired' })
  })

  test('a redirect URI other than the registered one is refused by the provider', async () => {
    const moved = await integrationApp(fake, 'sqlite', { PUBLIC_BASE_URL: 'https://elsewhere.example' })
    try {
      const user = await quickUser(moved, 'member')
      const started = await startConnect(moved, user.token)
      await expect(fake.authorize(started.authorizationUrl)).rejects.toThrow('400')
    } finally {
      await moved.close()
    }
  })

  test('the generic provider from OAUTH_PROVIDERS connects like a built-in one', async () => {
    const location = await connect(t, fake, member.token, 'gitlab')
    expect(outcome(location)).toEqual({ integration: 'gitlab', status: 'connected' })
    const authorize = new URL(fake.requests.filter((r) => r.path.startsWith('/oauth/authorize')).at(-1)!.path, fake.url)
    expect(authorize.searchParams.get('scope')).toBe('read_user read_repository')
    // clientAuth "basic": the secret travels in the Authorization header, not the form.
    const exchange = fake.requests.filter((r) => r.path === '/oauth/token').at(-1)!
    expect(exchange.headers.authorization).toStartWith('Basic ')
    expect(new URLSearchParams(exchange.body).has('client_secret')).toBe(false)
    const status = await (await t.request('/api/integrations/gitlab/status', { headers: bearer(member.token) })).json()
    expect(status).toMatchObject({
      provider: 'gitlab',
      label: 'GitLab',
      connected: true,
      account: { id: '4242', name: 'octo-dev' },
      scopes: ['read_user', 'read_repository'],
    })
  })
})
