/**
 * Stored tokens: sealing, opening, and refreshing before expiry. A refresh happens once however many
 * callers need it: callers in this process share one promise, and across processes the refresh lease
 * is claimed by compare-and-set on the row version, so a single-use refresh token is spent once.
 */
import { AppError } from '../../src/errors.ts'
import type { HttpClient } from '../../src/http.ts'
import type { Logger } from '../../src/log.ts'
import {
  isLeased,
  refreshUnderLease,
  refusesGrant,
  retryableRefreshCode,
  sharedFlights,
  SPEND,
  tookOverLapsedLease,
  wallClock,
  type LeaseClock,
} from '../../src/refresh-lease.ts'
import { SecretBoxError, type SecretBox } from '../../src/secret-box.ts'
import type { ConnectionRow, ConnectionStore, SealedGrant } from './connection-store.ts'
import { refreshGrant, TokenEndpointError, type GrantedTokens } from './oauth.ts'
import type { Provider } from './providers/index.ts'

/** Tokens expiring within this are refreshed first, so a caller never receives one about to die. */
export const REFRESH_MARGIN_MS = 60_000

export interface TokenKeeperOptions {
  store: ConnectionStore
  box: SecretBox
  http: HttpClient
  logger: Logger
  /** Clock for token expiry. */
  now: () => number
  /** Clock of the refresh lease: the wall clock, which every process shares. */
  leaseClock?: LeaseClock
}

/** A usable access token and the row version it belongs to. */
export interface CurrentToken {
  token: string
  version: number
  expiresAt: number | null
}

const context = (row: Pick<ConnectionRow, 'userId' | 'provider'>, kind: 'access' | 'refresh') => `integration:${row.userId}:${row.provider}:${kind}`

/** A refusal after taking over a lapsed lease: the earlier holder's tokens may still be landing, so try again. */
const settling = (label: string, id: string) =>
  new AppError('unavailable', `${label} token refresh is being settled by another process; try again`, { extensions: { provider: id } })

