import { Elysia } from 'elysia'
import type { AccessService } from '../../src/auth/access-service.ts'
import type { PlanDirectory } from '../../src/auth/plans.ts'
import { accessControl } from '../../src/auth/plugin.ts'
import { problem } from '../../src/schemas.ts'
import { rateLimiting, type RateLimitingOptions } from '../../src/rate-limit/plugin.ts'
import {
  callbackQuery,
  callbackRedirect,
  connectAnswer,
  connectBody,
  disconnectAnswer,
  integrationList,
  integrationStatus,
  providerParams,
  statusQuery,
} from './schemas.ts'
import type { IntegrationsService } from './service.ts'
export { integrationsSettings } from './settings.ts'

export { createIntegrationsService, type IntegrationsService } from './service.ts'
export { providersFromConfig } from './providers/index.ts'

export interface IntegrationsPluginOptions {
  integrations: IntegrationsService
  access: AccessService
  plans: PlanDirectory
  rateLimits: RateLimitingOptions
  /** PUBLIC_BASE_URL; the flow cookie is Secure when it is https. */
  publicBaseUrl: string
  /** How long the flow cookie lives: OAUTH_STATE_TTL_SECONDS. */
  stateTtlSeconds: number
}

const flowCookie = (provider: string) => `integration_flow_${provider}`

function cookieValue(header: string | null, name: string): string | undefined {
  for (const part of header?.split(';') ?? []) {
    const at = part.indexOf('=')
    if (at > 0 && part.slice(0, at).trim() === name) return part.slice(at + 1).trim()
  }
  return undefined
}

/**
 * /api/integrations: connect (auth + callback), status, list, disconnect. Every route but the callback
 * needs a bearer token and spends the integrations budget; the callback arrives from the provider in
 * the browser without one, so it is bound to its user by `state` (and to the browser by the flow
 * cookie) and limited per client address.
 */
export function integrationsPlugin(options: IntegrationsPluginOptions) {
  const { integrations, rateLimits } = options
  const secure = options.publicBaseUrl.startsWith('https:') ? '; Secure' : ''
  const cookie = (provider: string, value: string, maxAge: number) =>
    `${flowCookie(provider)}=${value}; Path=/api/integrations/${provider}/callback; HttpOnly; SameSite=Lax; Max-Age=${maxAge}${secure}`

  return new Elysia({ name: 'integrations', detail: { tags: ['integrations'] } })
    .use(accessControl(options))
    .use(rateLimiting(rateLimits))
    .get('/api/integrations', async ({ principal }) => ({ providers: await integrations.list(principal.userId) }), {
      auth: 'integrations:read',
      rateLimit: 'integrations',
      response: { 200: integrationList, 401: problem, 403: problem, 429: problem },
      detail: {
        summary: 'List every integration provider with its configuration and stored connection state',
        description: 'Answers from storage without calling any provider; GET /api/integrations/{provider}/status verifies a connection.',
      },
    })
    .post(
      '/api/integrations/:provider/auth',
      async ({ params, body, principal, set }) => {
        const flow = await integrations.begin(principal.userId, params.provider, { scopes: body?.scopes, returnTo: body?.returnTo })
        set.headers['set-cookie'] = cookie(params.provider, flow.binding, options.stateTtlSeconds)
        set.headers['cache-control'] = 'no-store'
        const answer = {
          provider: params.provider,
          authorizationUrl: flow.authorizationUrl,
          redirectUri: flow.redirectUri,
          expiresAt: new Date(flow.expiresAt).toISOString(),
        }
        if (body?.redirect) {
          set.status = 302
          set.headers.location = flow.authorizationUrl
        }
        return answer
      },
      {
        params: providerParams,
        body: connectBody,
        auth: 'integrations:write',
        rateLimit: 'integrations',
        response: { 200: connectAnswer, 302: connectAnswer, 401: problem, 403: problem, 404: problem, 422: problem, 429: problem, 503: problem },
        detail: {
          summary: 'Start connecting a provider: an OAuth 2.0 authorization-code flow with PKCE (S256)',
          description:
            'Answers the authorization URL to send the browser to (or, with {"redirect": true}, 302 to it) and sets the flow cookie the callback checks. ' +
            'The state is single-use and expires after OAUTH_STATE_TTL_SECONDS. Unknown provider: 404 with knownProviders; not configured: 503 not_configured naming its variables.',
        },
      },
    )
    .get(
      '/api/integrations/:provider/callback',
      async ({ params, query, request, set }) => {
        const binding = cookieValue(request.headers.get('cookie'), flowCookie(params.provider))
        const outcome = await integrations.complete(params.provider, { state: query.state, code: query.code, error: query.error }, binding)
        set.status = 303
        set.headers.location = outcome.location
        set.headers['set-cookie'] = cookie(params.provider, '', 0)
        set.headers['cache-control'] = 'no-store'
        set.headers['referrer-policy'] = 'no-referrer'
        return ''
      },
      {
        params: providerParams,
        query: callbackQuery,
        rateLimit: { spend: 'integrations', by: 'address' },
        response: { 303: callbackRedirect, 404: problem, 429: problem },
        detail: {
          summary: "The provider's redirect back after authorisation; answers 303 to the front-end with the outcome",
          description:
            'No bearer token: the browser arrives from the provider. The state must be known, unused, unexpired, for this provider, and come with the flow cookie of the browser that started it. ' +
            'The redirect URI is PUBLIC_BASE_URL + /api/integrations/{provider}/callback and must be registered exactly so at the provider. Limited per client address at the integrations rate.',
        },
      },
    )
    .get(
      '/api/integrations/:provider/status',
      async ({ params, query, principal, set }) => {
        const status = await integrations.status(principal.userId, params.provider, { fresh: query.fresh })
        set.headers['x-cache'] = status.cached ? 'HIT' : 'MISS'
        set.headers['cache-control'] = 'private, no-cache'
        return status
      },
      {
        params: providerParams,
        query: statusQuery,
        auth: 'integrations:read',
        rateLimit: 'integrations',
        response: { 200: integrationStatus, 401: problem, 403: problem, 404: problem, 422: problem, 429: problem, 502: problem, 503: problem, 504: problem },
        detail: {
          summary: "Verify a connection against the provider's API and answer its account, scopes, expiry and metadata",
          description:
            'A revoked or expired token answers connected: false with a reason (not an error). Verified answers are reused for INTEGRATIONS_STATUS_CACHE_TTL_SECONDS unless ?fresh=true. ' +
            'A provider that cannot be reached: 502 upstream_error, 503 unavailable (it is rate limiting), 504 upstream_timeout.',
        },
      },
    )
    .delete(
      '/api/integrations/:provider',
      async ({ params, principal }) => ({ provider: params.provider, ...(await integrations.disconnect(principal.userId, params.provider)) }),
      {
        params: providerParams,
        auth: 'integrations:write',
        rateLimit: 'integrations',
        response: { 200: disconnectAnswer, 401: problem, 403: problem, 404: problem, 429: problem },
        detail: {
          summary: 'Disconnect a provider: revoke the grant at the provider where it offers revocation, then forget the tokens',
          description: 'The tokens are forgotten even when the provider cannot be reached (revocation: failed).',
        },
      },
    )
}
