/**
 * Integrations as a plain service. The routes use all of it; other plugins (repository import, pages
 * publishing) use `tokenFor(userId, 'github')` for a currently valid access token.
 */
import { AppError } from '../../src/errors.ts'
import type { HttpClient } from '../../src/http.ts'
import type { Logger } from '../../src/log.ts'
import type { SecretBox } from '../../src/secret-box.ts'
import type { LeaseClock } from '../../src/refresh-lease.ts'
import type { Database } from '../../src/storage/database.ts'
import { ConnectionStore } from './connection-store.ts'
import { createFlow, type CallbackOutcome, type CallbackParams, type StartedFlow } from './flow.ts'
import type { Provider } from './providers/index.ts'
import { createStatusChecker, reasonOf, storedAccount, type DisconnectedReason, type IntegrationStatus } from './status.ts'
import { createTokenKeeper } from './tokens.ts'

export interface IntegrationsServiceOptions {
  db: Database
  box: SecretBox
  /** Outbound client; its retries (idempotent calls, honouring Retry-After) and keep-alive apply to every provider call. */
  http: HttpClient
  logger: Logger
  /** Built-ins and OAUTH_PROVIDERS, in listing order. */
  providers: readonly Provider[]
  publicBaseUrl: string
  returnUrl: string
  /** Default 600 (OAUTH_STATE_TTL_SECONDS). */
  stateTtlSeconds?: number
  /** Default 60 (INTEGRATIONS_STATUS_CACHE_TTL_SECONDS); 0 disables the cache. */
  statusCacheTtlSeconds?: number
  /** Longest wait for each provider API call. Default 10000. */
  timeoutMs?: number
  /** Clock for token expiry, states and the status cache, for tests. Default Date.now. */
  now?: () => number
  /** Clock of the refresh lease, for tests; default the wall clock, which every process shares. */
  leaseClock?: LeaseClock
}

export interface ProviderSummary {
  provider: string
  label: string
  kind: 'builtin' | 'generic'
  configured: boolean
  /** Settings that would configure it, when it is not configured. */
  variables?: string[]
  connected: boolean
  reason?: DisconnectedReason
  account: { id: string; name: string; url?: string } | null
  scopes: string[]
  expiresAt: string | null
  connectedAt: string | null
  verifiedAt: string | null
}

export type Revocation = 'revoked' | 'unsupported' | 'failed' | 'none'

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString())

