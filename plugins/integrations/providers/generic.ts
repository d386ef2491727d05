/**
 * Generic OAuth 2.0 providers, configured entirely from OAUTH_PROVIDERS (a JSON object keyed by
 * provider id), so GitLab, Vercel or Netlify need no code. For example:
 *
 *   {"gitlab": {"label": "GitLab", "clientId": "...", "clientSecret": "...",
 *     "authorizeUrl": "https://gitlab.com/oauth/authorize", "tokenUrl": "https://gitlab.com/oauth/token",
 *     "revokeUrl": "https://gitlab.com/oauth/revoke", "accountUrl": "https://gitlab.com/api/v4/user",
 *     "accountName": "username", "scopes": ["read_user", "read_repository"]}}
 */
import { AppError } from '../../../src/errors.ts'
import { asText, basicAuthorization, pick, type ProviderDefinition } from './provider.ts'

export interface GenericProviderSettings {
  readonly id: string
  readonly label: string
  readonly clientId: string
  readonly clientSecret: string
  readonly authorizeUrl: string
  readonly tokenUrl: string
  /** RFC 7009 revocation endpoint; without it, disconnecting only forgets the tokens. */
  readonly revokeUrl?: string
  /** GET with the token to verify it and name the account. */
  readonly accountUrl: string
  /** Dotted path of the account id in the accountUrl answer. Default `id`. */
  readonly accountId: string
  /** Dotted path of the account name; default the first of username, login, name, email. */
  readonly accountName?: string
  readonly scopes: readonly string[]
  /** Default a space. */
  readonly scopeSeparator: string
  /** Default `body` (client_id and client_secret in the form). */
  readonly clientAuth: 'basic' | 'body'
  readonly authorizeParams: Readonly<Record<string, string>>
}

const ID = /^[a-z][a-z0-9-]{0,31}$/
const FIELDS = new Set([
  'label',
  'clientId',
  'clientSecret',
  'authorizeUrl',
  'tokenUrl',
  'revokeUrl',
  'accountUrl',
  'accountId',
  'accountName',
  'scopes',
  'scopeSeparator',
  'clientAuth',
  'authorizeParams',
])

/**
 * Reads OAUTH_PROVIDERS. Every problem is reported (each naming the provider and field) rather than
 * the first, so one start-up shows all that needs fixing.
 */
