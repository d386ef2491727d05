/** Scopes a token can carry, and the scopes each role grants. */

export const SCOPES = [
  'chat:write',
  'integrations:read',
  'integrations:write',
  'billing:manage',
  'search:read',
  'agents:run',
  'usage:read',
  'audit:read',
] as const

export type Scope = (typeof SCOPES)[number]

/** Scopes an external token gets only by claiming them by name: money, usage figures and the audit trail. */
export const PRIVILEGED_SCOPES: readonly Scope[] = ['billing:manage', 'usage:read', 'audit:read']

export const ROLES = ['owner', 'admin', 'member', 'viewer', 'billing'] as const
export type Role = (typeof ROLES)[number]

const working: Scope[] = ['chat:write', 'integrations:read', 'integrations:write', 'search:read', 'agents:run']

/** What each role may do. A token never carries a scope its role does not grant. */
export const ROLE_SCOPES: Readonly<Record<Role, readonly Scope[]>> = {
  owner: [...SCOPES],
  admin: [...working, 'usage:read', 'audit:read'],
  member: working,
  viewer: ['integrations:read', 'search:read'],
  billing: ['billing:manage', 'usage:read'],
}

export function isRole(value: unknown): value is Role {
  return typeof value === 'string' && (ROLES as readonly string[]).includes(value)
}

export function isScope(value: unknown): value is Scope {
  return typeof value === 'string' && (SCOPES as readonly string[]).includes(value)
}

/**
 * Scopes from a claim (space-separated string or array), limited to those the role grants. Without a
 * claim, `unclaimed` (every scope of the role unless given), limited the same way.
 */
export function grantedScopes(role: Role, requested?: unknown, unclaimed?: readonly Scope[]): Scope[] {
  const allowed = ROLE_SCOPES[role]
  if (requested === undefined || requested === null) return unclaimed ? allowed.filter((s) => unclaimed.includes(s)) : [...allowed]
  const list = Array.isArray(requested) ? requested : String(requested).split(/\s+/)
  return allowed.filter((s) => list.includes(s))
}
