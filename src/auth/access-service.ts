import { AppError } from '../errors.ts'
import type { Logger } from '../log.ts'
import type { AccountStore, User } from './account-store.ts'
import { isApiKey, parseApiKey, secretMatches, type ApiKeyStore } from './api-keys.ts'
import type { AccessTokens } from './access-tokens.ts'
import { revokedSessionsInProcess, type RevokedSessions } from './revoked-sessions.ts'
import { invalidToken } from './token-errors.ts'
import { jose } from './jose.ts'
import { grantedScopes, isRole, type Role, type Scope } from './roles.ts'

/** Who is calling, as every guarded route sees it. */
export interface Principal {
  userId: string
  orgId: string
  role: Role
  scopes: readonly Scope[]
  /** `local` for tokens this service issued, `external` for the identity provider's, `api_key` for a personal API key. */
  source: 'local' | 'external' | 'api_key'
  /** The sign-in (refresh-token family) a local access token belongs to. */
  sessionId?: string
  /** The personal API key the request was made with. */
  apiKeyId?: string
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

/** How an identity provider's tokens map to users, organisations, roles and scopes (the OIDC_* settings). */
export interface ExternalIdentityPolicy {
  verifier: ExternalVerifier
  issuer: string
  scopesClaim: string
  roleClaim: string
  /** Scopes of a token without a scope claim, before its role limits them. */
  defaultScopes: readonly Scope[]
  /** Role of a user the first token of a subject creates. */
  defaultRole: Role
  /** Roles the role claim may choose; a claim naming another is ignored. */
  claimableRoles: readonly Role[]
  /** Claim naming the organisation a new user joins; unset, none is named. */
  orgClaim?: string
  /** Whether a new user whose organisation is unknown, or unnamed, gets a new one instead of a refusal. */
  createOrgs: boolean
}

/** The key an organisation named by an identity provider is stored under: issuer, claim and value together, so none can collide. */
export function externalOrgKey(issuer: string, claim: string, value: string): string {
  return JSON.stringify([issuer, claim, value])
}

export interface AccessServiceDeps {
  accounts: AccountStore
  tokens: AccessTokens
  logger: Logger
  issuer: string
  refreshTtlSeconds: number
  defaultPlan: string
  login: { maxFailures: number; lockSeconds: number; passwordHashMemoryKib?: number }
  external?: ExternalIdentityPolicy
  /** Signed-out sessions, shared between processes; in-process only when not given. */
  revoked?: RevokedSessions
  /** Personal API keys; without them a key is refused like any unknown token. */
  apiKeys?: ApiKeyStore
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
  return `rt_${Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString('base64url')}`
}

export function normaliseEmail(email: string): string {
  return email.trim().toLowerCase()
}

/** argon2id with two passes over `memoryKib` (PASSWORD_HASH_MEMORY_KIB); a hash names its own cost, so any verifies. */
export function hashPassword(password: string, memoryKib = 65_536): Promise<string> {
  return Bun.password.hash(password, { algorithm: 'argon2id', memoryCost: memoryKib, timeCost: 2 })
}

const badCredentials = () => new AppError('invalid_credentials', 'Email or password is wrong')
const badRefresh = (reason: string) => new AppError('invalid_token', reason)

// Deny entries outlive the last access token of their session by this much, for clocks that disagree.
const CLOCK_MARGIN_MS = 60_000

interface VerifiedToken {
  principal: Principal
  /** Until when (s) the cached verification holds. */
  exp: number
  /** The sign-in the token belongs to, when it is one of ours (`key:<id>` for an API key). */
  sessionId?: string
  /** When the credential itself expires (ms), when that is later than `exp`: an API key, rechecked more often. */
  expiresAt?: number
}

/** What the revoked-sessions list calls an API key, so a revocation reaches every process as a logout does. */
export const apiKeySession = (keyId: string) => `key:${keyId}`

// A key's verification is cached this long: its owner's role, a deletion or a revocation are read again after it.
const API_KEY_RECHECK_MS = 30_000

export const sessionRequired = () =>
  new AppError('session_required', 'This route manages the account itself: call it with a signed-in access token, not an API key')

const signedOut = () => invalidToken('token revoked')

/** Login, refresh rotation, logout, registration and bearer-token authentication. */
export function createAccessService(deps: AccessServiceDeps) {
  const { accounts, tokens, logger } = deps
  const now = deps.now ?? Date.now
  const revoked = deps.revoked ?? revokedSessionsInProcess({ logger, now })
  // Verifying against a real hash when the email is unknown keeps both answers equally slow.
  const decoyHash = hashPassword(crypto.randomUUID(), deps.login.passwordHashMemoryKib)
  // Verified tokens and who they speak for; bounded, and expiry is checked again on every use.
  const principals = new Map<string, VerifiedToken>()
  const PRINCIPAL_CACHE = 10_000

  /**
   * A new access and refresh token of `familyId` (a new family when none is given). The refresh token is stored
   * first, then the family is checked not to have ended, and only then is the access token signed: a logout marks
   * the family ended before it revokes the family's tokens, so whichever way the two interleave, a token stored
   * here is either seen by the logout's revocation or refused by this check.
   */
  async function issuePair(user: User, familyId: string = crypto.randomUUID()): Promise<TokenPair> {
    const scopes = grantedScopes(user.role)
    const refreshToken = newRefreshToken()
    const tokenHash = sha256(refreshToken)
    await accounts.insertRefreshToken({ familyId, userId: user.id, tokenHash, expiresAt: now() + deps.refreshTtlSeconds * 1000 })
    if (await accounts.sessionEnded(familyId)) {
      await accounts.revokeRefreshToken(tokenHash, now())
      throw badRefresh('refresh token revoked')
    }
    const access = await tokens.issue({ userId: user.id, orgId: user.orgId, role: user.role, scopes, sessionId: familyId })
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
    if (!user?.passwordHash || !ok) {
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
      await endSession(row.familyId)
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
    if (row) await endSession(row.familyId)
  }

  /**
   * Ends a sign-in session for good: marked ended first (a refresh racing this checks the mark after storing its
   * token, see issuePair), then its access tokens refused until the last of them would have expired, then its
   * refresh tokens revoked, the one a racing refresh stored included.
   */
  async function endSession(familyId: string): Promise<void> {
    await accounts.endSession(familyId, now())
    await revoked.revoke(familyId, now() + tokens.ttlSeconds * 1000 + CLOCK_MARGIN_MS)
    await accounts.revokeFamily(familyId, now())
  }

  /**
   * Signs the user out everywhere: every session of theirs ended as a logout ends one, so their access tokens are
   * refused in every process and their open agent connections close. Answers how many sessions there were.
   * `except` keeps one session (the caller's, after a password change).
   */
  async function endSessionsOf(userId: string, options: { except?: string } = {}): Promise<number> {
    const families = (await accounts.sessionFamiliesOf(userId)).filter((familyId) => familyId !== options.except)
    for (const familyId of families) await endSession(familyId)
    return families.length
  }

  /**
   * Refuses an API key everywhere at once, as a logout refuses a session's access tokens: what a revocation (its row
   * already marked) and a deletion call, so a key verified before in another process stops there too.
   */
  async function endApiKey(keyId: string, expiresAt: number): Promise<void> {
    await revoked.revoke(apiKeySession(keyId), Math.max(expiresAt, now()) + CLOCK_MARGIN_MS)
  }

  /** Refuses every live API key of the user (their deletion): answers how many there were. */
  async function endApiKeysOf(userId: string): Promise<number> {
    const live = (await deps.apiKeys?.liveOf(userId, now())) ?? []
    for (const key of live) await endApiKey(key.id, key.expiresAt)
    return live.length
  }

  /**
   * Sets a new password, only if the stored one is still `user.passwordHash` (of two changes racing, one wins), and
   * ends every session of the user but `keep`. False when the password changed meanwhile.
   */
  async function replacePassword(user: User, newPassword: string, keep?: string): Promise<boolean> {
    if (!user.passwordHash) return false
    if (!(await accounts.replacePassword(user.id, user.passwordHash, await hashPassword(newPassword, deps.login.passwordHashMemoryKib)))) return false
    await endSessionsOf(user.id, { except: keep })
    logger.info('password changed', { userId: user.id, keptSession: keep !== undefined })
    return true
  }

  /**
   * The signed-in caller changes their password: the current one must be right (a wrong one counts toward the
   * account's and the address's sign-in lock, as a failed login does), and every other session of theirs ends.
   */
  async function changePassword(principal: Principal, currentPassword: string, newPassword: string, clientIp: string): Promise<void> {
    if (principal.source === 'api_key') throw sessionRequired()
    const user = await accounts.userById(principal.userId)
    if (!user) throw invalidToken('unknown user')
    if (!user.passwordHash) throw new AppError('forbidden', 'This account signs in through the identity provider: its password is changed there')
    const subjects = [`email:${user.email}`, `ip:${clientIp}`]
    await assertNotLocked(subjects)
    if (!(await Bun.password.verify(currentPassword, user.passwordHash))) {
      for (const s of subjects) await recordFailure(s)
      throw new AppError('wrong_password', 'currentPassword is not the password of this account')
    }
    for (const s of subjects) await accounts.clearLoginFailures(s)
    if (!(await replacePassword(user, newPassword, principal.sessionId)))
      throw new AppError('conflict', 'The password was changed by another request meanwhile; sign in again')
  }

  async function createAccount(input: { email: string; password: string; role: Role; orgId?: string; orgName?: string; plan?: string }) {
    const email = normaliseEmail(input.email)
    if (await accounts.userByEmail(email)) throw new AppError('conflict', `A user with email ${email} already exists`)
    const newOrgId = input.orgId ? undefined : (await accounts.createOrganization(input.orgName ?? email, input.plan ?? deps.defaultPlan)).id
    const user = await accounts.createUser({
      orgId: (input.orgId ?? newOrgId)!,
      email,
      role: input.role,
      passwordHash: await hashPassword(input.password, deps.login.passwordHashMemoryKib),
    })
    if (user) return user
    if (newOrgId) await accounts.deleteEmptyOrganization(newOrgId)
    throw new AppError('conflict', `A user with email ${email} already exists`)
  }

  async function register(email: string, password: string, organizationName?: string): Promise<TokenPair> {
    const user = await createAccount({ email, password, role: 'owner', orgName: organizationName })
    return issuePair(user)
  }

  /** The organisation a new external user joins; a refusal naming what the operator must configure otherwise. */
  async function organizationFor(identity: ExternalIdentity) {
    const external = deps.external!
    const named = external.orgClaim ? identity.claims[external.orgClaim] : undefined
    if (named !== undefined && typeof named !== 'string' && typeof named !== 'number')
      throw new AppError('forbidden', `The ${external.orgClaim} claim must name one organisation (a string), so this account cannot be created`)
    if (named !== undefined && String(named) !== '') {
      const key = externalOrgKey(identity.issuer, external.orgClaim!, String(named))
      const linked = await accounts.organizationByExternalKey(key)
      if (linked) return linked
      if (external.createOrgs) return accounts.organizationForExternalKey(key, String(named), deps.defaultPlan)
      throw new AppError(
        'forbidden',
        `No organisation here is linked to ${external.orgClaim} "${named}", so this account cannot be created: an operator links one (admin orgs link --org <id> --external "${named}") or sets OIDC_CREATE_ORGS=true`,
      )
    }
    if (external.createOrgs) return accounts.createOrganization(identity.email ?? identity.subject, deps.defaultPlan)
    throw new AppError(
      'forbidden',
      external.orgClaim
        ? `The token has no ${external.orgClaim} claim naming an organisation, so this account cannot be created: the identity provider must send it, or an operator sets OIDC_CREATE_ORGS=true`
        : 'No organisation is configured for external accounts, so this account cannot be created: an operator sets OIDC_ORG_CLAIM to the claim naming the organisation, or OIDC_CREATE_ORGS=true',
    )
  }

  async function principalFromExternal(token: string): Promise<VerifiedToken> {
    const external = deps.external!
    const identity = await external.verifier.verify(token)
    let user = await accounts.userByExternalIdentity(identity.issuer, identity.subject)
    const claimed = identity.claims[external.roleClaim]
    // A role the operator did not make claimable (owner, by default) is ignored, not refused: the stored role applies.
    const claimedRole = isRole(claimed) && external.claimableRoles.includes(claimed) ? claimed : undefined
    if (!user) {
      const org = await organizationFor(identity)
      const email = normaliseEmail(identity.email ?? `${identity.subject}@${new URL(identity.issuer).host}`)
      const account = { orgId: org.id, role: external.defaultRole, externalIssuer: identity.issuer, externalSubject: identity.subject } as const
      // The email may belong to a local account already; the external one then gets a unique alias.
      user = (await accounts.createUser({ ...account, email })) ?? (await accounts.createUser({ ...account, email: `${crypto.randomUUID()}+${email}` }))!
      logger.info('external user created', { userId: user.id, orgId: org.id, issuer: identity.issuer })
    }
    const role = claimedRole ?? user.role
    const scopes = grantedScopes(role, identity.claims[external.scopesClaim], external.defaultScopes)
    return {
      principal: { userId: user.id, orgId: user.orgId, role, scopes, source: 'external' },
      exp: Number(identity.claims.exp),
    }
  }

  /**
   * Who a token verified before speaks for, without waiting: undefined unless it is cached, unexpired and its
   * session not signed out (authenticate then verifies it again, or says why not).
   */
  function knownPrincipal(token: string): Principal | undefined {
    const cached = principals.get(token)
    if (cached === undefined || cached.exp * 1000 <= now()) return undefined
    return cached.sessionId !== undefined && revoked.has(cached.sessionId) ? undefined : cached.principal
  }

  /**
   * Who an API key speaks for: its owner as they are now, with the key's scopes their role still grants. An unknown
   * id and a wrong secret are refused alike, after the same constant-time comparison.
   */
  async function principalFromApiKey(token: string): Promise<VerifiedToken> {
    const parsed = parseApiKey(token)
    if (!parsed || !deps.apiKeys) throw invalidToken('unknown API key')
    const key = await deps.apiKeys.forVerification(parsed.id)
    const matches = secretMatches(parsed.secret, key?.secretHash)
    // The owner gone (deleted with their keys, or between the two) reads as an unknown key.
    if (!key || !matches || !isRole(key.ownerRole)) throw invalidToken('unknown API key')
    const t = now()
    if (key.revokedAt !== null || revoked.has(apiKeySession(key.id))) throw invalidToken('API key revoked')
    if (key.expiresAt <= t) throw invalidToken('API key expired')
    deps.apiKeys.touch(key.id, t).catch((err) => logger.warn('API key: recording its use failed', { err }))
    const role = key.ownerRole
    return {
      principal: {
        userId: key.userId,
        orgId: key.orgId,
        role,
        scopes: grantedScopes(role, key.scopes),
        source: 'api_key',
        apiKeyId: key.id,
      },
      exp: Math.floor(Math.min(key.expiresAt, t + API_KEY_RECHECK_MS) / 1000),
      sessionId: apiKeySession(key.id),
      expiresAt: key.expiresAt,
    }
  }

  /** Verifies a bearer token (ours, the identity provider's, or an API key) and answers who it speaks for. */
  async function authenticate(token: string): Promise<Principal> {
    const cached = principals.get(token)
    if (cached && cached.exp * 1000 > now()) {
      if (cached.sessionId !== undefined && revoked.has(cached.sessionId)) throw cached.principal.apiKeyId ? invalidToken('API key revoked') : signedOut()
      return cached.principal
    }
    if (isApiKey(token)) return remember(token, await principalFromApiKey(token))

    const { decodeJwt } = jose.loaded ?? (await jose())
    let issuer: unknown
    try {
      issuer = decodeJwt(token).iss
    } catch {
      throw invalidToken('malformed token')
    }
    let entry: VerifiedToken
    if (issuer === deps.issuer) {
      const claims = await tokens.verify(token)
      if (!isRole(claims.role)) throw invalidToken('malformed token')
      if (claims.sid !== undefined && revoked.has(claims.sid)) throw signedOut()
      entry = {
        principal: {
          userId: claims.sub,
          orgId: claims.org,
          role: claims.role,
          scopes: grantedScopes(claims.role, claims.scope),
          source: 'local',
          ...(claims.sid === undefined ? {} : { sessionId: claims.sid }),
        },
        exp: claims.exp,
        sessionId: claims.sid,
      }
    } else if (deps.external && issuer === deps.external.issuer) {
      entry = await principalFromExternal(token)
    } else {
      throw invalidToken('token from an unknown issuer')
    }
    return remember(token, entry)
  }

  function remember(token: string, entry: VerifiedToken): Principal {
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

  /** The sign-in failure counting, for other secrets people type (the one-time setup code): one subject per thing locked. */
  const attempts = { assertNotLocked, recordFailure, clear: (subject: string) => accounts.clearLoginFailures(subject) }

  /**
   * The sign-in a token verified by `authenticate` belongs to and when it expires: what a long-lived connection
   * opened with it checks again while it stays open.
   */
  function grantOf(token: string): { sessionId?: string; expiresAt: number } | undefined {
    const entry = principals.get(token)
    return entry && { ...(entry.sessionId === undefined ? {} : { sessionId: entry.sessionId }), expiresAt: entry.expiresAt ?? entry.exp * 1000 }
  }

  /** Whether the sign-in session was ended (a logout, a refresh token used twice), here or in another process. */
  const sessionEnded = (sessionId: string) => revoked.has(sessionId)

  /** The role each of `userIds` has now; a removed user has none. */
  const rolesOf = (userIds: readonly string[]) => accounts.rolesOf(userIds)

  return {
    login,
    refresh,
    logout,
    endSessionsOf,
    endApiKey,
    endApiKeysOf,
    changePassword,
    replacePassword,
    register,
    authenticate,
    knownPrincipal,
    grantOf,
    sessionEnded,
    rolesOf,
    createAccount,
    ensureFirstOwner,
    attempts,
  }
}

export type AccessService = ReturnType<typeof createAccessService>
