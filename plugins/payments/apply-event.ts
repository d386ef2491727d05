/**
 * Applies one stored payment event inside a transaction: finds the organisation, locks it (so events
 * of one organisation apply one after another, in every process), merges the event into the
 * subscription's record, moves the organisation's plan when the record says so, and writes the audit
 * entries, all or nothing.
 */
import type { SQL } from 'bun'
import type { AccountStore } from '../../src/auth/account-store.ts'
import { appendAudit, canonicalJson, type Actor } from './audit-log.ts'
import { linkCustomer, orgOfCustomer, saveSubscription, subscription, subscriptionsOf } from './billing-store.ts'
import type { ClaimedEvent, EventResult } from './event-store.ts'
import {
  emptyRecord,
  invoiceRank,
  organisationPlan,
  statusRank,
  summarise,
  withInvoice,
  withPayment,
  withPlanHint,
  withSnapshot,
  type InvoiceOutcome,
  type SubscriptionRecord,
} from './subscription-state.ts'

export const PROVIDER_ACTOR: Actor = 'provider:stripe'

/** Event types that change billing state; every other type is stored, acknowledged and left alone. */
export const HANDLED_EVENT_TYPES = [
  'checkout.session.completed',
  'checkout.session.async_payment_succeeded',
  'customer.subscription.created',
  'customer.subscription.updated',
  'customer.subscription.deleted',
  'customer.subscription.paused',
  'customer.subscription.resumed',
  'invoice.paid',
  'invoice.payment_failed',
  'invoice.payment_action_required',
] as const

/** Which plan and interval each configured price id stands for. */
export type PriceIndex = ReadonlyMap<string, { plan: string; interval: 'month' | 'year' }>

export function priceIndex(prices: { month: Readonly<Record<string, string>>; year: Readonly<Record<string, string>> }): PriceIndex {
  const index = new Map<string, { plan: string; interval: 'month' | 'year' }>()
  for (const interval of ['month', 'year'] as const) for (const [plan, price] of Object.entries(prices[interval])) index.set(price, { plan, interval })
  return index
}

export interface ApplyContext {
  tx: SQL
  accounts: AccountStore
  prices: PriceIndex
  plans: { ids: readonly string[]; fallback: string }
  now: number
}

export interface ApplyOutcome {
  result: EventResult
  detail: string | null
  orgId: string | null
}

/** What an event says about one subscription. */
interface Change {
  subscriptionId: string
  customerId: string | null
  /** Organisation named by the metadata this service put on the checkout and subscription. */
  orgHint: string | null
  mutate(record: SubscriptionRecord): SubscriptionRecord
}

// biome-ignore lint/suspicious/noExplicitAny: a Stripe event's object, read field by field with checks
type Obj = Record<string, any>
const idOf = (value: unknown): string | null => (typeof value === 'string' && value ? value : typeof (value as Obj)?.id === 'string' ? (value as Obj).id : null)
const text = (value: unknown): string | null => (typeof value === 'string' && value ? value : null)

function checkoutChange(event: ClaimedEvent, s: Obj): Change | string {
  if (s.mode !== 'subscription') return 'not a subscription checkout'
  const subscriptionId = idOf(s.subscription)
  if (!subscriptionId) return 'checkout session without a subscription'
  const paid = s.payment_status === 'paid'
  return {
    subscriptionId,
    customerId: idOf(s.customer),
    orgHint: text(s.metadata?.orgId) ?? text(s.client_reference_id),
    mutate: (record) => {
      const hinted = withPlanHint(record, text(s.metadata?.plan))
      return paid ? withPayment(hinted, event.created * 1000) : hinted
    },
  }
}

function subscriptionChange(event: ClaimedEvent, sub: Obj, prices: PriceIndex): Change | string {
  const subscriptionId = idOf(sub)
  if (!subscriptionId || typeof sub.status !== 'string') return 'subscription without id or status'
  const items: Obj[] = Array.isArray(sub.items?.data) ? sub.items.data : []
  // The item whose price this service sells names the plan; otherwise the first item.
  const item = items.find((i) => prices.has(idOf(i.price) ?? '')) ?? items[0]
  const priceId = item ? idOf(item.price) : null
  const known = priceId ? prices.get(priceId) : undefined
  // The period end sits on items in current API versions and on the subscription in older ones.
  const periodEnds = [...items.map((i) => i.current_period_end), sub.current_period_end].filter((v): v is number => Number.isInteger(v))
  const snapshot = {
    status: sub.status as string,
    plan: known?.plan ?? text(sub.metadata?.plan),
    priceId,
    interval: text(item?.price?.recurring?.interval) ?? known?.interval ?? null,
    seats: Number.isInteger(item?.quantity) ? (item!.quantity as number) : null,
    currentPeriodEnd: periodEnds.length ? Math.max(...periodEnds) * 1000 : null,
    cancelAtPeriodEnd: sub.cancel_at_period_end === true,
  }
  const version = { at: event.created, rank: statusRank(snapshot.status), eventId: event.id }
  return {
    subscriptionId,
    customerId: idOf(sub.customer),
    orgHint: text(sub.metadata?.orgId),
    mutate: (record) => withSnapshot(record, snapshot, version),
  }
}

