/**
 * GET /api/models lists the models the caller's organisation may use and its default; PUT /api/org/model lets an
 * owner or an admin choose that default (null: the service's, CHAT_MODEL). Chat, enhanced chat and develop tasks
 * use it when a request names no model.
 */
import { Elysia } from 'elysia'
import type { AccessService } from '../../src/auth/access-service.ts'
import type { PlanDirectory } from '../../src/auth/plans.ts'
import { accessControl, authenticateRequest, openApiExtension } from '../../src/auth/plugin.ts'
import { AppError } from '../../src/errors.ts'
import { guard } from '../../src/guards.ts'
import type { Models } from '../../src/llm/models.ts'
import { rateLimiting, type RateLimitingOptions } from '../../src/rate-limit/plugin.ts'
import { problem } from '../../src/schemas.ts'
import { modelList, orgModelBody } from './schemas.ts'

export { orgModelDefaults } from './store.ts'

export interface ModelsPluginOptions {
  models: Models
  access: AccessService
  plans: PlanDirectory
  rateLimits: RateLimitingOptions
}

const MANAGERS: readonly string[] = ['owner', 'admin']

/** `{ orgManager: true }`: the caller must be an owner or an admin; refused (403) before the body is read. */
function managersOnly(access: AccessService) {
  return new Elysia({ name: 'models-managers-only' }).macro({
    orgManager: (required: boolean) => {
      const check = guard(async ({ request }: { request: Request }) => {
        const principal = await authenticateRequest(access, request)
        if (required && !MANAGERS.includes(principal.role))
          throw new AppError('forbidden', `Only an owner or an admin may choose the organisation's model; a ${principal.role} may not`)
      })
      return { detail: openApiExtension({ 'x-required-role': 'owner or admin' }), transform: check.early, beforeHandle: check }
    },
  })
}

export function modelsPlugin(options: ModelsPluginOptions) {
  const { models } = options
  const listing = async (orgId: string) => {
    const chosen = await models.defaultFor(orgId)
    return { models: models.catalogue.map((m) => ({ id: m.id, provider: m.provider, default: m.id === chosen })), default: chosen }
  }
  return new Elysia({ name: 'models', detail: { tags: ['models'] } })
    .use(accessControl(options))
    .use(managersOnly(options.access))
    .use(rateLimiting(options.rateLimits))
    .get('/api/models', ({ principal }) => listing(principal.orgId), {
      auth: 'chat:write',
      rateLimit: 'default',
      response: { 200: modelList, 401: problem, 403: problem, 429: problem },
      detail: {
        summary: 'The models the organisation may use, and its default',
        description: 'A chat or enhanced chat request names one as `model`; another is 422 naming those allowed.',
      },
    })
    .put(
      '/api/org/model',
      async ({ body, principal }) => {
        await models.setDefault(principal.orgId, body.model)
        return listing(principal.orgId)
      },
      {
        body: orgModelBody,
        auth: 'chat:write',
        orgManager: true,
        rateLimit: 'default',
        response: { 200: modelList, 401: problem, 403: problem, 422: problem, 429: problem },
        detail: { summary: "Choose the organisation's default model (owner or admin)", description: 'null goes back to the service default (CHAT_MODEL).' },
      },
    )
}
