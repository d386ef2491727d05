/** How an identity provider's tokens become users, organisations, roles and scopes: least privilege unless configured. */
import { afterAll, describe, expect, test } from 'bun:test'
import { externalOrgKey } from '../../src/auth/access-service.ts'
import { runCli } from '../../src/main/cli.ts'
import { loadConfig } from '../../src/main/config.ts'
import { startOidcIssuer } from '../fakes/oidc-issuer.ts'
import { billingApp } from '../payments/harness.ts'
import { bearer, makeApp, tempDir, type TestApp } from '../helpers.ts'

const AUDIENCE = 'platform-api'
const idp = await startOidcIssuer()
afterAll(() => idp.close())

const oidcEnv = (env: Record<string, string> = {}) => ({ OIDC_ISSUER: idp.url, OIDC_AUDIENCE: AUDIENCE, ...env })
const newSubject = () => `ext-${crypto.randomUUID().slice(0, 8)}`
const externalToken = (claims: Record<string, unknown> = {}) => idp.token({ claims: { aud: AUDIENCE, sub: newSubject(), ...claims } })

async function me(t: TestApp, token: string) {
  const res = await t.request('/auth/me', { headers: bearer(token) })
  return { status: res.status, body: await res.json() }
}

const checkout = (t: TestApp, token: string) => t.send('POST', '/api/payment/create-checkout', { plan: 'pro' }, bearer(token))
const auditLogs = (t: TestApp, token: string) => t.request('/api/audit-logs', { headers: bearer(token) })

async function expectScopeRefused(res: Response, scope: string) {
  expect(res.status).toBe(403)
  expect(await res.json()).toMatchObject({ code: 'insufficient_scope', requiredScope: scope })
}

async function usersOf(t: TestApp, subject: string) {
  return t.deps.db.sql`SELECT id, org_id, role FROM users WHERE external_subject = ${subject}`
}

describe('when the operator lets external users create organisations', async () => {
  const t = await billingApp(oidcEnv({ OIDC_CREATE_ORGS: 'true', OIDC_ORG_CLAIM: 'org_id' }))
  afterAll(() => t.close())

  test('a token with only sub and aud is a member with no billing, usage or audit scope', async () => {
    const token = await externalToken()
    const { status, body } = await me(t, token)
    expect(status).toBe(200)
    expect(body).toMatchObject({ role: 'member', source: 'external' })
    expect(body.scopes).toEqual(['chat:write', 'integrations:read', 'integrations:write', 'search:read', 'agents:run'])
    await expectScopeRefused(await checkout(t, token), 'billing:manage')
    await expectScopeRefused(await auditLogs(t, token), 'audit:read')
  })

  test('a claimed owner role is not honoured: the user is a member and may not pay or read the audit log', async () => {
    const sub = newSubject()
    const token = await idp.token({ claims: { aud: AUDIENCE, sub, role: 'owner', scope: 'billing:manage audit:read chat:write' } })
    const { body } = await me(t, token)
    expect(body).toMatchObject({ role: 'member', scopes: ['chat:write'] })
    expect((await usersOf(t, sub))[0].role).toBe('member')
    await expectScopeRefused(await checkout(t, token), 'billing:manage')
    await expectScopeRefused(await auditLogs(t, token), 'audit:read')
  })

  test('a role the operator made claimable is honoured, with the scopes claimed', async () => {
    const { body } = await me(t, await externalToken({ role: 'viewer', scope: 'search:read chat:write' }))
    expect(body).toMatchObject({ role: 'viewer', scopes: ['search:read'] })
  })

  test('a subject without an org claim gets a new organisation of its own', async () => {
    const first = await me(t, await externalToken())
    const second = await me(t, await externalToken())
    expect(first.status).toBe(200)
    expect(first.body.organizationId).not.toBe(second.body.organizationId)
  })

  test('an org claim naming an unknown organisation creates it once, and the next subject joins it', async () => {
    const orgId = `globex-${crypto.randomUUID().slice(0, 8)}`
    const [a, b] = await Promise.all([me(t, await externalToken({ org_id: orgId })), me(t, await externalToken({ org_id: orgId }))])
    expect(a.status).toBe(200)
    expect(b.body.organizationId).toBe(a.body.organizationId)
    const org = await t.deps.accounts.organizationByExternalKey(externalOrgKey(idp.url, 'org_id', orgId))
    expect(org).toMatchObject({ id: a.body.organizationId, name: orgId })
  })
})