const INVOICE_OUTCOMES: Record<string, InvoiceOutcome> = {
  'invoice.paid': 'paid',
  'invoice.payment_failed': 'payment_failed',
  'invoice.payment_action_required': 'action_required',
}

function invoiceChange(event: ClaimedEvent, inv: Obj): Change | string {
  const details: Obj | undefined = inv.parent?.subscription_details ?? inv.subscription_details
  const subscriptionId = idOf(details?.subscription) ?? idOf(inv.subscription)
  if (!subscriptionId) return 'invoice not raised by a subscription'
  const outcome = INVOICE_OUTCOMES[event.type]!
  const invoice = {
    id: idOf(inv) ?? event.id,
    outcome,
    url: text(inv.hosted_invoice_url),
    version: { at: event.created, rank: invoiceRank(outcome), eventId: event.id },
  }
  return {
    subscriptionId,
    customerId: idOf(inv.customer),
    orgHint: text(details?.metadata?.orgId),
    mutate: (record) => {
      const updated = withInvoice(withPlanHint(record, text(details?.metadata?.plan)), invoice)
      return outcome === 'paid' ? withPayment(updated, event.created * 1000) : updated
    },
  }
}

function changeFor(event: ClaimedEvent, prices: PriceIndex): Change | string {
  if (event.type.startsWith('checkout.session.')) return checkoutChange(event, event.object)
  if (event.type.startsWith('customer.subscription.')) return subscriptionChange(event, event.object, prices)
  return invoiceChange(event, event.object)
}

// Every query runs on the transaction: a second pooled connection per apply could exhaust the pool.
async function resolveOrg(tx: SQL, change: Change): Promise<string | undefined> {
  if (change.orgHint && (await tx`SELECT id FROM organizations WHERE id = ${change.orgHint}`).length > 0) return change.orgHint
  if (change.customerId) {
    const linked = await orgOfCustomer(tx, change.customerId)
    if (linked) return linked
  }
  return (await subscription(tx, change.subscriptionId))?.orgId
}

export async function applyEvent(ctx: ApplyContext, event: ClaimedEvent): Promise<ApplyOutcome> {
  const { tx, now } = ctx
  if (!(HANDLED_EVENT_TYPES as readonly string[]).includes(event.type)) return { result: 'ignored', detail: 'event type not handled', orgId: null }
  const change = changeFor(event, ctx.prices)
  if (typeof change === 'string') return { result: 'ignored', detail: change, orgId: null }
  const orgId = await resolveOrg(tx, change)
  if (!orgId) return { result: 'ignored', detail: `no organisation for subscription ${change.subscriptionId}`, orgId: null }
  // A no-op write that locks the organisation row until commit: its events apply one at a time.
  const [org] = await tx`UPDATE organizations SET plan = plan WHERE id = ${orgId} RETURNING plan, plan_expires_at`
  if (!org) return { result: 'ignored', detail: `organisation ${orgId} no longer exists`, orgId: null }
  const planBefore = { plan: org.plan as string, expiresAt: org.plan_expires_at === null ? null : Number(org.plan_expires_at) }

  if (change.customerId) await linkCustomer(tx, orgId, change.customerId, now)
  const stored = await subscription(tx, change.subscriptionId)
  const before = stored ?? emptyRecord(change.subscriptionId, orgId, change.customerId)
  const after = change.mutate({ ...before, customerId: before.customerId ?? change.customerId })
  if (stored && canonicalJson(stored) === canonicalJson(after)) return { result: 'stale', detail: 'nothing newer than the stored state', orgId }
  await saveSubscription(tx, after, now)

  const desired = organisationPlan(await subscriptionsOf(tx, orgId), now, ctx.plans)
  const planAfter = desired ?? planBefore
  const receipt = { requestId: event.receipt.requestId, clientIp: event.receipt.clientIp }
  const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString())
  if (desired && (desired.plan !== planBefore.plan || desired.expiresAt !== planBefore.expiresAt)) {
    await ctx.accounts.setPlan(orgId, desired.plan, { expiresAt: desired.expiresAt, sql: tx })
    await appendAudit(
      tx,
      {
        orgId,
        actor: PROVIDER_ACTOR,
        action: 'plan.changed',
        ...receipt,
        details: { from: planBefore.plan, to: desired.plan, expiresAt: iso(desired.expiresAt), eventId: event.id, subscriptionId: after.id },
      },
      now,
    )
  }
  await appendAudit(
    tx,
    {
      orgId,
      actor: PROVIDER_ACTOR,
      action: 'payment_event.applied',
      ...receipt,
      details: {
        eventId: event.id,
        type: event.type,
        before: { subscription: summarise(stored), plan: planBefore.plan, planExpiresAt: iso(planBefore.expiresAt) },
        after: { subscription: summarise(after), plan: planAfter.plan, planExpiresAt: iso(planAfter.expiresAt) },
      },
    },
    now,
  )
  return { result: 'applied', detail: null, orgId }
}

/** The organisation an event is about, when it can be told (for the receipt's audit entry). */
export async function eventOrganisation(tx: SQL, event: ClaimedEvent, prices: PriceIndex): Promise<string | null> {
  if (!(HANDLED_EVENT_TYPES as readonly string[]).includes(event.type)) return null
  const change = changeFor(event, prices)
  return typeof change === 'string' ? null : ((await resolveOrg(tx, change)) ?? null)
}
