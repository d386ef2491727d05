/**
 * The connect flow. `begin` stores a single-use state (as a hash) bound to the user and to the browser
 * that started it (a random binding whose hash is stored and whose value goes into a cookie), with the
 * sealed PKCE verifier. `complete` takes the state in one statement, checks the binding, exchanges the
 * code with the verifier and the exact redirect URI, and stores the tokens. Every outcome becomes a
 * redirect to the front-end with `status=connected` or `status=error&error=<code>`.
 */
import { AppError } from '../../src/errors.ts'
import type { HttpClient } from '../../src/http.ts'
import type { Logger } from '../../src/log.ts'
import type { SecretBox } from '../../src/secret-box.ts'
import type { ConnectionStore } from './connection-store.ts'
import { authorizationUrl, codeChallenge, exchangeCode, randomToken, sha256Hex, TokenEndpointError } from './oauth.ts'
import type { Provider } from './providers/index.ts'
import type { StatusChecker } from './status.ts'
import type { TokenKeeper } from './tokens.ts'

/** Stable `error` values of the callback redirect. */
export const CALLBACK_ERRORS = [
  'invalid_state',
  'state_expired',
  'state_mismatch',
  'access_denied',
  'authorization_failed',
  'missing_code',
  'exchange_failed',
  'provider_unavailable',
  'not_configured',
] as const
export type CallbackError = (typeof CALLBACK_ERRORS)[number]

export interface FlowOptions {
  store: ConnectionStore
  box: SecretBox
  http: HttpClient
  keeper: TokenKeeper
  checker: StatusChecker
  logger: Logger
  /** PUBLIC_BASE_URL: redirect URIs are `<it>/api/integrations/<provider>/callback`. */
  publicBaseUrl: string
  /** INTEGRATIONS_RETURN_URL: where the callback sends the browser, unless the flow named another page on its origin. */
  returnUrl: string
  stateTtlMs: number
  now: () => number
}

export interface StartedFlow {
  authorizationUrl: string
  redirectUri: string
  expiresAt: number
  /** Goes into the flow cookie; the callback must bring it back. */
  binding: string
}

export interface CallbackParams {
  state?: string
  code?: string
  error?: string
}

export interface CallbackOutcome {
  /** Where to send the browser. */
  location: string
  connected: boolean
  error?: CallbackError
}

const verifierContext = (stateHash: string) => `oauth-state:${stateHash}`

function sameHash(a: string, b: string): boolean {
  const left = Buffer.from(a)
  const right = Buffer.from(b)
  return left.length === right.length && crypto.timingSafeEqual(left, right)
}

