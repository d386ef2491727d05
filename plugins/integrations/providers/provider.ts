/**
 * What an OAuth provider module declares, and the small helpers the modules share. A module is data
 * (label, endpoints, how the client authenticates) plus two short functions: how to verify a token
 * against the provider's API, and how to revoke a grant.
 */

export interface ProviderEndpoints {
  /** Where the browser is sent to authorise. */
  readonly authorizeUrl: string
  /** Where codes and refresh tokens are exchanged. */
  readonly tokenUrl: string
  /** Base of the provider's API, for verification (GitHub: https://api.github.com). */
  readonly apiUrl: string
  /** Revocation endpoint, where the provider has one at its own address. */
  readonly revokeUrl?: string
}

/** The OAuth app registered at the provider. */
export interface OAuthClient {
  readonly clientId: string
  readonly clientSecret: string
}

/** A provider's API answer: status, headers and the body parsed as JSON (undefined when it is not JSON). */
export interface ApiAnswer {
  status: number
  headers: Headers
  body: unknown
}

/**
 * Calls to the provider's API with the connection's token. A 401 throws TokenRejected; other failures
 * throw the service's upstream errors; anything else is answered.
 */
export interface ProviderApi {
  get(pathOrUrl: string): Promise<ApiAnswer>
}

/** The provider said the token is no good (401): revoked, expired or never valid. */
export class TokenRejected extends Error {
  constructor(readonly providerMessage: string) {
    super(`the provider refused the token: ${providerMessage}`)
    this.name = 'TokenRejected'
  }
}

export interface ConnectedAccount {
  id: string
  name: string
  /** The account's page at the provider, where there is one. */
  url?: string
}

export interface Verification {
  account: ConnectedAccount
  /** Scopes the provider reports for the token; undefined when it does not say (the granted ones are kept). */
  scopes?: string[]
  /** Provider-specific details shown in the status (organisations, avatar...). */
  metadata: Record<string, unknown>
}

export interface HeldTokens {
  accessToken: string
  refreshToken?: string
}

/** A revocation call to make, or undefined when there is nothing to revoke with. */
export interface RevocationCall {
  url: string
  init: RequestInit
}

export interface ProviderDefinition {
  /** The path segment: /api/integrations/<id>/... */
  readonly id: string
  readonly label: string
  readonly kind: 'builtin' | 'generic'
  /** Settings that configure the provider, named when it is not configured. */
  readonly variables: readonly string[]
  /** How the client authenticates at the token endpoint: HTTP Basic, or client_id/client_secret in the form. */
  readonly clientAuth: 'basic' | 'body'
  /** Joins requested scopes in the authorize URL. Default a space (RFC 6749). */
  readonly scopeSeparator?: string
  /** Extra query parameters of the authorize URL. */
  readonly authorizeParams?: Readonly<Record<string, string>>
  /** Headers every API call carries (GitHub wants a User-Agent and its media type). */
  readonly apiHeaders?: Readonly<Record<string, string>>
  verify(api: ProviderApi): Promise<Verification>
  /** Undefined when the provider offers no revocation. */
  revocation?(tokens: HeldTokens, client: OAuthClient, endpoints: ProviderEndpoints): RevocationCall | undefined
}

/** A provider as the service uses it: its module, where it lives, and its app when configured. */
export interface Provider {
  readonly definition: ProviderDefinition
  readonly endpoints: ProviderEndpoints
  /** Undefined when its settings are missing: the provider answers 503 not_configured. */
  readonly client: OAuthClient | undefined
  /** Scopes asked for when the caller names none. */
  readonly scopes: readonly string[]
}

export const basicAuthorization = (client: OAuthClient) =>
  // RFC 6749 section 2.3.1: both parts are form-encoded before joining.
  `Basic ${Buffer.from(`${encodeURIComponent(client.clientId)}:${encodeURIComponent(client.clientSecret)}`).toString('base64')}`

export const asRecord = (value: unknown): Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : {}

export const asText = (value: unknown): string | undefined => (typeof value === 'string' ? value : typeof value === 'number' ? String(value) : undefined)

/** A member of a JSON object by dotted path (`user.username`). */
export function pick(value: unknown, path: string): unknown {
  let at: unknown = value
  for (const key of path.split('.')) at = asRecord(at)[key]
  return at
}
