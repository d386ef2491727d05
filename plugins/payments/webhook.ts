/**
 * Receiving payment events: verify, store durably (with an audit entry for the receipt), then apply
 * from the store. The event is acknowledged once stored, whatever happens while applying it: a failed
 * or interrupted apply leaves it pending, and the recovery pass (at start-up, on a timer, and on any
 * redelivery) applies it later. Applying is claimed per event, so redeliveries, concurrent requests
 * and other processes never apply it twice.
 */
import type { AccountStore } from '../../src/auth/account-store.ts'
import type { PlanDirectory } from '../../src/auth/plans.ts'
import type { Logger } from '../../src/log.ts'
import type { Database } from '../../src/storage/database.ts'
import { applyEvent, eventOrganisation, PROVIDER_ACTOR, type ApplyOutcome, type PriceIndex } from './apply-event.ts'
import { appendAudit } from './audit-log.ts'
import { claimEvent, markProcessed, pendingEvents, recordFailure, storeEvent, type ReceiptMeta } from './event-store.ts'
import type { PaymentProvider } from './provider.ts'

export interface PaymentsHooks {
  /** Runs after an event is stored and before it is applied; a throw here stands for a crash at that point. */
  beforeApply?(eventId: string): void | Promise<void>
}

export interface WebhookDeps {
  db: Database
  accounts: AccountStore
  plans: PlanDirectory
  logger: Logger
  prices: PriceIndex
  planIds: { ids: readonly string[]; fallback: string }
  now: () => number
  hooks?: PaymentsHooks
  /** Failed applies before an event is left for an operator. */
  maxAttempts: number
}

export interface WebhookReceipt {
  eventId: string
  type: string
  /** The event id was stored before: this delivery changed nothing. */
  duplicate: boolean
}

export function createWebhookProcessor(deps: WebhookDeps) {
  const { db, logger, now } = deps

  /** Stores the event and its receipt entry together; false when the id was stored before. */
  function store(event: { id: string; type: string; created: number; object: Record<string, unknown>; raw: string }, receipt: ReceiptMeta) {
    return db.sql.begin(async (tx) => {
      const at = now()
      if (!(await storeEvent(tx, event, receipt, at))) return false
      const orgId = await eventOrganisation(tx, { ...event, receipt }, deps.prices)
      await appendAudit(
        tx,
        {
          orgId,
          actor: PROVIDER_ACTOR,
          action: 'payment_webhook.received',
          ...receipt,
          details: { eventId: event.id, type: event.type, created: event.created },
        },
        at,
      )
      return true
    })
  }

  /** Applies a stored event unless it is applied already; undefined when there was nothing to do. */
  async function processEvent(id: string): Promise<ApplyOutcome | undefined> {
    await deps.hooks?.beforeApply?.(id)
    let outcome: ApplyOutcome | undefined
    try {
      outcome = await db.sql.begin(async (tx) => {
        const event = await claimEvent(tx, id)
        if (!event) return undefined
        const at = now()
        const applied = await applyEvent({ tx, accounts: deps.accounts, prices: deps.prices, plans: deps.planIds, now: at }, event)
        await markProcessed(tx, id, applied.result, applied.detail, at)
        return applied
      })
    } catch (err) {
      await recordFailure(db.sql, id, err).catch((e) => logger.warn('could not record a failed payment event', { eventId: id, err: e }))
      throw err
    }
    if (outcome?.orgId) deps.plans.forget(outcome.orgId)
    if (outcome) logger.info('payment event processed', { eventId: id, result: outcome.result, detail: outcome.detail ?? undefined })
    return outcome
  }

  async function receive(provider: PaymentProvider, rawBody: string, signatureHeader: string | null, receipt: ReceiptMeta): Promise<WebhookReceipt> {
    const event = await provider.verifyEvent(rawBody, signatureHeader, now())
    const stored = await store(event, receipt)
    try {
      // A redelivery of an event whose apply failed earlier is a good moment to try again.
      await processEvent(event.id)
    } catch (err) {
      logger.error('payment event stored but not applied; it will be retried', { eventId: event.id, type: event.type, err })
    }
    return { eventId: event.id, type: event.type, duplicate: !stored }
  }

  /** Applies stored events left unapplied (a crash, a failure); answers how many it applied. */
  async function processPending(limit = 500): Promise<number> {
    let done = 0
    for (const id of await pendingEvents(db.sql, { maxAttempts: deps.maxAttempts, limit })) {
      try {
        if (await processEvent(id)) done++
      } catch (err) {
        logger.error('payment event failed again; it will be retried', { eventId: id, err })
      }
    }
    return done
  }

  return { receive, processEvent, processPending }
}

export type WebhookProcessor = ReturnType<typeof createWebhookProcessor>
