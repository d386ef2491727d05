import { t } from 'elysia'
import { integer, oneOf, strictObject } from '../../src/schemas.ts'

export const BILLING_INTERVALS = ['month', 'year'] as const
export type BillingInterval = (typeof BILLING_INTERVALS)[number]

export const MAX_SEATS = 10_000

export const checkoutBody = strictObject({
  plan: t.String({ minLength: 1, maxLength: 64, description: 'Plan to buy: a plan with a price in PLAN_PRICES (or PLAN_PRICES_YEARLY)', examples: ['pro'] }),
  seats: t.Optional(integer({ minimum: 1, maximum: MAX_SEATS, description: `Seats, the subscription's quantity, 1-${MAX_SEATS}. Default 1` })),
  interval: t.Optional(oneOf(BILLING_INTERVALS, { description: 'Billing interval. Default month; year needs PLAN_PRICES_YEARLY' })),
})

export const checkoutSession = t.Object({
  sessionId: t.String({ description: 'Checkout Session id' }),
  url: t.String({ description: 'Hosted Checkout page to send the customer to' }),
  expiresAt: t.Union([t.String({ format: 'date-time' }), t.Null()], { description: 'When the session stops accepting payment' }),
  plan: t.String(),
  seats: integer(),
  interval: oneOf(BILLING_INTERVALS),
})

export const webhookReceipt = t.Object({
  received: t.Literal(true),
  eventId: t.String(),
  type: t.String(),
  duplicate: t.Boolean({ description: 'The event id had been received before; nothing changed' }),
})

export const portalLink = t.Object({ url: t.String({ description: 'Billing portal session to send the customer to' }) })

const isoOrNull = t.Union([t.String({ format: 'date-time' }), t.Null()])

export const billingOverview = t.Object({
  organizationId: t.String(),
  plan: t.String({ description: 'The plan in force now, the one the access layer applies' }),
  planExpiresAt: t.Union([t.String({ format: 'date-time' }), t.Null()], { description: 'When the plan lapses to the first plan (an ending subscription)' }),
  customer: t.Boolean({ description: 'The organisation has a customer at the payment provider (the billing portal is available)' }),
  subscription: t.Union([
    t.Object({
      id: t.String(),
      status: t.Union([t.String({ description: 'incomplete, trialing, active, past_due, unpaid, canceled, ...' }), t.Null()]),
      plan: t.Union([t.String(), t.Null()]),
      seats: t.Union([integer(), t.Null()]),
      interval: t.Union([t.String(), t.Null()]),
      paid: t.Boolean({ description: 'Money has moved for it (a paid invoice or a paid checkout)' }),
      cancelAtPeriodEnd: t.Boolean(),
      currentPeriodEnd: isoOrNull,
      renewsAt: t.Union([t.String({ format: 'date-time' }), t.Null()], { description: 'Next renewal, while the subscription renews' }),
      endsAt: t.Union([t.String({ format: 'date-time' }), t.Null()], { description: 'When paid access ends, for a cancelled or ending subscription' }),
      latestInvoice: t.Union([
        t.Object({
          status: oneOf(['paid', 'payment_failed', 'action_required']),
          url: t.Union([t.String({ description: 'Hosted invoice page: pay it or complete 3-D Secure there' }), t.Null()]),
        }),
        t.Null(),
      ]),
    }),
    t.Null(),
  ]),
})

export const auditQuery = t.Object(
  {
    cursor: t.Optional(t.String({ maxLength: 64, description: 'nextCursor of the previous page' })),
    limit: t.Optional(t.Integer({ minimum: 1, maximum: 200, description: 'Entries per page, 1-200. Default 50' })),
    action: t.Optional(
      t.String({
        maxLength: 64,
        description: 'Only this action (checkout.created, billing_portal.opened, payment_webhook.received, payment_event.applied, plan.changed)',
      }),
    ),
    actor: t.Optional(t.String({ maxLength: 128, description: 'Only this actor: user:<id>, provider:stripe or system' })),
    from: t.Optional(t.String({ format: 'date-time', description: 'Entries at or after this instant' })),
    to: t.Optional(t.String({ format: 'date-time', description: 'Entries before this instant' })),
  },
  { additionalProperties: false },
)

export const auditEntry = t.Object({
  seq: integer({ description: 'Position in the chain' }),
  at: t.String({ format: 'date-time' }),
  organizationId: t.Union([t.String(), t.Null()]),
  actor: t.String({ description: 'user:<id>, provider:stripe or system' }),
  action: t.String(),
  requestId: t.Union([t.String(), t.Null()]),
  clientIp: t.Union([t.String(), t.Null()]),
  details: t.Record(t.String(), t.Unknown()),
  prevHash: t.String(),
  hash: t.String({ description: 'SHA-256 of prevHash and this entry' }),
})

export const auditPage = t.Object({
  entries: t.Array(auditEntry),
  nextCursor: t.Union([t.String(), t.Null()], { description: 'Pass as cursor for the next (older) page; null on the last page' }),
})

export const auditVerification = t.Object({
  valid: t.Boolean(),
  checked: integer({ description: 'Entries that hold, from the first' }),
  headSeq: integer({ description: 'Entries the chain head records' }),
  firstBroken: t.Union([t.Object({ seq: integer(), reason: t.String() }), t.Null()]),
})
