/**
 * Billing tables over either SQL backend. Every function takes the `sql` to run on, so the webhook
 * can change a subscription, the plan and the audit log in one transaction.
 */
import type { SQL } from 'bun'
import { toNullableNumber, type SqlRow } from '../../src/storage/database.ts'
import type { InvoiceOutcome, SubscriptionRecord } from './subscription-state.ts'

export async function customerOf(sql: SQL, orgId: string): Promise<string | undefined> {
  const [row] = await sql`SELECT customer_id FROM billing_customers WHERE org_id = ${orgId}`
  return row?.customer_id
}

export async function orgOfCustomer(sql: SQL, customerId: string): Promise<string | undefined> {
  const [row] = await sql`SELECT org_id FROM billing_customers WHERE customer_id = ${customerId}`
  return row?.org_id
}

/** Links a customer to an organisation unless either is linked already; answers the organisation's customer. */
export async function linkCustomer(sql: SQL, orgId: string, customerId: string, now: number): Promise<string | undefined> {
  await sql`INSERT INTO billing_customers (org_id, customer_id, created_at) VALUES (${orgId}, ${customerId}, ${now}) ON CONFLICT DO NOTHING`
  return customerOf(sql, orgId)
}

const recordFrom = (r: SqlRow): SubscriptionRecord => ({
  id: r.id,
  orgId: r.org_id,
  customerId: r.customer_id ?? null,
  status: r.status ?? null,
  plan: r.plan ?? null,
  priceId: r.price_id ?? null,
  interval: r.billing_interval ?? null,
  seats: toNullableNumber(r.seats),
  currentPeriodEnd: toNullableNumber(r.current_period_end),
  cancelAtPeriodEnd: Number(r.cancel_at_period_end) === 1,
  snapshot: r.snapshot_event ? { at: Number(r.snapshot_at), rank: Number(r.snapshot_rank), eventId: r.snapshot_event } : null,
  paidAt: toNullableNumber(r.paid_at),
  invoice: r.invoice_event
    ? {
        id: r.invoice_id,
        outcome: r.invoice_status as InvoiceOutcome,
        url: r.invoice_url ?? null,
        version: { at: Number(r.invoice_at), rank: Number(r.invoice_rank), eventId: r.invoice_event },
      }
    : null,
})

export async function subscription(sql: SQL, id: string): Promise<SubscriptionRecord | undefined> {
  const [row] = await sql`SELECT * FROM billing_subscriptions WHERE id = ${id}`
  return row ? recordFrom(row) : undefined
}

export async function subscriptionsOf(sql: SQL, orgId: string): Promise<SubscriptionRecord[]> {
  return (await sql`SELECT * FROM billing_subscriptions WHERE org_id = ${orgId} ORDER BY created_at, id`).map(recordFrom)
}

export async function saveSubscription(sql: SQL, record: SubscriptionRecord, now: number): Promise<void> {
  const row = {
    id: record.id,
    org_id: record.orgId,
    customer_id: record.customerId,
    plan: record.plan,
    price_id: record.priceId,
    billing_interval: record.interval,
    seats: record.seats,
    status: record.status,
    current_period_end: record.currentPeriodEnd,
    cancel_at_period_end: record.cancelAtPeriodEnd ? 1 : 0,
    snapshot_at: record.snapshot?.at ?? null,
    snapshot_rank: record.snapshot?.rank ?? null,
    snapshot_event: record.snapshot?.eventId ?? null,
    paid_at: record.paidAt,
    invoice_id: record.invoice?.id ?? null,
    invoice_status: record.invoice?.outcome ?? null,
    invoice_url: record.invoice?.url ?? null,
    invoice_at: record.invoice?.version.at ?? null,
    invoice_rank: record.invoice?.version.rank ?? null,
    invoice_event: record.invoice?.version.eventId ?? null,
    created_at: now,
    updated_at: now,
  }
  await sql`
    INSERT INTO billing_subscriptions ${sql(row)}
    ON CONFLICT (id) DO UPDATE SET
      customer_id = excluded.customer_id, plan = excluded.plan, price_id = excluded.price_id,
      billing_interval = excluded.billing_interval, seats = excluded.seats, status = excluded.status,
      current_period_end = excluded.current_period_end, cancel_at_period_end = excluded.cancel_at_period_end,
      snapshot_at = excluded.snapshot_at, snapshot_rank = excluded.snapshot_rank, snapshot_event = excluded.snapshot_event,
      paid_at = excluded.paid_at, invoice_id = excluded.invoice_id, invoice_status = excluded.invoice_status,
      invoice_url = excluded.invoice_url, invoice_at = excluded.invoice_at, invoice_rank = excluded.invoice_rank,
      invoice_event = excluded.invoice_event, updated_at = excluded.updated_at`
}

/**
 * The idempotency key for a checkout: the same organisation, user and choice within `windowMs`
 * get the key of the first request, so the provider answers its session again. One atomic upsert,
 * so two simultaneous clicks read the same key on both backends.
 */
export async function checkoutKey(sql: SQL, input: { orgId: string; fingerprint: string; now: number; windowMs: number }): Promise<string> {
  const { orgId, fingerprint, now } = input
  const cutoff = now - input.windowMs
  const fresh = `checkout-${crypto.randomUUID()}`
  const [row] = await sql`
    INSERT INTO checkout_requests (org_id, fingerprint, idempotency_key, created_at) VALUES (${orgId}, ${fingerprint}, ${fresh}, ${now})
    ON CONFLICT (org_id, fingerprint) DO UPDATE SET
      idempotency_key = CASE WHEN checkout_requests.created_at <= ${cutoff} THEN excluded.idempotency_key ELSE checkout_requests.idempotency_key END,
      session_id = CASE WHEN checkout_requests.created_at <= ${cutoff} THEN NULL ELSE checkout_requests.session_id END,
      created_at = CASE WHEN checkout_requests.created_at <= ${cutoff} THEN excluded.created_at ELSE checkout_requests.created_at END
    RETURNING idempotency_key`
  return row.idempotency_key
}

export async function recordCheckoutSession(sql: SQL, orgId: string, fingerprint: string, sessionId: string): Promise<void> {
  await sql`UPDATE checkout_requests SET session_id = ${sessionId} WHERE org_id = ${orgId} AND fingerprint = ${fingerprint}`
}
