/**
 * The service on its embedded defaults with one caller of every kind an attacker or a careless client is:
 * no token, garbage, a malformed Authorization header, an expired token, a token signed with another key, and
 * signed-in users of every role on a free and an enterprise organisation. Also the route table, read from the
 * app itself, so a route added later is probed without anyone listing it.
 */
import { SignJWT } from 'jose'
import { createAccessTokens } from '../../src/auth/access-tokens.ts'
import { ROLES, ROLE_SCOPES, type Role, type Scope } from '../../src/auth/roles.ts'
import { makeApp, userWithRole, type TestApp } from '../helpers.ts'

export interface GuardedRoute {
  method: string
  path: string
  scope: Scope | 'any'
  plan?: string
}

/** Every HTTP route that declares a scope (`{ auth: ... }`), with its plan requirement. */
export function guardedRoutes(t: TestApp): GuardedRoute[] {
  const routes: GuardedRoute[] = []
  for (const route of t.app.routes) {
    const detail = (route.hooks as { detail?: Record<string, unknown> }).detail ?? {}
    const scope = detail['x-required-scope'] as GuardedRoute['scope'] | undefined
    if (!scope || route.method === 'WS') continue
    routes.push({ method: route.method, path: route.path, scope, plan: detail['x-required-plan'] as string | undefined })
  }
  return routes
}

/** A concrete URL for a route pattern: every `:param` becomes `value`. */
export function concretePath(pattern: string, value = 'x1'): string {
  return pattern.replace(/:[^/]+/g, encodeURIComponent(value)).replace(/\*$/, 'a')
}

export interface Callers {
  t: TestApp
  /** Authorization header values that must all be answered 401. */
  anonymous: Record<string, Record<string, string>>
  /** A signed-in user of each role on a free-plan organisation, and an owner on an enterprise one. */
  tokens: Record<Role, string> & { enterpriseOwner: string; enterpriseMember: string }
  /** A role whose tokens lack `scope`. */
  roleWithout(scope: Scope): Role
  close(): Promise<void>
}

export async function callers(env: Record<string, string> = {}): Promise<Callers> {
  const t = await makeApp({ LOG_LEVEL: 'error', ...env })
  const enterprise = await t.deps.accounts.createOrganization('Enterprise Co', 'enterprise')
  const tokens = {} as Callers['tokens']
  for (const role of ROLES) tokens[role] = (await userWithRole(t, role)).token
  tokens.enterpriseOwner = (await userWithRole(t, 'owner', { orgId: enterprise.id })).token
  tokens.enterpriseMember = (await userWithRole(t, 'member', { orgId: enterprise.id })).token

  const { issuer, audience } = t.config.tokens
  const owner = await t.deps.access.createAccount({ email: `expired-${crypto.randomUUID()}@example.com`, password: 'a-long-enough-password', role: 'owner' })
  const expired = await createAccessTokens({ secret: t.config.secrets.jwtSecret, issuer, audience, now: () => Date.now() - 24 * 3600_000 }).issue({
    userId: owner.id,
    orgId: owner.orgId,
    role: 'owner',
    scopes: ROLE_SCOPES.owner,
  })
  const forged = await new SignJWT({ org: owner.orgId, role: 'owner', scope: ROLE_SCOPES.owner.join(' ') })
    .setProtectedHeader({ alg: 'HS256', typ: 'at+jwt' })
    .setSubject(owner.id)
    .setIssuer(issuer)
    .setAudience(audience)
    .setIssuedAt()
    .setExpirationTime('10m')
    .setJti(crypto.randomUUID())
    .sign(new TextEncoder().encode('not-the-service-secret-but-long-enough'))
  const unsigned = `${btoa(JSON.stringify({ alg: 'none', typ: 'at+jwt' }))}.${btoa(JSON.stringify({ sub: owner.id, scope: 'chat:write' }))}.`

  return {
    t,
    anonymous: {
      'no token': {},
      garbage: { authorization: 'Bearer garbage' },
      'basic scheme': { authorization: 'Basic b3duZXI6cGFzcw==' },
      'empty bearer': { authorization: 'Bearer ' },
      expired: { authorization: `Bearer ${expired.token}` },
      'signed with another key': { authorization: `Bearer ${forged}` },
      'alg none': { authorization: `Bearer ${unsigned}` },
    },
    tokens,
    roleWithout(scope) {
      const role = ROLES.find((r) => !ROLE_SCOPES[r].includes(scope))
      if (!role) throw new Error(`every role has ${scope}`)
      return role
    },
    close: () => t.close(),
  }
}
