import { Elysia } from 'elysia'
import { AppError } from '../errors.ts'
import { guard } from '../guards.ts'
import { requestMeta } from '../request-pipeline.ts'
import { sessionRequired, type AccessService, type Principal } from './access-service.ts'
import { bearerFrom } from './bearer.ts'
import type { PlanDirectory } from './plans.ts'
import type { Scope } from './roles.ts'

// The request's caller, or the verification under way, kept on the request itself.
const PRINCIPAL = Symbol('principal')
type WithPrincipal = Request & { [PRINCIPAL]?: Principal | Promise<Principal> }

const missingToken = () =>
  new AppError('unauthenticated', 'A bearer token is required (Authorization: Bearer <token>)', {
    headers: { 'www-authenticate': 'Bearer realm="api"' },
  })

/**
 * The caller of a request, verified once per request however many guards ask.
 * Exported so the WebSocket upgrade and other transports use the same check.
 */
export function authenticateRequest(access: AccessService, request: Request): Promise<Principal> {
  const principal = requestPrincipal(access, request)
  return principal instanceof Promise ? principal : Promise.resolve(principal)
}

/**
 * The same, answered without a promise when the token was verified before (nearly every request): the
 * guards then decide without waiting.
 */
export function requestPrincipal(access: AccessService, request: Request): Principal | Promise<Principal> {
  const known = (request as WithPrincipal)[PRINCIPAL]
  if (known !== undefined) return known
  const bearer = bearerFrom(request.headers)
  const cached = bearer && access.knownPrincipal(bearer.token)
  let principal: Principal | Promise<Principal>
  if (cached) principal = identified(request, cached)
  else if (!bearer) principal = Promise.reject(missingToken())
  else principal = access.authenticate(bearer.token).then((verified) => identified(request, verified))
  ;(request as WithPrincipal)[PRINCIPAL] = principal
  return principal
}

function identified(request: Request, principal: Principal): Principal {
  ;(request as WithPrincipal)[PRINCIPAL] = principal
  requestMeta(request).principal = principal
  return principal
}

export function requireScope(principal: Principal, scope: Scope): void {
  if (!principal.scopes.includes(scope))
    throw new AppError('insufficient_scope', `This route needs the ${scope} scope, which a ${principal.role} token does not carry`, {
      headers: { 'www-authenticate': `Bearer realm="api", error="insufficient_scope", scope="${scope}"` },
      extensions: { requiredScope: scope },
    })
}

// Elysia types `detail` as a plain OpenAPI operation; `x-` extensions are valid there and pass through.
export const openApiExtension = (detail: Record<string, unknown>) => detail as { description?: string }

export interface AccessControlOptions {
  access: AccessService
  plans: PlanDirectory
}

/**
 * Guards as route options: `{ auth: 'chat:write' }` (a valid token with that scope; `'any'` for
 * any valid token), `{ session: true }` (a signed-in session's token, not an API key: routes that manage the
 * account itself) and `{ plan: 'enterprise' }`. They land in the OpenAPI document, and run before the body,
 * query and params are parsed or validated (src/guards.ts).
 */
export function accessControl({ access, plans }: AccessControlOptions) {
  return new Elysia({ name: 'access-control' }).macro({
    auth: (scope: Scope | 'any') => {
      const authorised = (principal: Principal) => {
        if (scope !== 'any') requireScope(principal, scope)
        return { principal }
      }
      const authorise = guard(({ request }: { request: Request }) => {
        const principal = requestPrincipal(access, request)
        return principal instanceof Promise ? principal.then(authorised) : authorised(principal)
      })
      return {
        detail: openApiExtension({
          security: [{ bearer: scope === 'any' ? [] : [scope] }],
          'x-required-scope': scope,
          description: scope === 'any' ? 'Requires a bearer token.' : `Requires a bearer token with the \`${scope}\` scope.`,
        }),
        transform: authorise.early,
        resolve: authorise,
      }
    },
    session: (required: boolean) => {
      const refuseKeys = (principal: Principal) => {
        if (required && principal.source === 'api_key') throw sessionRequired()
      }
      const check = guard(({ request }: { request: Request }) => {
        const principal = requestPrincipal(access, request)
        return principal instanceof Promise ? principal.then(refuseKeys) : refuseKeys(principal)
      })
      return { detail: openApiExtension({ 'x-requires-session': required }), transform: check.early, beforeHandle: check }
    },
    plan: (required: 'enterprise') => {
      const checkPlan = guard(async ({ request }: { request: Request }) => {
        const principal = await authenticateRequest(access, request)
        if (!(await plans.isEnterprise(principal.orgId)))
          throw new AppError(
            'plan_required',
            `This feature is available on enterprise plans only; the organisation is on ${await plans.planOf(principal.orgId)}`,
            {
              extensions: { requiredPlan: required },
            },
          )
      })
      return { detail: openApiExtension({ 'x-required-plan': required }), transform: checkPlan.early, beforeHandle: checkPlan }
    },
  })
}
