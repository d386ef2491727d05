/**
 * Connection status: the stored token is tried against the provider's API. A refused token is a
 * disconnected status with its reason, not an error; a provider that cannot answer is an error
 * (502/503/504), since nothing was learnt. Verified answers are cached briefly per connection and
 * version, so a page refresh does not reach the provider and any token change is seen at once.
 */
import { AppError } from '../../src/errors.ts'
import type { HttpClient } from '../../src/http.ts'
import type { ConnectionRow, ConnectionStore } from './connection-store.ts'
import type { Provider } from './providers/index.ts'
import { TokenRejected, type ApiAnswer, type ConnectedAccount, type ProviderApi, type Verification } from './providers/provider.ts'
import type { TokenKeeper } from './tokens.ts'

export const DISCONNECTED_REASONS = ['not_connected', 'token_revoked', 'token_expired', 'refresh_failed', 'key_unavailable'] as const
export type DisconnectedReason = (typeof DISCONNECTED_REASONS)[number]

const explanations: Record<DisconnectedReason, string> = {
  not_connected: 'No connection; start one with POST /api/integrations/{provider}/auth',
  token_revoked: 'The provider refused the stored token (revoked at the provider or expired); connect again',
  token_expired: 'The access token expired and the provider gave no refresh token; connect again',
  refresh_failed: 'The provider refused the refresh token; connect again',
  key_unavailable: 'The stored token was encrypted with a key that is no longer configured (see TOKEN_ENCRYPTION_PREVIOUS_KEYS)',
}

export interface IntegrationStatus {
  provider: string
  label: string
  connected: boolean
  reason?: DisconnectedReason
  detail?: string
  account: ConnectedAccount | null
  scopes: string[]
  expiresAt: string | null
  connectedAt: string | null
  verifiedAt: string | null
  metadata: Record<string, unknown>
  cached: boolean
}

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString())

export function storedAccount(row: ConnectionRow): ConnectedAccount | null {
  if (row.accountId === null) return null
  return { id: row.accountId, name: row.accountName ?? row.accountId, ...(row.accountUrl ? { url: row.accountUrl } : {}) }
}

/** Why a stored connection gives no token, from the row alone. */
export function reasonOf(row: ConnectionRow | undefined, now: number): DisconnectedReason | undefined {
  if (!row) return 'not_connected'
  if (row.brokenReason)
    return (DISCONNECTED_REASONS as readonly string[]).includes(row.brokenReason) ? (row.brokenReason as DisconnectedReason) : 'token_revoked'
  if (row.expiresAt !== null && row.expiresAt <= now && !row.refreshToken) return 'token_expired'
  return undefined
}

export function disconnected(provider: Provider, reason: DisconnectedReason, row?: ConnectionRow): IntegrationStatus {
  return {
    provider: provider.definition.id,
    label: provider.definition.label,
    connected: false,
    reason,
    detail: explanations[reason].replace('{provider}', provider.definition.id),
    account: row ? storedAccount(row) : null,
    scopes: row?.scopes ?? [],
    expiresAt: iso(row?.expiresAt ?? null),
    connectedAt: iso(row?.connectedAt ?? null),
    verifiedAt: iso(row?.verifiedAt ?? null),
    metadata: {},
    cached: false,
  }
}