export function createTokenKeeper(options: TokenKeeperOptions) {
  const { store, box, http, logger, now } = options
  const leaseClock = options.leaseClock ?? wallClock
  const shared = sharedFlights<CurrentToken | undefined>()

  const isExpired = (row: ConnectionRow) => row.expiresAt !== null && row.expiresAt <= now()
  const isDue = (row: ConnectionRow) => row.expiresAt !== null && row.expiresAt - now() < REFRESH_MARGIN_MS

  async function seal(userId: string, provider: string, granted: GrantedTokens & { scopes: string[] }): Promise<SealedGrant> {
    const key = { userId, provider }
    return {
      accessToken: await box.seal(granted.accessToken, context(key, 'access')),
      refreshToken: granted.refreshToken ? await box.seal(granted.refreshToken, context(key, 'refresh')) : null,
      tokenType: granted.tokenType,
      scopes: granted.scopes,
      expiresAt: granted.expiresAt ?? null,
      refreshExpiresAt: granted.refreshExpiresAt ?? null,
    }
  }

  async function openTokens(row: ConnectionRow): Promise<{ accessToken: string; refreshToken?: string }> {
    const accessToken = await box.open(row.accessToken, context(row, 'access'))
    const refreshToken = row.refreshToken ? await box.open(row.refreshToken, context(row, 'refresh')) : undefined
    // Values sealed before a key rotation move to the current key the first time they are read.
    if (box.isStale(row.accessToken) || (row.refreshToken && box.isStale(row.refreshToken))) {
      const access = await box.seal(accessToken, context(row, 'access'))
      const refresh = refreshToken ? await box.seal(refreshToken, context(row, 'refresh')) : null
      await store.reseal(row.userId, row.provider, row.version, access, refresh, Date.now())
    }
    return { accessToken, refreshToken }
  }

  async function usable(row: ConnectionRow): Promise<CurrentToken | undefined> {
    try {
      const { accessToken } = await openTokens(row)
      return { token: accessToken, version: row.version, expiresAt: row.expiresAt }
    } catch (error) {
      if (!(error instanceof SecretBoxError)) throw error
      logger.warn('stored integration token does not open', { provider: row.provider, userId: row.userId, reason: error.message })
      return undefined
    }
  }

  /**
   * Spends the refresh token under a lease taken at `leased`. Undefined result with `retry` means read again. Saving
   * and breaking are conditional on the row still holding the spent token, so whatever another process or a new
   * grant stored meanwhile stays.
   */
  async function spend(provider: Provider, row: ConnectionRow, leased: number): Promise<{ result?: CurrentToken; retry?: boolean }> {
    const { id, label } = provider.definition
    const sealedRefresh = row.refreshToken!
    const release = () => store.releaseLease(row.userId, id, leased, leaseClock.now())
    let refreshToken: string | undefined
    try {
      refreshToken = (await openTokens(row)).refreshToken
    } catch (error) {
      await release()
      if (error instanceof SecretBoxError) return {}
      throw error
    }
    let granted: GrantedTokens
    try {
      granted = await refreshGrant(http, provider, provider.client!, refreshToken!, now)
    } catch (error) {
      if (error instanceof TokenEndpointError && refusesGrant(error.error, error.status)) return afterRefusal(provider, row, leased, error.error)
      await release()
      if (error instanceof TokenEndpointError) {
        logger.warn('integration refresh failed; the connection is kept', { provider: id, userId: row.userId, status: error.status, error: error.error })
        throw new AppError(
          retryableRefreshCode(error.error, error.status),
          `${label} could not refresh the connection's token (${error.status} ${error.error}); try again`,
          { extensions: { provider: id } },
        )
      }
      throw error
    }
    // A provider that does not rotate refresh tokens answers without one: the old one stays valid.
    const sealed = await seal(row.userId, id, {
      ...granted,
      refreshToken: granted.refreshToken ?? refreshToken,
      refreshExpiresAt: granted.refreshToken ? granted.refreshExpiresAt : (row.refreshExpiresAt ?? undefined),
      scopes: granted.scopes ?? row.scopes,
    })
    const version = await store.saveRefreshed(row.userId, id, sealedRefresh, sealed, leaseClock.now())
    if (version === undefined) return { retry: true }
    logger.info('integration token refreshed', { provider: id, userId: row.userId })
    return { result: { token: granted.accessToken, version, expiresAt: sealed.expiresAt } }
  }

  /** The provider refused the grant: the connection breaks only while it still holds the refused token. */
  async function afterRefusal(provider: Provider, row: ConnectionRow, leased: number, error: string): Promise<{ retry?: boolean }> {
    const { id, label } = provider.definition
    const { userId } = row
    if (tookOverLapsedLease(row)) {
      await store.releaseLease(userId, id, leased, leaseClock.now())
      logger.warn('integration refresh refused a token a previous lease holder may have spent; the connection is kept', { provider: id, userId, error })
      throw settling(label, id)
    }
    if (await store.breakRefused(userId, id, leased, row.refreshToken!, leaseClock.now())) {
      logger.warn('integration refresh refused', { provider: id, userId, error })
      return {}
    }
    // The refused token was already replaced (another process's refresh, a new grant): use what is stored now.
    logger.info('integration refresh refused a token that was already replaced; the connection is kept', { provider: id, userId, error })
    return { retry: true }
  }

  /** Refreshes while `stillNeeded(row)`; waits for another process's lease instead of refreshing beside it. */
  function refresh(userId: string, provider: Provider, stillNeeded: (row: ConnectionRow) => boolean): Promise<CurrentToken | undefined> {
    const { id, label } = provider.definition
    return refreshUnderLease<ConnectionRow, CurrentToken>(
      {
        read: async () => {
          const row = await store.get(userId, id)
          return row && !row.brokenReason ? row : undefined
        },
        settle: async (row) => {
          if (!stillNeeded(row)) return usable(row)
          if (!row.refreshToken || !provider.client) return isExpired(row) ? undefined : usable(row)
          return SPEND
        },
        lease: (row, until, at) => store.leaseRefresh(userId, id, row.version, until, at),
        spend: (row, leased) => spend(provider, row, leased),
        stillHeld: () => new AppError('unavailable', `${label} token refresh is still running elsewhere; try again`, { extensions: { provider: id } }),
      },
      leaseClock,
    )
  }

  const flightKey = (userId: string, provider: Provider) => `${userId}\u0000${provider.definition.id}`

  return {
    seal,
    openTokens,

    /** The access token to use now, refreshed first when it expires within a minute; undefined when not connected. */
    async current(userId: string, provider: Provider): Promise<CurrentToken | undefined> {
      const row = await store.get(userId, provider.definition.id)
      if (!row || row.brokenReason) return undefined
      if (!isDue(row) && !isLeased(row, leaseClock)) return usable(row)
      if (!row.refreshToken) return isExpired(row) ? undefined : usable(row)
      return shared(flightKey(userId, provider), () => refresh(userId, provider, isDue))
    },

    /** After the provider refused the token of `version`: refresh unless the row already moved on. */
    async afterRejection(userId: string, provider: Provider, version: number): Promise<CurrentToken | undefined> {
      const row = await store.get(userId, provider.definition.id)
      if (!row?.refreshToken) return undefined
      return shared(flightKey(userId, provider), () => refresh(userId, provider, (latest) => latest.version === version))
    },
  }
}

export type TokenKeeper = ReturnType<typeof createTokenKeeper>
