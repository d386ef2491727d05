/**
 * Per-user OAuth 2.1 for MCP servers that ask for it (the MCP authorization spec): the authorization server is
 * discovered from the server's protected resource metadata (RFC 9728) and its own metadata (RFC 8414), the service
 * registers itself there (RFC 7591) when it has no client yet, and the code flow uses PKCE S256 and the resource
 * indicator (RFC 8707), all through the MCP SDK's client helpers over the guarded fetch. As in the integrations, the
 * state is single-use, stored as its hash, bound to the browser by a cookie and expiring, and tokens are sealed at
 * rest bound to their (server, user) row; a token due to expire within a minute is refreshed before use, once across
 * processes (src/refresh-lease.ts). Only a refusal of the grant (invalid_grant, invalid_client...) drops the connection,
 * and only while it still holds the refused token; a server error keeps it and fails the call as retryable.
 */
import type { OAuthClientInformationFull, OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js'
import { AppError } from '../../src/errors.ts'
import { lazily } from '../../src/lazy.ts'
import type { Logger } from '../../src/log.ts'
import {
  leaseLongerThan,
  refreshUnderLease,
  refusesGrant,
  retryableRefreshCode,
  sharedFlights,
  SPEND,
  tookOverLapsedLease,
  wallClock,
  type LeaseClock,
} from '../../src/refresh-lease.ts'
import type { SecretBox } from '../../src/secret-box.ts'
import type { FetchLike } from './remote.ts'
import type { ConnectionRow, McpServerStore, OAuthIssuer, SealedConnection, ServerRow } from './store.ts'

/** Stable `error` values of the callback redirect. */
export const MCP_CALLBACK_ERRORS = [
  'invalid_state',
  'state_expired',
  'state_mismatch',
  'access_denied',
  'authorization_failed',
  'missing_code',
  'exchange_failed',
] as const
export type McpCallbackError = (typeof MCP_CALLBACK_ERRORS)[number]

const REFRESH_MARGIN_MS = 60_000

const authRuntime = lazily(() => import('@modelcontextprotocol/sdk/client/auth.js'))

const randomToken = () => Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString('base64url')
const sha256Hex = (text: string) => new Bun.CryptoHasher('sha256').update(text).digest('hex')
const sameHash = (a: string, b: string) => a.length === b.length && crypto.timingSafeEqual(Buffer.from(a), Buffer.from(b))

const clientContext = (serverId: string) => `mcp-client:${serverId}`
const tokenContext = (serverId: string, userId: string, kind: 'access' | 'refresh') => `mcp:${serverId}:${userId}:${kind}`
const verifierContext = (stateHash: string) => `mcp-oauth-state:${stateHash}`

export interface McpOAuthOptions {
  store: McpServerStore
  box: SecretBox
  fetch: FetchLike
  logger: Logger
  publicBaseUrl: string
  /** MCP_TOOLS_RETURN_URL: where the callback sends the browser. */
  returnUrl: string
  stateTtlMs: number
  /** Clock for token expiry. */
  now: () => number
  /** Clock of the refresh lease: the wall clock, which every process shares. */
  leaseClock?: LeaseClock
  /** Longest a token request may take (the guarded fetch's timeout): the refresh lease outlasts it. */
  tokenRequestTimeoutMs: number
}

export function createMcpOAuth(options: McpOAuthOptions) {
  const { store, box, logger, now } = options
  const fetchFn = options.fetch
  const redirectUri = (serverId: string) => `${options.publicBaseUrl}/api/mcp-servers/${serverId}/callback`
  const leaseClock = options.leaseClock ?? wallClock
  const leaseMs = leaseLongerThan(options.tokenRequestTimeoutMs)
  const shared = sharedFlights<string | undefined>()
  const isDue = (row: ConnectionRow) => row.expiresAt !== null && row.expiresAt - now() < REFRESH_MARGIN_MS
  const isExpired = (row: ConnectionRow) => row.expiresAt !== null && row.expiresAt <= now()
  const openAccess = (row: ConnectionRow) => box.open(row.accessToken, tokenContext(row.serverId, row.userId, 'access')).catch(() => undefined)

  /** The server's authorization server and the service's client there, discovered and registered at first use. */
  async function issuerAndClient(server: ServerRow): Promise<{ issuer: OAuthIssuer; client: OAuthClientInformationFull }> {
    if (server.oauthIssuer && server.oauthClient)
      return { issuer: server.oauthIssuer, client: JSON.parse(await box.open(server.oauthClient, clientContext(server.id))) }
    const sdk = await authRuntime()
    let info: Awaited<ReturnType<typeof sdk.discoverOAuthServerInfo>>
    try {
      info = await sdk.discoverOAuthServerInfo(server.url, { fetchFn })
    } catch (error) {
      if (error instanceof AppError) throw error
      throw new AppError('mcp_probe_failed', `The MCP server's OAuth metadata could not be read: ${String((error as Error).message).slice(0, 200)}`)
    }
    const metadata = info.authorizationServerMetadata
    if (!metadata) throw new AppError('mcp_probe_failed', 'The MCP server names no authorization server metadata (RFC 9728, RFC 8414)')
    if (!metadata.registration_endpoint)
      throw new AppError('conflict', "The MCP server's authorization server offers no dynamic client registration, which the service needs to connect")
    const client = await sdk.registerClient(info.authorizationServerUrl, {
      metadata,
      clientMetadata: {
        client_name: 'MCP tools of the AI development platform',
        redirect_uris: [redirectUri(server.id)],
        grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'],
        token_endpoint_auth_method: 'none',
      },
      fetchFn,
    })
    const issuer: OAuthIssuer = {
      authorizationServerUrl: String(info.authorizationServerUrl),
      metadata: metadata as Record<string, unknown>,
      resource: info.resourceMetadata?.resource ?? server.url,
      scopes: info.resourceMetadata?.scopes_supported,
    }
    await store.saveOAuth(server.id, issuer, await box.seal(JSON.stringify(client), clientContext(server.id)), now())
    return { issuer, client }
  }

  async function sealTokens(serverId: string, userId: string, tokens: OAuthTokens, previousRefresh?: string | null): Promise<SealedConnection> {
    const at = now()
    return {
      serverId,
      userId,
      accessToken: await box.seal(tokens.access_token, tokenContext(serverId, userId, 'access')),
      refreshToken: tokens.refresh_token ? await box.seal(tokens.refresh_token, tokenContext(serverId, userId, 'refresh')) : (previousRefresh ?? null),
      scopes: tokens.scope ? tokens.scope.split(' ').filter(Boolean) : [],
      expiresAt: typeof tokens.expires_in === 'number' && tokens.expires_in > 0 ? at + tokens.expires_in * 1000 : null,
      connectedAt: at,
    }
  }

  /**
   * Spends the row's refresh token under the lease of `leased`. Writes and drops are conditional on the row still
   * holding the spent token, so whatever another process or a new grant stored meanwhile stays.
   */
  async function spend(server: ServerRow, row: ConnectionRow, leased: number): Promise<{ result?: string; retry?: boolean }> {
    const { userId } = row
    const sealedRefresh = row.refreshToken!
    const release = () => store.releaseLease(server.id, userId, leased, leaseClock.now())
    const refreshToken = await box.open(sealedRefresh, tokenContext(server.id, userId, 'refresh')).catch(() => undefined)
    if (refreshToken === undefined) {
      await release()
      return {}
    }
    let found: [Awaited<ReturnType<typeof authRuntime>>, Awaited<ReturnType<typeof issuerAndClient>>]
    try {
      found = await Promise.all([authRuntime(), issuerAndClient(server)])
    } catch (error) {
      await release()
      throw error
    }
    const [sdk, { issuer, client }] = found
    // The token endpoint's status, which the SDK's errors do not carry: a 5xx is never a refusal whatever its body says.
    let status: number | undefined
    const recordingFetch: FetchLike = async (url, init) => {
      const response = await fetchFn(url, init)
      status = response.status
      return response
    }
    let tokens: OAuthTokens
    try {
      tokens = await sdk.refreshAuthorization(issuer.authorizationServerUrl, {
        metadata: issuer.metadata as never,
        clientInformation: client,
        refreshToken,
        resource: new URL(issuer.resource),
        fetchFn: recordingFetch,
      })
    } catch (error) {
      const code = oauthErrorCode(error)
      // Unreachable, or failed without refusing (server_error, temporarily_unavailable, 5xx...): kept for the next try.
      if (!refusesGrant(code, status)) {
        await release()
        logger.warn('MCP token refresh failed; the connection is kept', { serverId: server.id, userId, status, error: code ?? (error as Error).name })
        if (error instanceof AppError) throw error
        throw new AppError(
          retryableRefreshCode(code, status),
          `The authorization server of the MCP server ${server.name} could not refresh the token (${status ?? 'no answer'}${code ? ` ${code}` : ''}); try again`,
        )
      }
      // Refused (invalid_grant...) after taking over from a holder whose lease ran out: its call may be the one the
      // server honoured, and its tokens are on their way to the row. This call fails; the next one uses them.
      if (tookOverLapsedLease(row)) {
        await release()
        logger.warn('MCP server refused a refresh token a previous lease holder may have spent; the connection is kept', {
          serverId: server.id,
          userId,
        })
        throw new AppError('unavailable', `The token refresh for the MCP server ${server.name} is being settled by another process; try again`)
      }
      if (await store.dropRefused(server.id, userId, leased, sealedRefresh, leaseClock.now())) {
        logger.warn('MCP server refused a token refresh; the connection is dropped', { serverId: server.id, userId, error: code })
        return {}
      }
      // The refused token was already replaced (another process's refresh, a new grant): use what is stored now.
      logger.info('MCP server refused a refresh token that was already replaced; the connection is kept', { serverId: server.id, userId })
      return { retry: true }
    }
    if (!(await store.saveRefreshed(sealedRefresh, await sealTokens(server.id, userId, tokens, sealedRefresh), leaseClock.now()))) return { retry: true }
    return { result: tokens.access_token }
  }

  /** Refreshes while the row is due; waits for another process's lease instead of refreshing beside it. */
  function refresh(server: ServerRow, userId: string): Promise<string | undefined> {
    return refreshUnderLease<ConnectionRow, string>(
      {
        read: () => store.connection(server.id, userId),
        settle: async (row) => {
          const access = await openAccess(row)
          if (access !== undefined && !isDue(row)) return access
          if (!row.refreshToken) return isExpired(row) ? undefined : access
          return SPEND
        },
        lease: (row, until, at) => store.leaseRefresh(server.id, userId, row.version, until, at),
        spend: (row, leased) => spend(server, row, leased),
        stillHeld: () => new AppError('unavailable', `The token refresh for the MCP server ${server.name} is still running elsewhere; try again`),
      },
      leaseClock,
      leaseMs,
    )
  }

  return {
    redirectUri,

    async begin(server: ServerRow, userId: string, returnTo: string | undefined) {
      if (server.auth !== 'oauth') throw new AppError('conflict', 'This MCP server does not ask for OAuth: its tools need no connection')
      const target = resolveReturnTo(options.returnUrl, returnTo)
      const sdk = await authRuntime()
      const { issuer, client } = await issuerAndClient(server)
      const state = randomToken()
      const binding = randomToken()
      const stateHash = sha256Hex(state)
      const { authorizationUrl, codeVerifier } = await sdk.startAuthorization(issuer.authorizationServerUrl, {
        metadata: issuer.metadata as never,
        clientInformation: client,
        redirectUrl: redirectUri(server.id),
        scope: issuer.scopes?.join(' ') || undefined,
        state,
        resource: new URL(issuer.resource),
      })
      const at = now()
      const expiresAt = at + options.stateTtlMs
      await store.purgeStates(at)
      await store.saveState(
        stateHash,
        {
          serverId: server.id,
          userId,
          codeVerifier: await box.seal(codeVerifier, verifierContext(stateHash)),
          bindingHash: sha256Hex(binding),
          returnTo: target,
          expiresAt,
        },
        at,
      )
      return { authorizationUrl: authorizationUrl.toString(), redirectUri: redirectUri(server.id), expiresAt, binding }
    },

    /** The callback: the state taken before any check, then the binding, then the code exchanged and the tokens sealed. */
    async complete(
      serverId: string,
      params: { state?: string; code?: string; error?: string },
      binding: string | undefined,
    ): Promise<{ location: string; connected: boolean; error?: McpCallbackError; userId?: string; server?: ServerRow }> {
      const fail = (base: string, error: McpCallbackError, userId?: string) => {
        logger.warn('MCP server connect failed', { serverId, userId, error })
        return { location: outcomeUrl(base, serverId, error), connected: false, error }
      }
      if (!params.state) return fail(options.returnUrl, 'invalid_state')
      const stateHash = sha256Hex(params.state)
      const flow = await store.takeState(stateHash)
      if (!flow || flow.serverId !== serverId) return fail(options.returnUrl, 'invalid_state')
      if (flow.expiresAt <= now()) return fail(flow.returnTo, 'state_expired', flow.userId)
      if (!binding || !sameHash(sha256Hex(binding), flow.bindingHash)) return fail(flow.returnTo, 'state_mismatch', flow.userId)
      if (params.error) return fail(flow.returnTo, params.error === 'access_denied' ? 'access_denied' : 'authorization_failed', flow.userId)
      if (!params.code) return fail(flow.returnTo, 'missing_code', flow.userId)
      const server = await store.byId(serverId)
      if (!server) return fail(flow.returnTo, 'invalid_state', flow.userId)
      const verifier = await box.open(flow.codeVerifier, verifierContext(stateHash)).catch(() => undefined)
      if (verifier === undefined) return fail(flow.returnTo, 'invalid_state', flow.userId)
      const sdk = await authRuntime()
      let tokens: OAuthTokens
      try {
        const { issuer, client } = await issuerAndClient(server)
        tokens = await sdk.exchangeAuthorization(issuer.authorizationServerUrl, {
          metadata: issuer.metadata as never,
          clientInformation: client,
          authorizationCode: params.code,
          codeVerifier: verifier,
          redirectUri: redirectUri(serverId),
          resource: new URL(issuer.resource),
          fetchFn,
        })
      } catch (error) {
        logger.warn('MCP token exchange failed', { serverId, userId: flow.userId, reason: (error as Error).name })
        return fail(flow.returnTo, 'exchange_failed', flow.userId)
      }
      await store.connect(await sealTokens(serverId, flow.userId, tokens), now())
      logger.info('MCP server connected', { serverId, userId: flow.userId })
      return { location: outcomeUrl(flow.returnTo, serverId), connected: true, userId: flow.userId, server }
    },

    /** The user's access token for the server, refreshed first when it expires within a minute; undefined without a usable one. */
    async tokenFor(server: ServerRow, userId: string): Promise<string | undefined> {
      const row = await store.connection(server.id, userId)
      if (!row) return undefined
      const access = await openAccess(row)
      if (access !== undefined && !isDue(row)) return access
      if (!row.refreshToken) return isExpired(row) ? undefined : access
      return shared(`${server.id}:${userId}`, () => refresh(server, userId))
    },
  }
}

export type McpOAuth = ReturnType<typeof createMcpOAuth>

/** The OAuth `error` of the SDK's token endpoint errors (its OAuthError classes name it); undefined for anything else. */
function oauthErrorCode(error: unknown): string | undefined {
  const code = (error as { errorCode?: unknown } | null)?.errorCode
  return typeof code === 'string' ? code : undefined
}

/** A return page on the configured front end's origin; anything else could send users elsewhere. */
function resolveReturnTo(returnUrl: string, returnTo: string | undefined): string {
  if (returnTo === undefined) return returnUrl
  let url: URL | undefined
  try {
    url = new URL(returnTo, returnUrl)
  } catch {}
  const origin = new URL(returnUrl).origin
  if (!url || url.origin !== origin) {
    const message = `must be a path or a URL on ${origin}`
    throw new AppError('validation_failed', `returnTo: ${message}`, { errors: [{ field: 'returnTo', message }] })
  }
  return url.toString()
}

function outcomeUrl(base: string, serverId: string, error?: McpCallbackError): string {
  const url = new URL(base)
  url.searchParams.set('mcp_server', serverId)
  url.searchParams.set('status', error ? 'error' : 'connected')
  if (error) url.searchParams.set('error', error)
  return url.toString()
}
