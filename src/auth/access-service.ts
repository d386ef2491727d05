import { decodeJwt } from 'jose'
import { AppError } from '../errors.ts'
import type { Logger } from '../log.ts'
import type { AccountStore, User } from './account-store.ts'
import type { AccessTokens } from './access-tokens.ts'
import { invalidToken } from './token-errors.ts'
import { grantedScopes, isRole, type Role, type Scope } from './roles.ts'

/** Who is calling, as every guarded route sees it. */
export interface Principal {
  userId: string
  orgId: string
  role: Role
  scopes: readonly Scope[]
  /** `local` for tokens this service issued, `external` for the identity provider's. */
  source: 'local' | 'external'
}

export interface ExternalIdentity {
  issuer: string
  subject: string
  email?: string
  claims: Record<string, unknown>
}

export interface ExternalVerifier {
  verify(token: string): Promise<ExternalIdentity>
}

export interface AccessServiceDeps {
  accounts: AccountStore
  tokens: AccessTokens
  logger: Logger
  issuer: string
  refreshTtlSeconds: number
  defaultPlan: string
  login: { maxFailures: number; lockSeconds: number }
  external?: { verifier: ExternalVerifier; issuer: string; scopesClaim: string; roleClaim: string }
  now?: () => number
}

export interface TokenPair {
  accessToken: string
  tokenType: 'Bearer'
  expiresIn: number
  refreshToken: string
  refreshExpiresIn: number
  scopes: Scope[]
  user: { id: string; email: string; role: Role; organizationId: string }
}

function sha256(text: string): string {
  return new Bun.CryptoHasher('sha256').update(text).digest('hex')
}

function newRefreshToken(): string {
  return 'rt_' + Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString('base64url')
}

export function normaliseEmail(email: string): string {
  return email.trim().toLowerCase()
}

export function hashPassword(password: string): Promise<string> {
  return Bun.password.hash(password, { algorithm: 'argon2id' })
}

const badCredentials = () => new AppError('invalid_credentials', 'Email or password is wrong')
const badRefresh = (reason: string) => new AppError('invalid_token', reason)

