import { Elysia } from 'elysia'
import type { AccessService } from '../auth/access-service.ts'
import type { PlanDirectory } from '../auth/plans.ts'
import { authenticateRequest, openApiExtension } from '../auth/plugin.ts'
import { AppError } from '../errors.ts'
import { guard } from '../guards.ts'
import { requestMeta } from '../request-pipeline.ts'
import { definePolicy, rateLimitHeaders, type RateCheck, type RateLimiter, type RatePolicy } from './index.ts'

/** Route classes a route names in `{ rateLimit: ... }`; `default` is the burst ceiling alone. */
export type RouteClass = 'chat' | 'integrations' | 'search' | 'assistant' | 'default'

export interface RateLimitingOptions {
  limiter: RateLimiter
  access: AccessService
  plans: PlanDirectory
  /** Policies from configuration: the burst ceiling and one per class. */
  policies: { burst: RatePolicy; chat: RatePolicy; integrations: RatePolicy; search: RatePolicy; assistant: RatePolicy }
  /** Classes whose requests are refused, rather than allowed, while the limiter's store is down. */
  failClosed: readonly string[]
}

export function policiesFromConfig(limits: {
  chatPerMinute: number
  integrationsPerMinute: number
  searchPerMinute: number
  assistantPerMinute: number
  burst: number
  burstWindowSeconds: number
}): RateLimitingOptions['policies'] {
  return {
    burst: definePolicy({ name: 'burst', limit: limits.burst, windowSeconds: limits.burstWindowSeconds }),
    chat: definePolicy({ name: 'chat', limit: limits.chatPerMinute, windowSeconds: 60 }),
    integrations: definePolicy({ name: 'integrations', limit: limits.integrationsPerMinute, windowSeconds: 60 }),
    search: definePolicy({ name: 'search', limit: limits.searchPerMinute, windowSeconds: 60 }),
    assistant: definePolicy({ name: 'assistant', limit: limits.assistantPerMinute, windowSeconds: 60 }),
  }
}

/** The policies a route class spends (its own, when it has one, and the burst ceiling), with its store-failure behaviour. */
export function classPolicies(options: Pick<RateLimitingOptions, 'policies' | 'failClosed'>, routeClass: RouteClass) {
  const onStoreError = options.failClosed.includes(routeClass) ? ('closed' as const) : ('open' as const)
  const burst = { ...options.policies.burst, onStoreError }
  const own = routeClass === 'default' ? undefined : { ...options.policies[routeClass], onStoreError }
  return { burst, own, all: own ? [own, burst] : [burst] }
}

/** Spends `checks`, puts the RateLimit headers on the answer, and throws 429 `rate_limited` when refused. */
export async function spendOrRefuse(limiter: RateLimiter, checks: RateCheck[], set: { headers: Record<string, unknown> }): Promise<void> {
  const decision = await limiter.check(checks)
  const headers = rateLimitHeaders(decision)
  Object.assign(set.headers, headers)
  if (!decision.allowed)
    throw new AppError('rate_limited', `Rate limit "${decision.refusedBy}" exceeded; retry in ${decision.retryAfterSeconds} s`, {
      headers,
      extensions: { policy: decision.refusedBy, retryAfterSeconds: decision.retryAfterSeconds },
    })
}

/** Whose budget a request spends: the signed-in user's, the client address's, or the user's when a token is given and the address's otherwise. */
export type RateLimitKey = 'user' | 'address' | 'caller'

/** A route's `rateLimit` option: a class spent per user, or a class with the key it is spent by. */
export type RateLimitOption = RouteClass | { spend: RouteClass; by: RateLimitKey }

const KEY_DESCRIPTIONS: Record<RateLimitKey, string | undefined> = {
  user: undefined,
  address: 'client address',
  caller: 'user, or client address without a token',
}

/**
 * `{ rateLimit: 'chat' }` on a route: per user, the route class's budget and the burst ceiling are spent
 * together in one check. `{ rateLimit: { spend: 'assistant', by: 'address' } }` spends them per client address
 * (public routes), `by: 'caller'` per user when a token is given and per address otherwise. Enterprise
 * organisations skip the search budget.
 */
export function rateLimiting(options: RateLimitingOptions) {
  const { limiter, access, plans } = options
  return new Elysia({ name: 'rate-limiting' }).macro({
    rateLimit: (option: RateLimitOption) => {
      const { spend: routeClass, by } = typeof option === 'string' ? { spend: option, by: 'user' as const } : option
      // Built once per route: the policies this class spends, with its store-failure behaviour.
      const { burst, own, all } = classPolicies(options, routeClass)
      const exemptWhenEnterprise = routeClass === 'search'
      const principalOf = (request: Request) =>
        by === 'user' ? authenticateRequest(access, request) : by === 'caller' && request.headers.has('authorization') ? authenticateRequest(access, request) : undefined
      const spend = guard(async ({ request, set }: { request: Request; set: { headers: Record<string, unknown> } }) => {
        const principal = await principalOf(request)
        const key = principal ? `user:${principal.userId}` : `ip:${requestMeta(request).clientIp}`
        const checks: RateCheck[] = [{ key, policy: burst }]
        if (own && !(exemptWhenEnterprise && principal && (await plans.isEnterprise(principal.orgId)))) checks.push({ key, policy: own })
        await spendOrRefuse(limiter, checks, set)
      })
      const keyDescription = KEY_DESCRIPTIONS[by]
      return {
        detail: openApiExtension({ 'x-rate-limit': all, ...(keyDescription && { 'x-rate-limit-key': keyDescription }) }),
        transform: spend.early,
        beforeHandle: spend,
      }
    },
  })
}
