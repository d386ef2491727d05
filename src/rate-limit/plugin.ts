import { Elysia } from 'elysia'
import type { AccessService } from '../auth/access-service.ts'
import type { PlanDirectory } from '../auth/plans.ts'
import type { Principal } from '../auth/access-service.ts'
import { openApiExtension, requestPrincipal } from '../auth/plugin.ts'
import { AppError } from '../errors.ts'
import { guard } from '../guards.ts'
import { requestMeta } from '../request-pipeline.ts'
import { definePolicy, rateLimitHeaders, type RateCheck, type RateDecision, type RateLimiter, type RatePolicy } from './index.ts'

import type { RouteClass } from './route-classes.ts'

export type { RouteClass }

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
  const burst = definePolicy({ ...options.policies.burst, onStoreError })
  const own = routeClass === 'default' ? undefined : definePolicy({ ...options.policies[routeClass], onStoreError })
  return { burst, own, all: own ? [own, burst] : [burst] }
}

type ResponseSet = { headers: Record<string, unknown> }

/**
 * Spends `checks`, puts the RateLimit headers on the answer, and throws 429 `rate_limited` when refused; without
 * a promise when the limiter decides in this process.
 */
export function spendOrRefuse(limiter: RateLimiter, checks: RateCheck[], set: ResponseSet): void | Promise<void> {
  if (limiter.decideNow) return answer(limiter.decideNow(checks), set)
  return limiter.check(checks).then((decision) => answer(decision, set))
}

function answer(decision: RateDecision, set: ResponseSet): void {
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
        by === 'user'
          ? requestPrincipal(access, request)
          : by === 'caller' && request.headers.has('authorization')
            ? requestPrincipal(access, request)
            : undefined
      const spendFor = (principal: Principal | undefined, request: Request, set: ResponseSet) => {
        const key = principal ? `user:${principal.userId}` : `ip:${requestMeta(request).clientIp}`
        const burstOnly = [{ key, policy: burst }]
        if (!own) return spendOrRefuse(limiter, burstOnly, set)
        const both = [
          { key, policy: burst },
          { key, policy: own },
        ]
        if (exemptWhenEnterprise && principal)
          return plans.isEnterprise(principal.orgId).then((exempt) => spendOrRefuse(limiter, exempt ? burstOnly : both, set))
        return spendOrRefuse(limiter, both, set)
      }
      // Answers without a promise when the caller is known and the limiter in process: nearly every request.
      const spend = guard(({ request, set }: { request: Request; set: ResponseSet }) => {
        const principal = principalOf(request)
        return principal instanceof Promise ? principal.then((known) => spendFor(known, request, set)) : spendFor(principal, request, set)
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
