import type { FetchImplementation, JWTVerifyGetKey, ProtectedHeaderParameters } from 'jose'
import { AppError } from '../errors.ts'
import { invalidToken, tokenRejection } from './token-errors.ts'
import { jose } from './jose.ts'

export interface ExternalTokenOptions {
  /** Issuer URL of the identity provider; a trailing slash is ignored. */
  issuer: string
  audience: string
  /** Allowlist of signing algorithms; symmetric ones and `none` are dropped even when listed. */
  algorithms?: string[]
  /** Default 30 s. */
  clockToleranceSeconds?: number
  /** Least time between two JWKS fetches caused by unknown key ids. Default 30 s. */
  jwksCooldownMs?: number
  /** Keys older than this are refetched before use. Default 10 minutes. */
  jwksCacheMaxAgeMs?: number
  fetch?: typeof fetch
}

export interface ExternalIdentity {
  issuer: string
  subject: string
  email?: string
  claims: Record<string, unknown>
}

const ASYMMETRIC_ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA']
const MAX_TOKEN_LENGTH = 16 * 1024
// Key ids are looked up in caches and logged; anything outside this shape is refused before it gets there.
const KEY_ID = /^[A-Za-z0-9._-]{1,128}$/
const UPSTREAM_TIMEOUT_MS = 5_000

function withoutTrailingSlash(url: string): string {
  return url.replace(/\/+$/, '')
}

/** Refuses, without any key lookup, tokens whose shape or header could only be an attack or garbage. */
function checkShape(token: string, algorithms: readonly string[], decodeProtectedHeader: (token: string) => ProtectedHeaderParameters): void {
  if (token.length > MAX_TOKEN_LENGTH || token.split('.').length !== 3) throw invalidToken('malformed token')
  let header: ProtectedHeaderParameters
  try {
    header = decodeProtectedHeader(token)
  } catch {
    throw invalidToken('malformed token')
  }
  if (typeof header.alg !== 'string' || !algorithms.includes(header.alg)) throw invalidToken('unsupported algorithm')
  if (typeof header.kid !== 'string' || !KEY_ID.test(header.kid)) throw invalidToken('malformed token')
  // No critical extension is understood here, so any is grounds to refuse (RFC 7515 §4.1.11).
  if (header.crit !== undefined) throw invalidToken('malformed token')
}

/**
 * Verifies access tokens of an external OpenID Connect provider against the keys it
 * publishes. Discovery happens on first use and is retried after a failure; jose
 * refetches the key set when an unknown key id appears, at most once per cooldown.
 */
export function createExternalTokenVerifier(options: ExternalTokenOptions) {
  const issuer = withoutTrailingSlash(options.issuer)
  const algorithms = (options.algorithms ?? ASYMMETRIC_ALGORITHMS).filter((alg) => ASYMMETRIC_ALGORITHMS.includes(alg))
  if (algorithms.length === 0) throw new Error('external tokens need at least one asymmetric algorithm')
  const clockTolerance = options.clockToleranceSeconds ?? 30
  const fetchImpl = options.fetch ?? fetch
  let jwksFetches = 0
  let keySet: Promise<JWTVerifyGetKey> | undefined

  async function discover(): Promise<JWTVerifyGetKey> {
    let document: { issuer?: unknown; jwks_uri?: unknown }
    try {
      const response = await fetchImpl(`${issuer}/.well-known/openid-configuration`, {
        headers: { accept: 'application/json' },
        redirect: 'manual',
        signal: AbortSignal.timeout(UPSTREAM_TIMEOUT_MS),
      })
      if (response.status !== 200) throw new Error(`discovery answered ${response.status}`)
      document = (await response.json()) as typeof document
    } catch (err) {
      throw new AppError('upstream_error', 'identity provider discovery failed', { cause: err })
    }
    // OIDC Discovery §4.3: a document naming another issuer must not be used.
    if (typeof document.issuer !== 'string' || withoutTrailingSlash(document.issuer) !== issuer)
      throw new AppError('upstream_error', 'identity provider discovery names another issuer')
    let jwksUri: URL
    try {
      jwksUri = new URL(String(document.jwks_uri))
    } catch {
      throw new AppError('upstream_error', 'identity provider discovery has no jwks_uri')
    }
    const allowedProtocols = issuer.startsWith('https:') ? ['https:'] : ['http:', 'https:']
    if (!allowedProtocols.includes(jwksUri.protocol)) throw new AppError('upstream_error', 'identity provider jwks_uri is not https')
    const { createRemoteJWKSet, customFetch } = jose.loaded ?? (await jose())
    return createRemoteJWKSet(jwksUri, {
      cooldownDuration: options.jwksCooldownMs ?? 30_000,
      cacheMaxAge: options.jwksCacheMaxAgeMs ?? 10 * 60_000,
      timeoutDuration: UPSTREAM_TIMEOUT_MS,
      [customFetch]: ((url, init) => {
        jwksFetches++
        return fetchImpl(url, init)
      }) satisfies FetchImplementation,
    })
  }

  function keys(): Promise<JWTVerifyGetKey> {
    keySet ??= discover().catch((err) => {
      keySet = undefined
      throw err
    })
    return keySet
  }

  async function verify(token: string): Promise<ExternalIdentity> {
    const { decodeProtectedHeader, jwtVerify } = jose.loaded ?? (await jose())
    checkShape(token, algorithms, decodeProtectedHeader)
    try {
      const { payload } = await jwtVerify(token, await keys(), {
        algorithms,
        // Providers differ on the trailing slash of iss; either spelling of the configured issuer is the same issuer.
        issuer: [issuer, `${issuer}/`],
        audience: options.audience,
        clockTolerance,
        requiredClaims: ['exp', 'sub'],
      })
      if (typeof payload.sub !== 'string' || payload.sub === '') throw invalidToken('invalid sub claim')
      return {
        issuer,
        subject: payload.sub,
        ...(typeof payload.email === 'string' ? { email: payload.email } : {}),
        claims: payload,
      }
    } catch (err) {
      throw tokenRejection(err)
    }
  }

  return { verify, jwksFetches: () => jwksFetches }
}

export type ExternalTokenVerifier = ReturnType<typeof createExternalTokenVerifier>
