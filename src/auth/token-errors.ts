import { AppError } from '../errors.ts'
import { jose } from './jose.ts'

/** 401 with the RFC 6750 challenge naming the reason; never the token itself. */
export function invalidToken(reason: string): AppError {
  return new AppError('invalid_token', reason, {
    headers: { 'www-authenticate': `Bearer realm="api", error="invalid_token", error_description="${reason}"` },
  })
}

// jose errors carry the claims set; only the reason leaves here, so no token content is echoed.
export function tokenRejection(err: unknown): AppError {
  if (err instanceof AppError) return err
  // Only jose throws its errors, so until it has loaded none can be one.
  const joseErrors = jose.loaded?.errors
  if (joseErrors === undefined) return new AppError('upstream_error', 'identity provider keys unavailable', { cause: err })
  if (err instanceof joseErrors.JWTExpired) return invalidToken('token expired')
  if (err instanceof joseErrors.JWTClaimValidationFailed) {
    if (err.reason === 'missing') return invalidToken(`missing ${err.claim} claim`)
    if (err.claim === 'aud') return invalidToken('wrong audience')
    if (err.claim === 'iss') return invalidToken('wrong issuer')
    if (err.claim === 'nbf') return invalidToken('token not yet valid')
    return invalidToken(`invalid ${err.claim} claim`)
  }
  if (err instanceof joseErrors.JOSEAlgNotAllowed || err instanceof joseErrors.JOSENotSupported) return invalidToken('unsupported algorithm')
  if (err instanceof joseErrors.JWKSNoMatchingKey) return invalidToken('unknown signing key')
  if (err instanceof joseErrors.JWKSMultipleMatchingKeys) return invalidToken('ambiguous signing key')
  if (err instanceof joseErrors.JWSSignatureVerificationFailed) return invalidToken('bad signature')
  if (err instanceof joseErrors.JWSInvalid || err instanceof joseErrors.JWTInvalid) return invalidToken('malformed token')
  if (err instanceof joseErrors.JWKSTimeout) return new AppError('upstream_timeout', 'identity provider keys timed out', { cause: err })
  // What is left is a key source failing (unreachable, non-200, bad JWKS), not the token.
  return new AppError('upstream_error', 'identity provider keys unavailable', { cause: err })
}
