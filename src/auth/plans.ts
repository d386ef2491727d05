import type { AccountStore } from './account-store.ts'

export interface PlanDirectoryOptions {
  /** Plan ids that count as enterprise. */
  enterprise: readonly string[]
  /** How long a looked-up plan is trusted. Default 5000 ms; plan changes elsewhere show within it. */
  ttlMs?: number
  now?: () => number
}

/** The plan of each organisation, briefly cached because guarded routes ask on every request. */
export function createPlanDirectory(accounts: AccountStore, options: PlanDirectoryOptions) {
  const ttl = options.ttlMs ?? 5000
  const now = options.now ?? Date.now
  const cache = new Map<string, { plan: string; until: number }>()

  async function planOf(orgId: string): Promise<string> {
    const hit = cache.get(orgId)
    if (hit && hit.until > now()) return hit.plan
    const plan = (await accounts.organization(orgId))?.plan ?? 'free'
    if (cache.size > 50_000) cache.clear()
    cache.set(orgId, { plan, until: now() + ttl })
    return plan
  }

  return {
    planOf,
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
