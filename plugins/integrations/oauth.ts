/**
 * The OAuth 2.0 client side: random state and PKCE (RFC 7636, S256), the authorize URL, and the token
 * endpoint (authorization_code and refresh_token grants, RFC 6749). Token endpoint failures carry the
 * provider's error code only: a provider's description could echo what was sent.
 */
import { AppError } from '../../src/errors.ts'
import type { HttpClient } from '../../src/http.ts'
import { asRecord, asText, basicAuthorization, type OAuthClient, type Provider } from './providers/provider.ts'

/** 32 random bytes, base64url: a state, a PKCE verifier (43 characters) or a browser binding. */
export const randomToken = () => Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString('base64url')

export async function sha256(text: string): Promise<Uint8Array> {
  return new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(text)))
}

export const sha256Hex = async (text: string) => Buffer.from(await sha256(text)).toString('hex')

/** The S256 code challenge of a verifier: base64url(SHA-256(verifier)). */
export const codeChallenge = async (verifier: string) => Buffer.from(await sha256(verifier)).toString('base64url')

export function authorizationUrl(
  provider: Provider,
  client: OAuthClient,
  flow: { state: string; challenge: string; redirectUri: string; scopes: readonly string[] },
): string {
  const url = new URL(provider.endpoints.authorizeUrl)
  const { definition } = provider
  const params: Record<string, string> = {
    ...definition.authorizeParams,
    response_type: 'code',
    client_id: client.clientId,
    redirect_uri: flow.redirectUri,
    state: flow.state,
    code_challenge: flow.challenge,
    code_challenge_method: 'S256',
  }
  if (flow.scopes.length > 0) params.scope = flow.scopes.join(definition.scopeSeparator ?? ' ')
  for (const [name, value] of Object.entries(params)) url.searchParams.set(name, value)
  return url.toString()
}

/** What a token endpoint granted. Times are epoch milliseconds. */
export interface GrantedTokens {
  accessToken: string
  refreshToken?: string
  tokenType: string
  expiresAt?: number
  refreshExpiresAt?: number
  /** Undefined when the answer has no `scope` (the requested ones were granted, RFC 6749 5.1). */
  scopes?: string[]
}

/**
 * The token endpoint refused: `error` is the OAuth error code (invalid_grant...). `permanent` says
 * whether asking again can help: a refusal is permanent, a 5xx or 429 is not.
 */
export class TokenEndpointError extends Error {
  constructor(
    readonly error: string,
    readonly permanent: boolean,
    readonly status: number,
  ) {
    super(`the token endpoint answered ${status} ${error}`)
    this.name = 'TokenEndpointError'
  }
}

const OAUTH_ERROR = /^[\x20-\x21\x23-\x5B\x5D-\x7E]{1,64}$/

async function readTokenAnswer(response: Response): Promise<Record<string, unknown>> {
  const text = await response.text()
  // GitHub answers form-encoded unless asked for JSON; some servers ignore Accept. Both are read.
  if ((response.headers.get('content-type') ?? '').includes('application/x-www-form-urlencoded')) return Object.fromEntries(new URLSearchParams(text))
  try {
    return asRecord(JSON.parse(text))
  } catch {
    return {}
  }
}

function parseScopes(value: unknown): string[] | undefined {
  const text = asText(value)
  return text === undefined ? undefined : text.split(/[\s,]+/).filter(Boolean)
}

function expiry(value: unknown, now: number): number | undefined {
  const seconds = typeof value === 'number' ? value : typeof value === 'string' && /^\d+$/.test(value) ? Number(value) : undefined
  return seconds === undefined || seconds <= 0 ? undefined : now + seconds * 1000
}

/**
 * One call to the token endpoint. Never retried: a code or a rotating refresh token is single-use, and
 * a repeated request after a lost answer would spend it twice.
 */
async function tokenRequest(
  http: HttpClient,
  provider: Provider,
  client: OAuthClient,
  grant: Record<string, string>,
  now: () => number,
): Promise<GrantedTokens> {
  const form = new URLSearchParams(grant)
  const headers: Record<string, string> = { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' }
  if (provider.definition.clientAuth === 'basic') headers.authorization = basicAuthorization(client)
  else {
    form.set('client_id', client.clientId)
    form.set('client_secret', client.clientSecret)
  }
  const label = provider.definition.label
  let response: Response
  try {
    response = await http.request(provider.endpoints.tokenUrl, { method: 'POST', headers, body: form.toString(), retries: 0, upstream: label })
  } catch (error) {
    if (error instanceof AppError) throw new AppError(error.code, error.message, { extensions: { provider: provider.definition.id } })
    throw error
  }
  const body = await readTokenAnswer(response)
  // GitHub answers refusals with 200 and an `error` member, so the member decides, not the status alone.
  const error = asText(body.error)
  const accessToken = asText(body.access_token)
  if (!response.ok || error !== undefined || !accessToken) {
    const code = error && OAUTH_ERROR.test(error) ? error : response.ok ? 'invalid_response' : `http_${response.status}`
    const transient = response.status >= 500 || response.status === 429
    throw new TokenEndpointError(code, !transient, response.status)
  }
  const at = now()
  return {
    accessToken,
    refreshToken: asText(body.refresh_token) || undefined,
    tokenType: asText(body.token_type) ?? 'bearer',
    expiresAt: expiry(body.expires_in, at),
    refreshExpiresAt: expiry(body.refresh_token_expires_in, at),
    scopes: parseScopes(body.scope),
  }
}

export function exchangeCode(
  http: HttpClient,
  provider: Provider,
  client: OAuthClient,
  flow: { code: string; verifier: string; redirectUri: string },
  now: () => number = Date.now,
): Promise<GrantedTokens> {
  return tokenRequest(
    http,
    provider,
    client,
    { grant_type: 'authorization_code', code: flow.code, redirect_uri: flow.redirectUri, code_verifier: flow.verifier },
    now,
  )
}

export function refreshGrant(
  http: HttpClient,
  provider: Provider,
  client: OAuthClient,
  refreshToken: string,
  now: () => number = Date.now,
): Promise<GrantedTokens> {
  return tokenRequest(http, provider, client, { grant_type: 'refresh_token', refresh_token: refreshToken }, now)
}
