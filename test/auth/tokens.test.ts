import { afterAll, describe, expect, test } from 'bun:test'
import { Elysia } from 'elysia'
import { SignJWT } from 'jose'
import { accessControl } from '../../src/auth/plugin.ts'
import { startOidcIssuer } from '../fakes/oidc-issuer.ts'
import { ADMIN, bearer, login, makeApp, userWithRole } from '../helpers.ts'

const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url')

describe('bearer token attacks', async () => {
  const issuer = await startOidcIssuer()
  const t = await makeApp({
    ADMIN_EMAIL: ADMIN.email,
    ADMIN_PASSWORD: ADMIN.password,
    JWT_SECRET: 's'.repeat(48),
    OIDC_ISSUER: issuer.url,
    OIDC_AUDIENCE: 'platform-api',
    OIDC_CREATE_ORGS: 'true',
  })
  afterAll(async () => {
    await t.close()
    await issuer.close()
  })
  const secret = new TextEncoder().encode('s'.repeat(48))
  const { config } = t
  const { accessToken, user } = await login(t, ADMIN.email, ADMIN.password)
  const claims = { org: user.organizationId, role: 'owner', scope: 'chat:write usage:read' }

  const sign = (
    alg: string,
    payload: Record<string, unknown> = claims,
    opts: { exp?: number | null; iss?: string; aud?: string; typ?: string; kid?: string } = {},
  ) => {
    const jwt = new SignJWT(payload)
      .setProtectedHeader({ alg, typ: opts.typ ?? 'at+jwt', ...(opts.kid ? { kid: opts.kid } : {}) })
      .setSubject(user.id)
      .setIssuer(opts.iss ?? config.tokens.issuer)
      .setAudience(opts.aud ?? config.tokens.audience)
      .setIssuedAt()
      .setJti(crypto.randomUUID())
    if (opts.exp !== null) jwt.setExpirationTime(opts.exp ?? '5m')
    return jwt.sign(secret)
  }

  async function expectRefused(token: string, reason?: string) {
    const res = await t.request('/auth/me', { headers: bearer(token) })
    expect(res.status).toBe(401)
    expect(res.headers.get('www-authenticate')).toContain('error="invalid_token"')
    const body = await res.json()
    expect(body.code).toBe('invalid_token')
    if (reason) expect(body.detail).toContain(reason)
    expect(JSON.stringify(body)).not.toContain(token)
  }

  test('a genuine token is accepted (control)', async () => {
    expect((await t.request('/auth/me', { headers: bearer(accessToken) })).status).toBe(200)
    expect((await t.request('/auth/me', { headers: bearer(await sign('HS256')) })).status).toBe(200)
  })

  test('missing token: 401 with a bare Bearer challenge', async () => {
    const res = await t.request('/auth/me')
    expect(res.status).toBe(401)
    expect(res.headers.get('www-authenticate')).toBe('Bearer realm="api"')
  })

  test('alg=none is refused', async () => {
    const [, payload] = (await sign('HS256')).split('.')
    await expectRefused(`${b64({ alg: 'none', typ: 'at+jwt' })}.${payload}.`)
  })

  test('HS384 and HS512 with the right secret are refused where HS256 is expected', async () => {
    await expectRefused(await sign('HS384'), 'unsupported algorithm')
    await expectRefused(await sign('HS512'), 'unsupported algorithm')
  })

  test('a token with no exp is refused', async () => {
    await expectRefused(await sign('HS256', claims, { exp: null }))
  })

  test('an expired token is refused', async () => {
    await expectRefused(await sign('HS256', claims, { exp: Math.floor(Date.now() / 1000) - 60 }), 'expired')
  })

  test('another audience, another issuer and a non-access token type are refused', async () => {
    await expectRefused(await sign('HS256', claims, { aud: 'someone-else' }), 'audience')
    await expectRefused(await sign('HS256', claims, { iss: 'https://evil.example' }), 'unknown issuer')
    await expectRefused(await sign('HS256', claims, { typ: 'JWT' }))
  })

  test('a tampered payload is refused', async () => {
    const [header, , signature] = accessToken.split('.')
    const forged = `${header}.${b64({ ...JSON.parse(Buffer.from(accessToken.split('.')[1]!, 'base64url').toString()), role: 'owner', org: 'other-org' })}.${signature}`
    await expectRefused(forged, 'bad signature')
  })

  test('garbage is refused as malformed', async () => {
    await expectRefused('not.a.jwt', 'malformed')
    await expectRefused('x'.repeat(5000), 'malformed')
  })

  // That no JWKS fetch happens for them is shown in external-tokens.test.ts, which counts fetches.
  test('kid values that are a path, an SQL fragment or 10 KB long are refused', async () => {
    for (const kid of ['../../../../etc/passwd', "x' OR '1'='1", 'k'.repeat(10_240)]) {
      const token = await issuer.token({ claims: { aud: 'platform-api', sub: 'ext-1' }, header: { kid } })
      await expectRefused(token)
    }
  })

  test("an HS256 token signed with the identity provider's public key is refused (algorithm confusion)", async () => {
    const publicJwk = issuer.jwk(issuer.kid)
    const publicKeyPem = Buffer.from(JSON.stringify(publicJwk))
    const forged = await new SignJWT({ sub: 'ext-attacker', aud: 'platform-api' })
      .setProtectedHeader({ alg: 'HS256', kid: issuer.kid })
      .setIssuer(issuer.url)
      .setIssuedAt()
      .setExpirationTime('5m')
      .sign(publicKeyPem)
    await expectRefused(forged)
    // Also with the key's raw modulus bytes as the HMAC secret.
    const modulus = Buffer.from(String(publicJwk.n), 'base64url')
    const forged2 = await new SignJWT({ sub: 'ext-attacker', aud: 'platform-api' })
      .setProtectedHeader({ alg: 'HS256', kid: issuer.kid })
      .setIssuer(issuer.url)
      .setExpirationTime('5m')
      .sign(modulus)
    await expectRefused(forged2)
  })

  test('an external token whose kid is unknown is refused', async () => {
    const stranger = await startOidcIssuer()
    const token = await stranger.token({ claims: { iss: issuer.url, aud: 'platform-api', sub: 'ext-2' }, kid: stranger.kid })
    await stranger.close()
    await expectRefused(token)
  })

  test('a genuine external token is accepted and mapped to a local user with its role and scopes', async () => {
    const token = await issuer.token({
      claims: { aud: 'platform-api', sub: 'ext-alice', email: 'alice@idp.example', role: 'member', scope: 'chat:write billing:manage' },
    })
    const res = await t.request('/auth/me', { headers: bearer(token) })
    expect(res.status).toBe(200)
    const me = await res.json()
    expect(me).toMatchObject({ role: 'member', source: 'external', scopes: ['chat:write'] })
    const [row] = await t.deps.db.sql`SELECT email, external_subject FROM users WHERE external_subject = ${'ext-alice'}`
    expect(row.email).toBe('alice@idp.example')
    // The same subject maps to the same user next time.
    const again = await (await t.request('/auth/me', { headers: bearer(await issuer.token({ claims: { aud: 'platform-api', sub: 'ext-alice' } })) })).json()
    expect(again.userId).toBe(me.userId)
  })

  test('an external token for another audience is refused', async () => {
    await expectRefused(await issuer.token({ claims: { aud: 'another-api', sub: 'ext-3' } }), 'audience')
  })
})

