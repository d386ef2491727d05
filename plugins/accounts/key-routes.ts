/** POST, GET /api/keys and DELETE /api/keys/{keyId}: the caller's personal API keys, managed with a signed-in session. */
import { Elysia, t } from 'elysia'
import type { ApiKey } from '../../src/auth/api-keys.ts'
import { accessControl, type AccessControlOptions } from '../../src/auth/plugin.ts'
import { problem } from '../../src/schemas.ts'
import { rateLimiting, type RateLimitingOptions } from '../../src/rate-limit/plugin.ts'
import { requestMeta } from '../../src/request-pipeline.ts'
import type { ApiKeyService } from './api-keys.ts'
import { API_KEY_DEFAULT_DAYS, apiKeyBody, apiKeyList, apiKeyParams, createdApiKey } from './schemas.ts'

export interface KeyRoutesOptions extends AccessControlOptions {
  apiKeys: ApiKeyService
  rateLimits: RateLimitingOptions
}

/** A key as its owner sees it: no owner ids, never the digest. */
const view = (key: ApiKey) => ({
  id: key.id,
  name: key.name,
  scopes: key.scopes,
  createdAt: key.createdAt,
  expiresAt: key.expiresAt,
  lastUsedAt: key.lastUsedAt,
  revokedAt: key.revokedAt,
})

const origin = (request: Request) => {
  const meta = requestMeta(request)
  return { requestId: meta.id, clientIp: meta.clientIp }
}

export function keyRoutes(options: KeyRoutesOptions) {
  const { apiKeys } = options
  return new Elysia({ name: 'api-keys', detail: { tags: ['accounts'] } })
    .use(accessControl(options))
    .use(rateLimiting(options.rateLimits))
    .onTransform(({ set }) => {
      set.headers['cache-control'] = 'no-store'
    })
    .post(
      '/api/keys',
      async ({ body, principal, request, set }) => {
        const created = await apiKeys.create(
          principal,
          { name: body.name, scopes: body.scopes, expiresInDays: body.expiresInDays ?? API_KEY_DEFAULT_DAYS },
          origin(request),
        )
        set.status = 201
        return { ...view(created), key: created.key }
      },
      {
        auth: 'any',
        session: true,
        rateLimit: 'default',
        body: apiKeyBody,
        response: { 201: createdApiKey, 401: problem, 403: problem, 409: problem, 422: problem, 429: problem },
        detail: {
          summary: 'Create a personal API key; the key is in this answer only',
          description:
            "The key works as a bearer token for the caller with the scopes asked for, as far as the caller's role grants them when it is used, until it expires " +
            `(expiresInDays, default ${API_KEY_DEFAULT_DAYS}) or is revoked. Scopes the caller's token does not carry are 422 naming scopes. ` +
            'Needs a signed-in access token: an API key cannot create keys (403 session_required). At most 50 working keys (409 conflict). Recorded in the audit log.',
        },
      },
    )
    .get('/api/keys', async ({ principal }) => ({ keys: (await apiKeys.list(principal)).map(view) }), {
      auth: 'any',
      session: true,
      rateLimit: 'default',
      response: { 200: apiKeyList, 401: problem, 403: problem, 429: problem },
      detail: { summary: "The caller's API keys, newest first, revoked and expired ones included; never the keys themselves" },
    })
    .delete(
      '/api/keys/:keyId',
      async ({ params, principal, request, set }) => {
        await apiKeys.revoke(principal, params.keyId, origin(request))
        set.status = 204
      },
      {
        auth: 'any',
        session: true,
        rateLimit: 'default',
        params: apiKeyParams,
        response: { 204: t.Undefined({ description: 'Revoked (also when it was already)' }), 401: problem, 403: problem, 404: problem, 429: problem },
        detail: {
          summary: 'Revoke one of your API keys',
          description:
            'Refused from now on in every process (401 invalid_token, "API key revoked"); agent connections opened with it close. A key that is not yours is 404.',
        },
      },
    )
}