export function createIntegrationsService(options: IntegrationsServiceOptions) {
  const { db, box, http, logger } = options
  const now = options.now ?? Date.now
  const store = new ConnectionStore(db)
  const byId = new Map(options.providers.map((p) => [p.definition.id, p]))
  const keeper = createTokenKeeper({ store, box, http, logger, now, leaseClock: options.leaseClock })
  const checker = createStatusChecker({
    store,
    keeper,
    http,
    now,
    cacheTtlMs: (options.statusCacheTtlSeconds ?? 60) * 1000,
    timeoutMs: options.timeoutMs ?? 10_000,
  })
  const flow = createFlow({
    store,
    box,
    http,
    keeper,
    checker,
    logger,
    now,
    publicBaseUrl: options.publicBaseUrl,
    returnUrl: options.returnUrl,
    stateTtlMs: (options.stateTtlSeconds ?? 600) * 1000,
  })

  /** The provider named in a path: 404 listing the known ones when there is no such provider. */
  function known(id: string): Provider {
    const provider = byId.get(id)
    if (!provider)
      throw new AppError('not_found', `Unknown integration provider "${id}"; known providers: ${[...byId.keys()].join(', ')}`, {
        extensions: { knownProviders: [...byId.keys()] },
      })
    return provider
  }

  /** As `known`, and 503 naming its settings when its OAuth app is not configured. */
  function configured(id: string): Provider {
    const provider = known(id)
    if (!provider.client) {
      const variables = [...provider.definition.variables]
      throw new AppError('not_configured', `${provider.definition.label} is not configured; set ${variables.join(' and ')}`, {
        extensions: { provider: id, variables },
      })
    }
    return provider
  }

  return {
    known,
    configured,
    redirectUri: flow.redirectUri,

    async tokenFor(userId: string, providerId: string): Promise<string | undefined> {
      const provider = byId.get(providerId)
      if (!provider) return undefined
      return (await keeper.current(userId, provider))?.token
    },

    begin(userId: string, providerId: string, request: { scopes?: readonly string[]; returnTo?: string } = {}): Promise<StartedFlow> {
      return flow.begin(userId, configured(providerId), request)
    },

    complete(providerId: string, params: CallbackParams, binding: string | undefined): Promise<CallbackOutcome> {
      return flow.complete(known(providerId), params, binding)
    },

    status(userId: string, providerId: string, opts: { fresh?: boolean } = {}): Promise<IntegrationStatus> {
      return checker.status(userId, configured(providerId), opts)
    },

    /** Every provider with its stored state; no provider is called. */
    async list(userId: string): Promise<ProviderSummary[]> {
      const rows = new Map((await store.list(userId)).map((row) => [row.provider, row]))
      return options.providers.map((provider) => {
        const { id, label, kind, variables } = provider.definition
        const row = rows.get(id)
        const reason = reasonOf(row, now())
        return {
          provider: id,
          label,
          kind,
          configured: provider.client !== undefined,
          ...(provider.client ? {} : { variables: [...variables] }),
          connected: reason === undefined,
          ...(reason ? { reason } : {}),
          account: row ? storedAccount(row) : null,
          scopes: row?.scopes ?? [],
          expiresAt: iso(row?.expiresAt ?? null),
          connectedAt: iso(row?.connectedAt ?? null),
          verifiedAt: iso(row?.verifiedAt ?? null),
        }
      })
    },

    /**
     * Every connection of the user disconnected (revoked at the provider where it offers revocation, then forgotten)
     * and their connection flows in progress dropped: an account's deletion. A connection to a provider no longer
     * listed is forgotten without a call.
     */
    async disconnectAll(userId: string): Promise<{ connections: number; revoked: number; flows: number }> {
      let connections = 0
      let revoked = 0
      for (const row of await store.list(userId)) {
        if (byId.has(row.provider)) {
          const outcome = await this.disconnect(userId, row.provider)
          if (outcome.revocation === 'revoked') revoked++
        } else await store.delete(userId, row.provider)
        connections++
      }
      return { connections, revoked, flows: await store.deleteStatesOf(userId) }
    },

    /** Forgets the connection, after revoking the grant at the provider where it offers revocation. */
    async disconnect(userId: string, providerId: string): Promise<{ disconnected: boolean; revocation: Revocation }> {
      const provider = known(providerId)
      const row = await store.get(userId, providerId)
      if (!row) return { disconnected: false, revocation: 'none' }
      let revocation: Revocation = 'unsupported'
      const client = provider.client
      const tokens = client && provider.definition.revocation ? await keeper.openTokens(row).catch(() => undefined) : undefined
      const call = tokens && client && provider.definition.revocation?.(tokens, client, provider.endpoints)
      if (call) {
        // Revocation is idempotent (RFC 7009), so it may be retried like a GET.
        const answer = await http
          .request(call.url, { ...call.init, idempotent: true, upstream: provider.definition.label })
          .then(async (response) => {
            await response.body?.cancel()
            return response.status
          })
          .catch(() => 0)
        // 404: the grant was already gone at the provider.
        revocation = (answer >= 200 && answer < 300) || answer === 404 ? 'revoked' : 'failed'
        if (revocation === 'failed') logger.warn('integration revocation failed', { provider: providerId, userId, status: answer })
      } else if (client && provider.definition.revocation && !tokens) revocation = 'failed'
      await store.delete(userId, providerId)
      checker.forget(userId, providerId)
      logger.info('integration disconnected', { provider: providerId, userId, revocation })
      return { disconnected: true, revocation }
    },
  }
}

export type IntegrationsService = ReturnType<typeof createIntegrationsService>