/** The provider's API with one token, as provider modules see it. */
export function providerApi(http: HttpClient, provider: Provider, token: string, timeoutMs: number): ProviderApi {
  const { id, label, apiHeaders } = provider.definition
  return {
    async get(pathOrUrl) {
      const url = /^https?:\/\//.test(pathOrUrl) ? pathOrUrl : `${provider.endpoints.apiUrl}${pathOrUrl}`
      let response: Response
      try {
        response = await http.request(url, { headers: { ...apiHeaders, authorization: `Bearer ${token}` }, timeoutMs, upstream: label })
      } catch (error) {
        if (error instanceof AppError) throw new AppError(error.code, error.message, { extensions: { provider: id } })
        throw error
      }
      const path = new URL(url).pathname
      if (response.status === 401) {
        await response.body?.cancel()
        throw new TokenRejected(`${label} answered 401 to GET ${path}`)
      }
      if (response.status === 429) {
        await response.body?.cancel()
        const retryAfter = response.headers.get('retry-after')
        throw new AppError('unavailable', `${label} is limiting this service's requests (429); try again later`, {
          extensions: { provider: id },
          headers: retryAfter ? { 'retry-after': retryAfter } : undefined,
        })
      }
      if (!response.ok) {
        await response.body?.cancel()
        throw new AppError('upstream_error', `${label} answered ${response.status} to GET ${path}`, { extensions: { provider: id } })
      }
      const text = await response.text()
      let body: unknown
      try {
        body = JSON.parse(text)
      } catch {
        throw new AppError('upstream_error', `${label} answered GET ${path} with malformed JSON`, { extensions: { provider: id } })
      }
      const answer: ApiAnswer = { status: response.status, headers: response.headers, body }
      return answer
    },
  }
}

export interface StatusCheckerOptions {
  store: ConnectionStore
  keeper: TokenKeeper
  http: HttpClient
  /** How long a verified status is reused; 0 never reuses. */
  cacheTtlMs: number
  /** Longest wait for each provider API call. */
  timeoutMs: number
  now: () => number
  /** Most cached statuses kept; the oldest go first. Default 10000. */
  maxEntries?: number
}

export function createStatusChecker(options: StatusCheckerOptions) {
  const { store, keeper, http, now } = options
  const maxEntries = options.maxEntries ?? 10_000
  const cache = new Map<string, { version: number; storedAt: number; status: IntegrationStatus }>()

  async function verify(provider: Provider, token: string): Promise<Verification | undefined> {
    try {
      return await provider.definition.verify(providerApi(http, provider, token, options.timeoutMs))
    } catch (error) {
      if (error instanceof TokenRejected) return undefined
      throw error
    }
  }

  return {
    async status(userId: string, provider: Provider, opts: { fresh?: boolean } = {}): Promise<IntegrationStatus> {
      const id = provider.definition.id
      const row = await store.get(userId, id)
      const reason = reasonOf(row, now())
      if (reason) return disconnected(provider, reason, row)
      const key = `${userId}\u0000${id}`
      const hit = cache.get(key)
      if (!opts.fresh && hit && hit.version === row!.version && now() - hit.storedAt < options.cacheTtlMs) return { ...hit.status, cached: true }

      let current = await keeper.current(userId, provider)
      let verification = current && (await verify(provider, current.token))
      // A refused token may only have expired early: one refresh, then one more try.
      if (current && !verification) {
        const refreshed = await keeper.afterRejection(userId, provider, current.version)
        if (refreshed) verification = await verify(provider, refreshed.token)
        if (!verification) await store.markBroken(userId, id, refreshed?.version ?? current.version, 'token_revoked', Date.now())
        current = refreshed ?? current
      }
      if (!current || !verification) {
        const latest = await store.get(userId, id)
        return disconnected(provider, reasonOf(latest, now()) ?? (current ? 'token_revoked' : 'key_unavailable'), latest)
      }

      const account = verification.account
      const verifiedAt = now()
      await store.markVerified(
        userId,
        id,
        { accountId: account.id, accountName: account.name, accountUrl: account.url ?? null },
        verification.scopes,
        verifiedAt,
      )
      const status: IntegrationStatus = {
        provider: id,
        label: provider.definition.label,
        connected: true,
        account,
        scopes: verification.scopes ?? row!.scopes,
        expiresAt: iso(current.expiresAt),
        connectedAt: iso(row!.connectedAt),
        verifiedAt: iso(verifiedAt),
        metadata: verification.metadata,
        cached: false,
      }
      if (options.cacheTtlMs > 0) {
        cache.delete(key)
        if (cache.size >= maxEntries) cache.delete(cache.keys().next().value!)
        cache.set(key, { version: current.version, storedAt: verifiedAt, status })
      }
      return status
    },

    forget(userId: string, providerId: string) {
      cache.delete(`${userId}\u0000${providerId}`)
    },

    verify,
  }
}

export type StatusChecker = ReturnType<typeof createStatusChecker>