export function parseGenericProviders(raw: string | undefined, reservedIds: readonly string[]): { providers: GenericProviderSettings[]; problems: string[] } {
  if (raw === undefined || raw.trim() === '') return { providers: [], problems: [] }
  let parsed: unknown
  try {
    parsed = JSON.parse(raw)
  } catch (error) {
    return { providers: [], problems: [`OAUTH_PROVIDERS must be JSON: ${(error as Error).message}`] }
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
    return { providers: [], problems: ['OAUTH_PROVIDERS must be a JSON object keyed by provider id ({"gitlab": {...}})'] }

  const problems: string[] = []
  const providers: GenericProviderSettings[] = []
  for (const [id, entry] of Object.entries(parsed)) {
    const where = `OAUTH_PROVIDERS.${id}`
    const before = problems.length
    if (!ID.test(id)) problems.push(`${where}: the id must be 1-32 characters of a-z, 0-9 and -, starting with a letter`)
    if (reservedIds.includes(id)) problems.push(`${where}: ${id} is a built-in provider; configure it with its own variables`)
    if (typeof entry !== 'object' || entry === null || Array.isArray(entry)) {
      problems.push(`${where} must be an object`)
      continue
    }
    const fields = entry as Record<string, unknown>
    for (const key of Object.keys(fields)) if (!FIELDS.has(key)) problems.push(`${where}.${key} is not a known field (${[...FIELDS].join(', ')})`)

    const text = (key: string, required: boolean): string | undefined => {
      const value = fields[key]
      if (value === undefined) {
        if (required) problems.push(`${where}.${key} is required`)
        return undefined
      }
      if (typeof value !== 'string' || value.trim() === '') {
        problems.push(`${where}.${key} must be a non-empty string`)
        return undefined
      }
      return value
    }
    const url = (key: string, required: boolean): string | undefined => {
      const value = text(key, required)
      if (value === undefined) return undefined
      try {
        const parsedUrl = new URL(value)
        if (parsedUrl.protocol !== 'https:' && parsedUrl.protocol !== 'http:') problems.push(`${where}.${key} must use http or https`)
      } catch {
        problems.push(`${where}.${key} must be a URL, got "${value}"`)
      }
      return value
    }

    const scopes = fields.scopes ?? []
    if (!Array.isArray(scopes) || scopes.some((s) => typeof s !== 'string' || s.trim() === '' || /\s/.test(s)))
      problems.push(`${where}.scopes must be an array of scope names without spaces`)
    const clientAuth = fields.clientAuth ?? 'body'
    if (clientAuth !== 'basic' && clientAuth !== 'body') problems.push(`${where}.clientAuth must be "basic" or "body"`)
    const authorizeParams = fields.authorizeParams ?? {}
    if (
      typeof authorizeParams !== 'object' ||
      authorizeParams === null ||
      Array.isArray(authorizeParams) ||
      Object.values(authorizeParams).some((v) => typeof v !== 'string')
    )
      problems.push(`${where}.authorizeParams must be an object of string values`)

    const settings = {
      id,
      label: text('label', false) ?? id,
      clientId: text('clientId', true),
      clientSecret: text('clientSecret', true),
      authorizeUrl: url('authorizeUrl', true),
      tokenUrl: url('tokenUrl', true),
      revokeUrl: url('revokeUrl', false),
      accountUrl: url('accountUrl', true),
      accountId: text('accountId', false) ?? 'id',
      accountName: text('accountName', false),
      scopes: Array.isArray(scopes) ? (scopes as string[]) : [],
      scopeSeparator: typeof fields.scopeSeparator === 'string' && fields.scopeSeparator !== '' ? fields.scopeSeparator : ' ',
      clientAuth: clientAuth as 'basic' | 'body',
      authorizeParams: authorizeParams as Record<string, string>,
    }
    if (problems.length === before) providers.push(Object.freeze(settings) as GenericProviderSettings)
  }
  return { providers, problems }
}

const NAME_PATHS = ['username', 'login', 'name', 'email']

/** The module for one configured generic provider. */
export function genericProvider(settings: GenericProviderSettings): ProviderDefinition {
  return {
    id: settings.id,
    label: settings.label,
    kind: 'generic',
    variables: ['OAUTH_PROVIDERS'],
    clientAuth: settings.clientAuth,
    scopeSeparator: settings.scopeSeparator,
    authorizeParams: settings.authorizeParams,
    apiHeaders: { accept: 'application/json' },

    async verify(api) {
      const answer = await api.get(settings.accountUrl)
      const id = asText(pick(answer.body, settings.accountId))
      if (!id)
        throw new AppError('upstream_error', `${settings.label} answered ${new URL(settings.accountUrl).pathname} without "${settings.accountId}"`, {
          extensions: { provider: settings.id },
        })
      const namePaths = settings.accountName ? [settings.accountName] : NAME_PATHS
      const name = namePaths.map((path) => asText(pick(answer.body, path))).find(Boolean) ?? id
      return { account: { id, name }, metadata: {} }
    },

    // RFC 7009: revoking the refresh token also ends the access tokens issued from it.
    revocation: ({ accessToken, refreshToken }, client, endpoints) => {
      if (!endpoints.revokeUrl) return undefined
      const form = new URLSearchParams({ token: refreshToken ?? accessToken, token_type_hint: refreshToken ? 'refresh_token' : 'access_token' })
      const headers: Record<string, string> = { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' }
      if (settings.clientAuth === 'basic') headers.authorization = basicAuthorization(client)
      else {
        form.set('client_id', client.clientId)
        form.set('client_secret', client.clientSecret)
      }
      return { url: endpoints.revokeUrl, init: { method: 'POST', headers, body: form.toString() } }
    },
  }
}