describe('scopes, roles and plans', async () => {
  const t = await makeApp({ ADMIN_EMAIL: ADMIN.email, ADMIN_PASSWORD: ADMIN.password })
  // A route guarded by the billing scope, the way the billing plugin declares its routes.
  t.app.use(
    new Elysia().use(accessControl({ access: t.deps.access, plans: t.deps.plans })).get('/test/billing', () => ({ ok: true }), { auth: 'billing:manage' }),
  )
  afterAll(() => t.close())

  test('a viewer calling a billing route is 403 naming the scope', async () => {
    const { token } = await userWithRole(t, 'viewer')
    const res = await t.request('/test/billing', { headers: bearer(token) })
    expect(res.status).toBe(403)
    const body = await res.json()
    expect(body).toMatchObject({ code: 'insufficient_scope', requiredScope: 'billing:manage' })
    expect(res.headers.get('www-authenticate')).toContain('error="insufficient_scope"')
  })

  test('the billing role and the owner may call it', async () => {
    for (const role of ['billing', 'owner'] as const) {
      const { token } = await userWithRole(t, role)
      expect((await t.request('/test/billing', { headers: bearer(token) })).status).toBe(200)
    }
  })

  test('a free organisation calling /api/usage is 403 plan_required', async () => {
    const { token } = await login(t, ADMIN.email, ADMIN.password).then((p) => ({ token: p.accessToken }))
    const res = await t.request('/api/usage', { headers: bearer(token) })
    expect(res.status).toBe(403)
    expect((await res.json()).code).toBe('plan_required')
  })

  test('a member of an enterprise organisation without usage:read is 403 insufficient_scope', async () => {
    const org = await t.deps.accounts.createOrganization('Big Co', 'enterprise')
    const { token } = await userWithRole(t, 'member', { orgId: org.id })
    const res = await t.request('/api/usage', { headers: bearer(token) })
    expect(res.status).toBe(403)
    expect((await res.json()).code).toBe('insufficient_scope')
  })

  test('every guarded route in the OpenAPI document names its scope', async () => {
    const doc = await (await t.request('/swagger/json')).json()
    const usage = doc.paths['/api/usage'].get
    expect(usage.security).toEqual([{ bearer: ['usage:read'] }])
    expect(usage['x-required-scope']).toBe('usage:read')
    expect(usage['x-required-plan']).toBe('enterprise')
  })
})
