/**
 * Checkout: a subscription-mode Checkout Session for a plan's configured price. The hosted page
 * collects the card and runs 3-D Secure when the issuer asks (strong customer authentication); the
 * plan itself is granted later, by the webhook, once money has moved.
 */
import type { AccountStore } from '../../src/auth/account-store.ts'
import type { PaymentSettings } from './settings.ts'
import { AppError } from '../../src/errors.ts'
import type { Database } from '../../src/storage/database.ts'
import { appendAudit } from './audit-log.ts'
import { checkoutKey, customerOf, linkCustomer, recordCheckoutSession, subscriptionsOf } from './billing-store.ts'
import type { ReceiptMeta } from './event-store.ts'
import type { BillingInterval } from './schemas.ts'
import type { PaymentProvider } from './provider.ts'
import { entitlementOf } from './subscription-state.ts'
import type { Caller } from '../../src/auth/caller.ts'

/** Repeating the same checkout within this window answers the same session (a double click, a retry). */
export const CHECKOUT_REUSE_WINDOW_MS = 10 * 60_000

export interface CheckoutDeps {
  db: Database
  accounts: AccountStore
  settings: PaymentSettings
  provider: () => PaymentProvider
  now: () => number
}

export type { Caller }

export interface CheckoutRequest {
  plan: string
  seats?: number
  interval?: BillingInterval
}

export interface CheckoutAnswer {
  sessionId: string
  url: string
  expiresAt: string | null
  plan: string
  seats: number
  interval: BillingInterval
}

function unknownPlan(plan: string, interval: BillingInterval, prices: Readonly<Record<string, string>>): AppError {
  const allowed = Object.keys(prices)
  const variable = interval === 'year' ? 'PLAN_PRICES_YEARLY' : 'PLAN_PRICES'
  const message = allowed.length
    ? `"${plan}" is not a plan that can be bought with ${interval}ly billing; choose one of ${allowed.join(', ')}`
    : `no plan can be bought with ${interval}ly billing: ${variable} is empty`
  return new AppError('validation_failed', `plan: ${message}`, { errors: [{ field: 'plan', message }], extensions: { allowed } })
}

/** The organisation's customer at the provider, created on its first checkout. */
async function ensureCustomer(deps: CheckoutDeps, provider: PaymentProvider, orgId: string): Promise<string> {
  const existing = await customerOf(deps.db.sql, orgId)
  if (existing) return existing
  const org = await deps.accounts.organization(orgId)
  // One key per organisation: two first checkouts at once still make one customer.
  const created = await provider.createCustomer({ orgId, name: org?.name ?? orgId }, `customer-${orgId}`)
  return (await linkCustomer(deps.db.sql, orgId, created.id, deps.now())) ?? created.id
}

export async function createCheckout(deps: CheckoutDeps, caller: Caller, request: CheckoutRequest, receipt: ReceiptMeta): Promise<CheckoutAnswer> {
  const provider = deps.provider()
  const interval = request.interval ?? 'month'
  const seats = request.seats ?? 1
  const prices = deps.settings.prices[interval]
  const priceId = prices[request.plan]
  if (!priceId) throw unknownPlan(request.plan, interval, prices)
  const now = deps.now()
  // A second subscription would bill twice; changes to a running one go through the portal.
  const renewing = (await subscriptionsOf(deps.db.sql, caller.orgId)).map((r) => entitlementOf(r, now)).find((e) => e && e.expiresAt === null)
  if (renewing)
    throw new AppError(
      'already_subscribed',
      `The organisation already pays for ${renewing.plan}; change plan or seats in the billing portal (GET /api/payment/billing-portal)`,
      {
        extensions: { plan: renewing.plan },
      },
    )

  const customerId = await ensureCustomer(deps, provider, caller.orgId)
  const fingerprint = [caller.userId, request.plan, seats, interval].join(':')
  const idempotencyKey = await checkoutKey(deps.db.sql, { orgId: caller.orgId, fingerprint, now, windowMs: CHECKOUT_REUSE_WINDOW_MS })
  const session = await provider.createCheckoutSession(
    {
      customerId,
      priceId,
      seats,
      orgId: caller.orgId,
      userId: caller.userId,
      plan: request.plan,
      interval,
      successUrl: deps.settings.checkoutSuccessUrl,
      cancelUrl: deps.settings.checkoutCancelUrl,
    },
    idempotencyKey,
  )
  await recordCheckoutSession(deps.db.sql, caller.orgId, fingerprint, session.id)
  await deps.db.sql.begin((tx) =>
    appendAudit(
      tx,
      {
        orgId: caller.orgId,
        actor: `user:${caller.userId}`,
        action: 'checkout.created',
        ...receipt,
        details: { sessionId: session.id, plan: request.plan, priceId, seats, interval, customerId, reused: session.replayed },
      },
      deps.now(),
    ),
  )
  return {
    sessionId: session.id,
    url: session.url,
    expiresAt: session.expiresAt === null ? null : new Date(session.expiresAt).toISOString(),
    plan: request.plan,
    seats,
    interval,
  }
}

/** A billing portal session for the organisation's customer. */
export async function openBillingPortal(deps: CheckoutDeps, caller: Caller, receipt: ReceiptMeta): Promise<{ url: string }> {
  const provider = deps.provider()
  const customerId = await customerOf(deps.db.sql, caller.orgId)
  if (!customerId) throw new AppError('no_customer', 'The organisation has no billing customer yet; start a checkout first (POST /api/payment/create-checkout)')
  const session = await provider.createPortalSession({ customerId, returnUrl: deps.settings.portalReturnUrl })
  await deps.db.sql.begin((tx) =>
    appendAudit(
      tx,
      {
        orgId: caller.orgId,
        actor: `user:${caller.userId}`,
        action: 'billing_portal.opened',
        ...receipt,
        details: { customerId, portalSessionId: session.id },
      },
      deps.now(),
    ),
  )
  return { url: session.url }
}
