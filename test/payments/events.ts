/**
 * Stripe-shaped objects and events for the webhook suites, as the API version the SDK pins sends
 * them (period ends on subscription items, an invoice's subscription under parent.subscription_details).
 */

type Obj = Record<string, unknown>

let sequence = 0
const unique = (prefix: string) => `${prefix}_${Date.now().toString(36)}${(++sequence).toString(36).padStart(4, '0')}${Math.random().toString(36).slice(2, 6)}`

export const ids = {
  event: () => unique('evt'),
  subscription: () => unique('sub'),
  customer: () => unique('cus'),
  invoice: () => unique('in'),
  session: () => unique('cs_test'),
}

/** Unix seconds. */
export const seconds = (ms = Date.now()) => Math.floor(ms / 1000)

export function event(type: string, object: Obj, created: number, id = ids.event()) {
  return {
    id,
    object: 'event',
    api_version: '2026-10-28.endive',
    created,
    type,
    livemode: false,
    pending_webhooks: 1,
    request: { id: null, idempotency_key: null },
    data: { object },
  }
}
export type StripeEvent = ReturnType<typeof event>

export interface SubscriptionFacts {
  id: string
  customer: string
  orgId: string
  plan: string
  priceId: string
  status: string
  seats?: number
  /** Unix seconds. */
  periodEnd: number
  cancelAtPeriodEnd?: boolean
  interval?: 'month' | 'year'
}

export function subscription(f: SubscriptionFacts) {
  return {
    id: f.id,
    object: 'subscription',
    customer: f.customer,
    status: f.status,
    metadata: { orgId: f.orgId, plan: f.plan },
    cancel_at_period_end: f.cancelAtPeriodEnd ?? false,
    created: f.periodEnd - 30 * 86_400,
    collection_method: 'charge_automatically',
    items: {
      object: 'list',
      data: [
        {
          id: `si_${f.id}`,
          object: 'subscription_item',
          price: { id: f.priceId, object: 'price', recurring: { interval: f.interval ?? 'month', interval_count: 1 } },
          quantity: f.seats ?? 1,
          current_period_start: f.periodEnd - 30 * 86_400,
          current_period_end: f.periodEnd,
        },
      ],
    },
  }
}

export function checkoutSession(f: {
  id?: string
  customer: string
  subscription: string
  orgId: string
  userId?: string
  plan: string
  paymentStatus: 'paid' | 'unpaid' | 'no_payment_required'
}) {
  return {
    id: f.id ?? ids.session(),
    object: 'checkout.session',
    mode: 'subscription',
    status: 'complete',
    payment_status: f.paymentStatus,
    customer: f.customer,
    subscription: f.subscription,
    client_reference_id: f.orgId,
    metadata: { orgId: f.orgId, userId: f.userId ?? 'someone', plan: f.plan },
  }
}

export function invoice(f: { id?: string; customer: string; subscription: string; orgId: string; plan: string; status: 'paid' | 'open'; hostedUrl?: string }) {
  return {
    id: f.id ?? ids.invoice(),
    object: 'invoice',
    customer: f.customer,
    status: f.status,
    billing_reason: 'subscription_create',
    hosted_invoice_url: f.hostedUrl ?? null,
    parent: {
      type: 'subscription_details',
      quote_details: null,
      subscription_details: { subscription: f.subscription, metadata: { orgId: f.orgId, plan: f.plan } },
    },
  }
}
