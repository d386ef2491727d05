/**
 * What the billing state of a subscription is, and what plan it grants, as pure functions.
 *
 * Events arrive in any order and more than once, so every change is a merge that gives the same
 * result whatever the order:
 * - the subscription's own fields (status, price, seats, period) come from the newest subscription
 *   event, ordered by the event's `created` second, then the status's place in the lifecycle (events
 *   of one second are common: a subscription created `incomplete` and turned `active` by its payment),
 *   then the event id, so that even two indistinguishable events settle the same way every time;
 * - proof of payment (invoice.paid, or a checkout completed with payment_status `paid`) is kept as the
 *   earliest such moment and never withdrawn: later trouble shows in the status instead;
 * - the latest invoice outcome is ordered like the snapshot, `paid` above a failure of the same second.
 */

/** Subscription statuses in lifecycle order, for breaking ties within one second. */
const STATUS_RANK: Record<string, number> = {
  incomplete: 0,
  trialing: 1,
  active: 2,
  past_due: 3,
  paused: 4,
  unpaid: 5,
  canceled: 6,
  incomplete_expired: 6,
}

export type InvoiceOutcome = 'action_required' | 'payment_failed' | 'paid'
const INVOICE_RANK: Record<InvoiceOutcome, number> = { action_required: 0, payment_failed: 1, paid: 2 }

/** Where an observation sits in time: event second, lifecycle rank, event id. */
export interface Version {
  at: number
  rank: number
  eventId: string
}

export function isNewer(candidate: Version, stored: Version | null): boolean {
  if (!stored) return true
  if (candidate.at !== stored.at) return candidate.at > stored.at
  if (candidate.rank !== stored.rank) return candidate.rank > stored.rank
  return candidate.eventId > stored.eventId
}

export const statusRank = (status: string) => STATUS_RANK[status] ?? 0
export const invoiceRank = (outcome: InvoiceOutcome) => INVOICE_RANK[outcome]

/** The fields a subscription event carries. */
export interface SubscriptionSnapshot {
  status: string
  plan: string | null
  priceId: string | null
  interval: string | null
  seats: number | null
  /** Epoch ms. */
  currentPeriodEnd: number | null
  cancelAtPeriodEnd: boolean
}

export interface InvoiceState {
  id: string
  outcome: InvoiceOutcome
  /** Hosted invoice page, where a customer completes a 3-D Secure challenge or pays. */
  url: string | null
  version: Version
}

export interface SubscriptionRecord extends Omit<SubscriptionSnapshot, 'status'> {
  id: string
  orgId: string
  customerId: string | null
  /** Null until a subscription event has been seen (a checkout or invoice event may come first). */
  status: string | null
  snapshot: Version | null
  /** Earliest proof that money moved, epoch ms. */
  paidAt: number | null
  invoice: InvoiceState | null
}

export function emptyRecord(id: string, orgId: string, customerId: string | null): SubscriptionRecord {
  return {
    id,
    orgId,
    customerId,
    status: null,
    plan: null,
    priceId: null,
    interval: null,
    seats: null,
    currentPeriodEnd: null,
    cancelAtPeriodEnd: false,
    snapshot: null,
    paidAt: null,
    invoice: null,
  }
}

export function withSnapshot(record: SubscriptionRecord, snapshot: SubscriptionSnapshot, version: Version): SubscriptionRecord {
  if (!isNewer(version, record.snapshot)) return record
  // A price this service does not know keeps the plan the checkout named.
  return { ...record, ...snapshot, plan: snapshot.plan ?? record.plan, snapshot: version }
}

export function withPayment(record: SubscriptionRecord, paidAt: number): SubscriptionRecord {
  if (record.paidAt !== null && record.paidAt <= paidAt) return record
  return { ...record, paidAt }
}

export function withInvoice(record: SubscriptionRecord, invoice: InvoiceState): SubscriptionRecord {
  if (record.invoice && !isNewer(invoice.version, record.invoice.version)) return record
  return { ...record, invoice }
}

/** A plan fact known before any subscription event (from checkout metadata); never overrides one. */
export function withPlanHint(record: SubscriptionRecord, plan: string | null): SubscriptionRecord {
  return record.plan || !plan ? record : { ...record, plan }
}

export interface Entitlement {
  plan: string
  /** Epoch ms when the plan lapses; null while the subscription renews. */
  expiresAt: number | null
}

/**
 * The plan one subscription grants now. Nothing before money has moved; while it renews (active,
 * trialing, past_due during retries, or not yet reported) the plan; once cancelled or unpaid, the
 * plan until the end of the period already paid for.
 */
export function entitlementOf(record: SubscriptionRecord, now: number): Entitlement | undefined {
  if (record.paidAt === null || !record.plan) return undefined
  const periodEnd = record.currentPeriodEnd
  switch (record.status) {
    case null:
    case 'incomplete': // payment proof outran the subscription's own update
    case 'trialing':
    case 'active':
    case 'past_due':
      return { plan: record.plan, expiresAt: record.cancelAtPeriodEnd && periodEnd !== null ? periodEnd : null }
    case 'canceled':
    case 'unpaid':
      return periodEnd !== null && periodEnd > now ? { plan: record.plan, expiresAt: periodEnd } : undefined
    default: // incomplete_expired, paused and anything newer: no paid access
      return undefined
  }
}

/**
 * The plan an organisation's subscriptions give it, or undefined when none was ever paid (the plan
 * an operator set is then left alone). A renewing subscription wins over one that is ending; among
 * equals the later end, then the plan listed later in PLANS.
 */
export function organisationPlan(
  records: readonly SubscriptionRecord[],
  now: number,
  plans: { ids: readonly string[]; fallback: string },
): Entitlement | undefined {
  if (!records.some((r) => r.paidAt !== null)) return undefined
  let best: Entitlement | undefined
  const score = (e: Entitlement) => [e.expiresAt === null ? Infinity : e.expiresAt, plans.ids.indexOf(e.plan)] as const
  for (const record of records) {
    const entitlement = entitlementOf(record, now)
    if (!entitlement) continue
    if (!best) {
      best = entitlement
      continue
    }
    const [end, rank] = score(entitlement)
    const [bestEnd, bestRank] = score(best)
    if (end > bestEnd || (end === bestEnd && rank > bestRank)) best = entitlement
  }
  return best ?? { plan: plans.fallback, expiresAt: null }
}

/** What the audit log and the billing view show of a subscription. */
export function summarise(record: SubscriptionRecord | undefined) {
  if (!record) return null
  return {
    id: record.id,
    status: record.status,
    plan: record.plan,
    seats: record.seats,
    interval: record.interval,
    currentPeriodEnd: record.currentPeriodEnd === null ? null : new Date(record.currentPeriodEnd).toISOString(),
    cancelAtPeriodEnd: record.cancelAtPeriodEnd,
    paid: record.paidAt !== null,
    invoice: record.invoice?.outcome ?? null,
  }
}
