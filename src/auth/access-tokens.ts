import type { ProtectedHeaderParameters, JWTPayload } from 'jose'
import { jose } from './jose.ts'
import { invalidToken, tokenRejection } from './token-errors.ts'
import type { Role, Scope } from './roles.ts'

/** Claims of an access token this service issues (RFC 9068 `at+jwt`). */
export interface AccessClaims {
  sub: string
  org: string
  role: Role
  scope: string
  jti: string
  /** The sign-in (refresh-token family) the token belongs to, so signing out can refuse it; absent from older tokens. */
  sid?: string
  iat: number
  exp: number
}

export interface AccessTokenOptions {
  /** HMAC key material (JWT_SECRET). */
  secret: string
  issuer: string
  audience: string
  /** Lifetime of issued tokens. Default 900 s. */
  ttlSeconds?: number
  now?: () => number
}

const TOKEN_TYPE = 'at+jwt'

/**
 * Issues and verifies HS256 access tokens; jose verifies with a key imported once. Repeat use is
 * made cheap by the access service's cache of verified tokens, which re-checks expiry every time.
 */
export function createAccessTokens(options: AccessTokenOptions) {
  const ttl = options.ttlSeconds ?? 900
  const now = options.now ?? Date.now
  const keyPromise = crypto.subtle.importKey('raw', new TextEncoder().encode(options.secret), { name: 'HMAC', hash: 'SHA-256' }, false, ['sign', 'verify'])

  async function issue(subject: { userId: string; orgId: string; role: Role; scopes: readonly Scope[]; sessionId?: string }) {
    const iat = Math.floor(now() / 1000)
    const exp = iat + ttl
    const claims = { org: subject.orgId, role: subject.role, scope: subject.scopes.join(' '), ...(subject.sessionId ? { sid: subject.sessionId } : {}) }
    const { SignJWT } = jose.loaded ?? (await jose())
    const token = await new SignJWT(claims)
      .setProtectedHeader({ alg: 'HS256', typ: TOKEN_TYPE })
      .setSubject(subject.userId)
      .setIssuer(options.issuer)
      .setAudience(options.audience)
      .setIssuedAt(iat)
      .setExpirationTime(exp)
      .setJti(crypto.randomUUID())
      .sign(await keyPromise)
    return { token, expiresAt: exp }
  }

  async function verify(token: string): Promise<AccessClaims> {
    const { decodeProtectedHeader, jwtVerify } = jose.loaded ?? (await jose())
    let header: ProtectedHeaderParameters
    try {
      header = decodeProtectedHeader(token)
    } catch {
      throw invalidToken('malformed token')
    }
    if (header.alg !== 'HS256') throw invalidToken('unsupported algorithm')
    if (header.typ !== TOKEN_TYPE) throw invalidToken('not an access token')
    let payload: JWTPayload
    try {
      ;({ payload } = await jwtVerify(token, await keyPromise, {
        algorithms: ['HS256'],
        issuer: options.issuer,
        audience: options.audience,
        typ: TOKEN_TYPE,
        requiredClaims: ['exp', 'sub', 'iat', 'jti'],
        currentDate: new Date(now()),
      }))
    } catch (err) {
      throw tokenRejection(err)
    }
    if (typeof payload.org !== 'string' || typeof payload.role !== 'string' || typeof payload.scope !== 'string') throw invalidToken('malformed token')
    if (payload.sid !== undefined && typeof payload.sid !== 'string') throw invalidToken('malformed token')
    return payload as unknown as AccessClaims
  }

  return { issue, verify, ttlSeconds: ttl }
}

export type AccessTokens = ReturnType<typeof createAccessTokens>
