import type { AccountStore } from './account-store.ts'

export interface PlanDirectoryOptions {
  /** Plan ids that count as enterprise. */
  enterprise: readonly string[]
  /** Plan of an organisation whose plan has lapsed (`planExpiresAt` passed). Default 'free'. */
  fallbackPlan?: string
  /** How long a looked-up plan is trusted. Default 5000 ms; plan changes elsewhere show within it. */
  ttlMs?: number
  now?: () => number
}

/** The plan of each organisation, briefly cached because guarded routes ask on every request. */
export function createPlanDirectory(accounts: AccountStore, options: PlanDirectoryOptions) {
  const ttl = options.ttlMs ?? 5000
  const now = options.now ?? Date.now
  const fallbackPlan = options.fallbackPlan ?? 'free'
  const cache = new Map<string, { plan: string; until: number }>()

  /** The plan while its cached copy is still trusted, without waiting; undefined when it must be looked up. */
  function cachedPlanOf(orgId: string): string | undefined {
    const hit = cache.get(orgId)
    return hit && hit.until > now() ? hit.plan : undefined
  }

  async function planOf(orgId: string): Promise<string> {
    const cached = cachedPlanOf(orgId)
    if (cached !== undefined) return cached
    const at = now()
    const org = await accounts.organization(orgId)
    const expiresAt = org?.planExpiresAt ?? null
    const lapsed = expiresAt !== null && expiresAt <= at
    const plan = org && !lapsed ? org.plan : fallbackPlan
    if (cache.size > 50_000) cache.clear()
    // A plan about to lapse is not trusted past its end.
    cache.set(orgId, { plan, until: expiresAt !== null && !lapsed ? Math.min(at + ttl, expiresAt) : at + ttl })
    return plan
  }

  return {
    planOf,
    cachedPlanOf,
    async isEnterprise(orgId: string) {
      return options.enterprise.includes(await planOf(orgId))
    },
    /** Drops the cached plan after a change made by this process. */
    forget(orgId: string) {
      cache.delete(orgId)
    },
  }
}

export type PlanDirectory = ReturnType<typeof createPlanDirectory>