/** Login, refresh rotation, logout, registration and bearer-token authentication. */
export function createAccessService(deps: AccessServiceDeps) {
  const { accounts, tokens, logger } = deps
  const now = deps.now ?? Date.now
  // Verifying against a real hash when the email is unknown keeps both answers equally slow.
  const decoyHash = hashPassword(crypto.randomUUID())
  // Verified tokens and who they speak for; bounded, and expiry is checked again on every use.
  const principals = new Map<string, { principal: Principal; exp: number }>()
  const PRINCIPAL_CACHE = 10_000

  async function issuePair(user: User, familyId: string = crypto.randomUUID()): Promise<TokenPair> {
    const scopes = grantedScopes(user.role)
    const access = await tokens.issue({ userId: user.id, orgId: user.orgId, role: user.role, scopes })
    const refreshToken = newRefreshToken()
    await accounts.insertRefreshToken({
      familyId,
      userId: user.id,
      tokenHash: sha256(refreshToken),
      expiresAt: now() + deps.refreshTtlSeconds * 1000,
    })
    return {
      accessToken: access.token,
      tokenType: 'Bearer',
      expiresIn: tokens.ttlSeconds,
      refreshToken,
      refreshExpiresIn: deps.refreshTtlSeconds,
      scopes,
      user: { id: user.id, email: user.email, role: user.role, organizationId: user.orgId },
    }
  }

  async function assertNotLocked(subjects: string[]) {
    for (const subject of subjects) {
      const record = await accounts.loginFailures(subject)
      if (record && record.lockedUntil > now()) {
        const retryAfter = Math.ceil((record.lockedUntil - now()) / 1000)
        throw new AppError('account_locked', `Too many failed sign-in attempts; try again in ${retryAfter} s`, {
          headers: { 'retry-after': String(retryAfter) },
        })
      }
    }
  }

  // An address may fail more often than one account: people behind one NAT share it.
  const ADDRESS_FACTOR = 4

  async function recordFailure(subject: string) {
    const t = now()
    const windowMs = deps.login.lockSeconds * 1000
    const previous = await accounts.loginFailures(subject)
    const failures = previous && t - previous.updatedAt < windowMs ? previous.failures + 1 : 1
    const threshold = subject.startsWith('ip:') ? deps.login.maxFailures * ADDRESS_FACTOR : deps.login.maxFailures
    const lockedUntil = failures >= threshold ? t + windowMs : 0
    await accounts.saveLoginFailures(subject, failures, lockedUntil, t)
    if (lockedUntil) logger.warn('sign-in locked', { subject: subject.replace(/^email:.*/, 'email:[account]'), failures })
  }

  async function login(email: string, password: string, clientIp: string): Promise<TokenPair> {
    const normalised = normaliseEmail(email)
    const subjects = [`email:${normalised}`, `ip:${clientIp}`]
    await assertNotLocked(subjects)
    const user = await accounts.userByEmail(normalised)
    const ok = await Bun.password.verify(password, user?.passwordHash ?? (await decoyHash))
    if (!user || !user.passwordHash || !ok) {
      for (const s of subjects) await recordFailure(s)
      throw badCredentials()
    }
    for (const s of subjects) await accounts.clearLoginFailures(s)
    return issuePair(user)
  }

  async function refresh(refreshToken: string): Promise<TokenPair> {
    const row = await accounts.refreshTokenByHash(sha256(refreshToken))
    if (!row) throw badRefresh('unknown refresh token')
    if (row.revokedAt !== null) throw badRefresh('refresh token revoked')
    if (row.usedAt !== null || !(await accounts.consumeRefreshToken(row.id, now()))) {
      // A used token presented again means it leaked: end the whole session family.
      await accounts.revokeFamily(row.familyId, now())
      logger.warn('refresh token reuse; family revoked', { userId: row.userId })
      throw badRefresh('refresh token reuse detected; sign in again')
    }
    if (row.expiresAt <= now()) throw badRefresh('refresh token expired')
    const user = await accounts.userById(row.userId)
    if (!user) throw badRefresh('unknown refresh token')
    return issuePair(user, row.familyId)
  }

  async function logout(refreshToken: string): Promise<void> {
    const row = await accounts.refreshTokenByHash(sha256(refreshToken))
    if (row) await accounts.revokeFamily(row.familyId, now())
  }

  async function createAccount(input: { email: string; password: string; role: Role; orgId?: string; orgName?: string; plan?: string }) {
    const email = normaliseEmail(input.email)
    if (await accounts.userByEmail(email)) throw new AppError('conflict', `A user with email ${email} already exists`)
    const newOrgId = input.orgId ? undefined : (await accounts.createOrganization(input.orgName ?? email, input.plan ?? deps.defaultPlan)).id
    const user = await accounts.createUser({ orgId: (input.orgId ?? newOrgId)!, email, role: input.role, passwordHash: await hashPassword(input.password) })
    if (user) return user
    if (newOrgId) await accounts.deleteEmptyOrganization(newOrgId)
    throw new AppError('conflict', `A user with email ${email} already exists`)
  }

  async function register(email: string, password: string, organizationName?: string): Promise<TokenPair> {
    const user = await createAccount({ email, password, role: 'owner', orgName: organizationName })
    return issuePair(user)
  }

  async function principalFromExternal(token: string): Promise<{ principal: Principal; exp: number }> {
    const external = deps.external!
    const identity = await external.verifier.verify(token)
    let user = await accounts.userByExternalIdentity(identity.issuer, identity.subject)
    const claimedRole = identity.claims[external.roleClaim]
    if (!user) {
      const org = await accounts.createOrganization(identity.email ?? identity.subject, deps.defaultPlan)
      const email = normaliseEmail(identity.email ?? `${identity.subject}@${new URL(identity.issuer).host}`)
      const account = { orgId: org.id, role: isRole(claimedRole) ? claimedRole : 'owner', externalIssuer: identity.issuer, externalSubject: identity.subject } as const
      // The email may belong to a local account already; the external one then gets a unique alias.
      user =
        (await accounts.createUser({ ...account, email })) ??
        (await accounts.createUser({ ...account, email: `${crypto.randomUUID()}+${email}` }))!
      logger.info('external user created', { userId: user.id, issuer: identity.issuer })
    }
    const role = isRole(claimedRole) ? claimedRole : user.role
    const scopes = grantedScopes(role, identity.claims[external.scopesClaim])
    return {
      principal: { userId: user.id, orgId: user.orgId, role, scopes, source: 'external' },
      exp: Number(identity.claims.exp),
    }
  }

  /** Verifies a bearer token (ours or the identity provider's) and answers who it speaks for. */
  async function authenticate(token: string): Promise<Principal> {
    const cached = principals.get(token)
    if (cached && cached.exp * 1000 > now()) return cached.principal

    let issuer: unknown
    try {
      issuer = decodeJwt(token).iss
    } catch {
      throw invalidToken('malformed token')
    }
    let entry: { principal: Principal; exp: number }
    if (issuer === deps.issuer) {
      const claims = await tokens.verify(token)
      if (!isRole(claims.role)) throw invalidToken('malformed token')
      entry = {
        principal: { userId: claims.sub, orgId: claims.org, role: claims.role, scopes: grantedScopes(claims.role, claims.scope), source: 'local' },
        exp: claims.exp,
      }
    } else if (deps.external && issuer === deps.external.issuer) {
      entry = await principalFromExternal(token)
    } else {
      throw invalidToken('token from an unknown issuer')
    }
    if (principals.size >= PRINCIPAL_CACHE) principals.delete(principals.keys().next().value!)
    principals.set(token, entry)
    return entry.principal
  }

  /** Creates the first owner from ADMIN_EMAIL / ADMIN_PASSWORD when the service has no user yet. */
  async function ensureFirstOwner(admin: { email: string; password: string } | undefined): Promise<User | undefined> {
    if (!admin || (await accounts.countUsers()) > 0) return undefined
    try {
      const user = await createAccount({ email: admin.email, password: admin.password, role: 'owner', orgName: 'Default organisation' })
      logger.info('first owner created', { userId: user.id })
      return user
    } catch (err) {
      // Processes starting together: the one that loses the race finds the owner already there.
      if (err instanceof AppError && err.code === 'conflict') return undefined
      throw err
    }
  }

  return { login, refresh, logout, register, authenticate, createAccount, ensureFirstOwner }
}

export type AccessService = ReturnType<typeof createAccessService>
