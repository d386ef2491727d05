/**
 * Plans that lapse. A cancelled or unpaid subscription keeps its plan until the end of the period
 * paid for (`organizations.plan_expires_at`). The plan directory already answers the first plan after
 * that instant; this sweep makes it permanent and writes the change to the audit log.
 */
import type { AccountStore } from '../../src/auth/account-store.ts'
import type { PlanDirectory } from '../../src/auth/plans.ts'
import type { Database } from '../../src/storage/database.ts'
import { toNumber } from '../../src/storage/database.ts'
import { appendAudit } from './audit-log.ts'
import { subscriptionsOf } from './billing-store.ts'
import { organisationPlan } from './subscription-state.ts'

export interface PlanExpiryDeps {
  db: Database
  accounts: AccountStore
  plans: PlanDirectory
  planIds: { ids: readonly string[]; fallback: string }
  now: () => number
}

/** Moves every organisation whose plan has lapsed to what its subscriptions still give (usually the first plan). */
export async function expireLapsedPlans(deps: PlanExpiryDeps): Promise<string[]> {
  const { db } = deps
  const at = deps.now()
  const due = await db.sql`SELECT id FROM organizations WHERE plan_expires_at IS NOT NULL AND plan_expires_at <= ${at}`
  const moved: string[] = []
  for (const { id } of due as { id: string }[]) {
    const changed = await db.sql.begin(async (tx) => {
      // Locks the row and re-checks: another process may have moved it already.
      const [org] =
        await tx`UPDATE organizations SET plan = plan WHERE id = ${id} AND plan_expires_at IS NOT NULL AND plan_expires_at <= ${at} RETURNING plan, plan_expires_at`
      if (!org) return false
      const next = organisationPlan(await subscriptionsOf(tx, id), at, deps.planIds) ?? { plan: deps.planIds.fallback, expiresAt: null }
      await deps.accounts.setPlan(id, next.plan, { expiresAt: next.expiresAt, sql: tx })
      const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString())
      await appendAudit(
        tx,
        {
          orgId: id,
          actor: 'system',
          action: 'plan.changed',
          details: { from: org.plan, to: next.plan, expiresAt: iso(next.expiresAt), reason: 'period_ended', endedAt: iso(toNumber(org.plan_expires_at)) },
        },
        at,
      )
      return true
    })
    if (changed) {
      deps.plans.forget(id)
      moved.push(id)
    }
  }
  return moved
}