describe('when external users join organisations the operator linked', async () => {
  const t = await billingApp(oidcEnv({ OIDC_ORG_CLAIM: 'org_id', OIDC_CLAIMABLE_ROLES: 'member,viewer,billing' }))
  afterAll(() => t.close())
  const acme = await t.deps.accounts.createOrganization('Acme', 'team')
  const cli = async (...args: string[]) => {
    const lines: string[] = []
    return { code: await runCli(args, t.deps, (line) => lines.push(line)), lines }
  }
  expect((await cli('orgs', 'link', '--org', acme.id, '--external', 'acme-corp')).code).toBe(0)

  test('a new subject joins the organisation its org claim names, as a member', async () => {
    const sub = newSubject()
    const { status, body } = await me(t, await idp.token({ claims: { aud: AUDIENCE, sub, org_id: 'acme-corp' } }))
    expect(status).toBe(200)
    expect(body).toMatchObject({ organizationId: acme.id, role: 'member', plan: 'team' })
    expect((await usersOf(t, sub))[0]).toMatchObject({ org_id: acme.id, role: 'member' })
  })

  test('without an org claim a new subject is refused with 403 naming what to configure, and no account is created', async () => {
    const sub = newSubject()
    const res = await t.request('/auth/me', { headers: bearer(await idp.token({ claims: { aud: AUDIENCE, sub } })) })
    expect(res.status).toBe(403)
    const body = await res.json()
    expect(body.code).toBe('forbidden')
    expect(body.detail).toContain('org_id')
    expect(body.detail).toContain('OIDC_CREATE_ORGS')
    expect(await usersOf(t, sub)).toHaveLength(0)
  })

  test('an org claim naming an organisation nobody linked is refused, and none is created', async () => {
    const before = (await t.deps.accounts.organizations()).length
    const sub = newSubject()
    const res = await t.request('/auth/me', { headers: bearer(await idp.token({ claims: { aud: AUDIENCE, sub, org_id: 'initech' } })) })
    expect(res.status).toBe(403)
    expect((await res.json()).detail).toContain('orgs link')
    expect(await usersOf(t, sub)).toHaveLength(0)
    expect(await t.deps.accounts.organizations()).toHaveLength(before)
  })

  test('an organisation linked under another claim is not found through this one', async () => {
    const other = await t.deps.accounts.createOrganization('Other', 'free')
    expect(await t.deps.accounts.linkOrganization(other.id, externalOrgKey(idp.url, 'tenant', 'umbrella'))).toBe(true)
    expect((await t.request('/auth/me', { headers: bearer(await externalToken({ org_id: 'umbrella' })) })).status).toBe(403)
  })

  test('billing:manage comes only from a scope claim, within a role the operator allows', async () => {
    const claimed = await externalToken({ org_id: 'acme-corp', role: 'billing', scope: 'billing:manage' })
    expect((await checkout(t, claimed)).status).toBe(200)
    // The same role without a scope claim gets the default scopes, and the billing role grants none of them.
    const unclaimed = await externalToken({ org_id: 'acme-corp', role: 'billing' })
    expect((await me(t, unclaimed)).body).toMatchObject({ role: 'billing', scopes: [] })
    await expectScopeRefused(await checkout(t, unclaimed), 'billing:manage')
  })

  test('a key already linked to another organisation is not moved', async () => {
    const other = await t.deps.accounts.createOrganization('Impostor', 'free')
    const linked = await cli('orgs', 'link', '--org', other.id, '--external', 'acme-corp')
    expect(linked.code).toBe(2)
    expect(linked.lines[0]).toContain('linked to another one')
  })
})

test('with neither an org claim nor OIDC_CREATE_ORGS, a new external subject is refused and told what the operator must set', async () => {
  const t = await makeApp(oidcEnv())
  try {
    const sub = newSubject()
    const res = await t.request('/auth/me', { headers: bearer(await idp.token({ claims: { aud: AUDIENCE, sub } })) })
    expect(res.status).toBe(403)
    const body = await res.json()
    expect(body.code).toBe('forbidden')
    expect(body.detail).toContain('OIDC_ORG_CLAIM')
    expect(body.detail).toContain('OIDC_CREATE_ORGS')
    expect(await usersOf(t, sub)).toHaveLength(0)
  } finally {
    await t.close()
  }
})

describe('external identity settings', () => {
  const load = (env: Record<string, string>) => {
    const dir = tempDir()
    try {
      return loadConfig({ DATA_DIR: dir.path, ...oidcEnv(env) })
    } finally {
      dir.remove()
    }
  }

  test('default to members of linked organisations, with working scopes only, and owner not claimable', () => {
    expect(load({}).oidc).toMatchObject({
      defaultRole: 'member',
      claimableRoles: ['member', 'viewer'],
      defaultScopes: ['chat:write', 'integrations:read', 'integrations:write', 'search:read', 'agents:run'],
      orgClaim: undefined,
      createOrgs: false,
    })
  })

  test('default scopes may be none, but never billing, usage or audit scopes', () => {
    expect(load({ OIDC_DEFAULT_SCOPES: 'none' }).oidc!.defaultScopes).toEqual([])
    for (const scope of ['billing:manage', 'usage:read', 'audit:read'])
      expect(() => load({ OIDC_DEFAULT_SCOPES: `chat:write,${scope}` })).toThrow(`OIDC_DEFAULT_SCOPES must not list ${scope}`)
    expect(() => load({ OIDC_DEFAULT_SCOPES: 'chat:read' })).toThrow('OIDC_DEFAULT_SCOPES must list scopes')
  })

  test('roles must be known roles', () => {
    expect(() => load({ OIDC_DEFAULT_ROLE: 'superuser' })).toThrow('OIDC_DEFAULT_ROLE must be one of')
    expect(() => load({ OIDC_CLAIMABLE_ROLES: 'member,root' })).toThrow('OIDC_CLAIMABLE_ROLES must be one of')
  })
})