export function createFlow(options: FlowOptions) {
  const { store, box, http, logger, now } = options
  const returnOrigin = new URL(options.returnUrl).origin

  const redirectUri = (providerId: string) => `${options.publicBaseUrl}/api/integrations/${providerId}/callback`

  /** A return page on the configured front-end's origin; anything else could send users elsewhere. */
  function resolveReturnTo(returnTo: string | undefined): string {
    if (returnTo === undefined) return options.returnUrl
    let url: URL
    try {
      url = new URL(returnTo, options.returnUrl)
    } catch {
      url = new URL('invalid:')
    }
    if (url.origin !== returnOrigin) {
      const message = `must be a path or a URL on ${returnOrigin}`
      throw new AppError('validation_failed', `returnTo: ${message}`, { errors: [{ field: 'returnTo', message }] })
    }
    return url.toString()
  }

  function outcomeUrl(base: string, providerId: string, result: { connected: true } | { connected: false; error: CallbackError; providerError?: string }) {
    const url = new URL(base)
    url.searchParams.set('integration', providerId)
    url.searchParams.set('status', result.connected ? 'connected' : 'error')
    if (!result.connected) {
      url.searchParams.set('error', result.error)
      if (result.providerError) url.searchParams.set('provider_error', result.providerError)
    }
    return url.toString()
  }

  return {
    redirectUri,

    async begin(userId: string, provider: Provider, request: { scopes?: readonly string[]; returnTo?: string }): Promise<StartedFlow> {
      const client = provider.client!
      const returnTo = resolveReturnTo(request.returnTo)
      const scopes = request.scopes ?? provider.scopes
      const state = randomToken()
      const verifier = randomToken()
      const binding = randomToken()
      const stateHash = await sha256Hex(state)
      const at = now()
      const expiresAt = at + options.stateTtlMs
      await store.purgeStates(at)
      await store.saveState(
        stateHash,
        {
          userId,
          provider: provider.definition.id,
          codeVerifier: await box.seal(verifier, verifierContext(stateHash)),
          bindingHash: await sha256Hex(binding),
          scopes: [...scopes],
          returnTo,
          expiresAt,
        },
        at,
      )
      const uri = redirectUri(provider.definition.id)
      return {
        authorizationUrl: authorizationUrl(provider, client, { state, challenge: await codeChallenge(verifier), redirectUri: uri, scopes }),
        redirectUri: uri,
        expiresAt,
        binding,
      }
    },

    async complete(provider: Provider, params: CallbackParams, binding: string | undefined): Promise<CallbackOutcome> {
      const id = provider.definition.id
      const fail = (base: string, error: CallbackError, providerError?: string, userId?: string): CallbackOutcome => {
        logger.warn('integration connect failed', { provider: id, userId, error, providerError })
        return { location: outcomeUrl(base, id, { connected: false, error, providerError }), connected: false, error }
      }
      if (!params.state) return fail(options.returnUrl, 'invalid_state')
      const stateHash = await sha256Hex(params.state)
      // Taken (deleted) before any check: whatever happens next, this state cannot be used again.
      const flow = await store.takeState(stateHash)
      if (!flow || flow.provider !== id) return fail(options.returnUrl, 'invalid_state')
      if (flow.expiresAt <= now()) return fail(flow.returnTo, 'state_expired', undefined, flow.userId)
      if (!binding || !sameHash(await sha256Hex(binding), flow.bindingHash)) return fail(flow.returnTo, 'state_mismatch', undefined, flow.userId)
      if (params.error) {
        const code = /^[a-z_]{1,64}$/.test(params.error) ? params.error : undefined
        return fail(flow.returnTo, code === 'access_denied' ? 'access_denied' : 'authorization_failed', code, flow.userId)
      }
      if (!params.code) return fail(flow.returnTo, 'missing_code', undefined, flow.userId)
      if (!provider.client) return fail(flow.returnTo, 'not_configured', undefined, flow.userId)

      // Unreadable only if the encryption key changed during the flow with the old one dropped.
      const verifier = await box.open(flow.codeVerifier, verifierContext(stateHash)).catch(() => undefined)
      if (verifier === undefined) return fail(flow.returnTo, 'invalid_state', undefined, flow.userId)
      let granted: Awaited<ReturnType<typeof exchangeCode>>
      try {
        granted = await exchangeCode(http, provider, provider.client, { code: params.code, verifier, redirectUri: redirectUri(id) }, now)
      } catch (error) {
        if (error instanceof TokenEndpointError)
          return fail(flow.returnTo, error.permanent ? 'exchange_failed' : 'provider_unavailable', error.error, flow.userId)
        if (error instanceof AppError) return fail(flow.returnTo, 'provider_unavailable', undefined, flow.userId)
        throw error
      }
      const scopes = granted.scopes ?? flow.scopes
      // The account is looked up now so the first status already names it; a failure here does not undo the connection.
      const verification = await options.checker.verify(provider, granted.accessToken).catch(() => undefined)
      const sealed = await options.keeper.seal(flow.userId, id, { ...granted, scopes: verification?.scopes ?? scopes })
      const account = verification?.account
      await store.connect(
        flow.userId,
        id,
        sealed,
        { accountId: account?.id ?? null, accountName: account?.name ?? null, accountUrl: account?.url ?? null, verifiedAt: verification ? now() : null },
        now(),
      )
      options.checker.forget(flow.userId, id)
      logger.info('integration connected', { provider: id, userId: flow.userId, account: account?.name })
      return { location: outcomeUrl(flow.returnTo, id, { connected: true }), connected: true }
    },
  }
}

export type Flow = ReturnType<typeof createFlow>
