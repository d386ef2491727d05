/**
 * Guards for a route open to anonymous callers. The service's `auth` and `rateLimit` macros require a
 * token; these accept requests without one, still refuse a bad one, and spend the same budgets, keyed
 * by user when signed in and by client address otherwise.
 */
import { Elysia } from 'elysia'
import type { AccessService, Principal } from '../../src/auth/access-service.ts'
import { authenticateRequest, openApiExtension } from '../../src/auth/plugin.ts'
import { guard } from '../../src/guards.ts'
import type { RateCheck } from '../../src/rate-limit/index.ts'
import { classPolicies, spendOrRefuse, type RateLimitingOptions, type RouteClass } from '../../src/rate-limit/plugin.ts'
import { requestMeta } from '../../src/request-pipeline.ts'

/** The caller, or undefined without an Authorization header; any Authorization header must hold a valid token. */
export async function optionalCaller(access: AccessService, request: Request): Promise<Principal | undefined> {
  return request.headers.has('authorization') ? authenticateRequest(access, request) : undefined
}

/**
 * `{ optionalAuth: true }` resolves `caller` (a Principal or undefined; a bad token is 401), and
 * `{ callerRateLimit: 'search' }` spends that class's budget and the burst ceiling, as `rateLimit` does.
 */
export function callerGuards(options: RateLimitingOptions) {
  const { access, limiter, plans } = options
  return new Elysia({ name: 'mcp-caller-guards' }).macro({
    optionalAuth: (enabled: true) => {
      const identify = guard(async ({ request }: { request: Request }) => ({ caller: await optionalCaller(access, request) }))
      return {
      detail: openApiExtension({
        security: enabled ? [{}, { bearer: [] }] : [],
        description: 'A bearer token is optional; when one is given it must be valid.',
      }),
      transform: identify.early,
      resolve: identify,
      }
    },
    callerRateLimit: (routeClass: RouteClass) => {
      const { burst, own, all } = classPolicies(options, routeClass)
      const spend = guard(async ({ request, set }: { request: Request; set: { headers: Record<string, unknown> } }) => {
          const principal = await optionalCaller(access, request)
          const key = principal ? `user:${principal.userId}` : `ip:${requestMeta(request).clientIp}`
          const checks: RateCheck[] = [{ key, policy: burst }]
          const exempt = routeClass === 'search' && principal !== undefined && (await plans.isEnterprise(principal.orgId))
          if (own && !exempt) checks.push({ key, policy: own })
          await spendOrRefuse(limiter, checks, set)
      })
      return {
        detail: openApiExtension({ 'x-rate-limit': all, 'x-rate-limit-key': 'user, or client address without a token' }),
        transform: spend.early,
        beforeHandle: spend,
      }
    },
  })
}
