/**
 * Payments and billing as one service: checkout, the billing portal, webhook events, the billing
 * view, plan expiry and the audit log. Routes, the CLI and tests call it; it never sees a request.
 */
import type { AccountStore } from '../../src/auth/account-store.ts'
import type { PlanDirectory } from '../../src/auth/plans.ts'
import type { PaymentSettings } from './settings.ts'
import { AppError } from '../../src/errors.ts'
import type { Logger } from '../../src/log.ts'
import type { Database } from '../../src/storage/database.ts'
import { priceIndex } from './apply-event.ts'
import { appendAudit, listAudit, verifyAuditChain, type AuditEntry, type AuditInput, type AuditQuery } from './audit-log.ts'
import { customerOf, subscriptionsOf } from './billing-store.ts'
import { createCheckout, openBillingPortal, type Caller, type CheckoutDeps, type CheckoutRequest } from './checkout.ts'
import type { ReceiptMeta } from './event-store.ts'
import { expireLapsedPlans } from './plan-expiry.ts'
import { createStripeProvider, type PaymentProvider } from './provider.ts'
import { entitlementOf, type SubscriptionRecord } from './subscription-state.ts'
import { createWebhookProcessor, type PaymentsHooks } from './webhook.ts'

export interface PaymentsServiceOptions {
  db: Database
  accounts: AccountStore
  plans: PlanDirectory
  logger: Logger
  settings: PaymentSettings
  /** PLANS; the first is what a lapsed plan falls back to. */
  planIds: readonly string[]
  /** Default: Stripe, from `settings.provider`; none when that is unset (routes answer 503). */
  provider?: PaymentProvider
  now?: () => number
  /** How often stored-but-unapplied events and lapsed plans are looked for. Default 30000; 0 turns the timer off. */
  recoveryIntervalMs?: number
  /** Failed applies before an event is left for an operator. Default 10. */
  maxAttempts?: number
  hooks?: PaymentsHooks
}

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString())

/** The subscription the billing view shows: the one granting the plan, else the most recent. */
function currentSubscription(records: SubscriptionRecord[], now: number): SubscriptionRecord | undefined {
  const granting = records.filter((r) => entitlementOf(r, now))
  const pool = granting.length ? granting : records
  return pool.reduce<SubscriptionRecord | undefined>((latest, r) => (!latest || (r.snapshot?.at ?? 0) >= (latest.snapshot?.at ?? 0) ? r : latest), undefined)
}

export function createPaymentsService(options: PaymentsServiceOptions) {
  const { db, accounts, plans, logger, settings } = options
  const now = options.now ?? Date.now
  const planIds = { ids: options.planIds, fallback: options.planIds[0]! }
  const provider =
    options.provider ?? (settings.provider ? createStripeProvider(settings.provider, { toleranceSeconds: settings.webhookToleranceSeconds }) : undefined)
  const requireProvider = () => {
    if (!provider)
      throw new AppError('not_configured', `Payments are not configured; set ${settings.missing.join(' and ')}`, {
        extensions: { variables: [...settings.missing] },
      })
    return provider
  }
  const checkoutDeps: CheckoutDeps = { db, accounts, settings, provider: requireProvider, now }
  const webhooks = createWebhookProcessor({
    db,
    accounts,
    plans,
    logger,
    prices: priceIndex(settings.prices),
    planIds,
    now,
    hooks: options.hooks,
    maxAttempts: options.maxAttempts ?? 10,
  })

  let timer: ReturnType<typeof setInterval> | undefined
  let sweeping: Promise<unknown> = Promise.resolve()
  /** One recovery pass: unapplied events, then lapsed plans. Passes never overlap. */
  function recover(): Promise<{ events: number; lapsedPlans: number }> {
    const pass = sweeping.then(async () => {
      const events = await webhooks.processPending()
      const lapsed = await expireLapsedPlans({ db, accounts, plans, planIds, now })
      if (events || lapsed.length) logger.info('billing recovery pass', { events, lapsedPlans: lapsed.length })
      return { events, lapsedPlans: lapsed.length }
    })
    sweeping = pass.catch((err) => logger.error('billing recovery pass failed', { err }))
    return pass
  }

  return {
    /** False when STRIPE_SECRET_KEY or PAYMENT_WEBHOOK_SECRET is unset. */
    configured: provider !== undefined,

    createCheckout: (caller: Caller, request: CheckoutRequest, receipt: ReceiptMeta) => createCheckout(checkoutDeps, caller, request, receipt),
    openBillingPortal: (caller: Caller, receipt: ReceiptMeta) => openBillingPortal(checkoutDeps, caller, receipt),
    receiveWebhook: (rawBody: string, signatureHeader: string | null, receipt: ReceiptMeta) =>
      webhooks.receive(requireProvider(), rawBody, signatureHeader, receipt),
    processEvent: webhooks.processEvent,
    recover,

    /** Plan, status, seats and renewal date of an organisation. */
    async billingOf(orgId: string) {
      const at = now()
      const [org, plan, customerId, records] = await Promise.all([
        accounts.organization(orgId),
        plans.planOf(orgId),
        customerOf(db.sql, orgId),
        subscriptionsOf(db.sql, orgId),
      ])
      const expiresAt = org?.planExpiresAt ?? null
      const sub = currentSubscription(records, at)
      const renewing = sub && ['active', 'trialing', 'past_due'].includes(sub.status ?? '') && !sub.cancelAtPeriodEnd
      const ending = sub && (sub.cancelAtPeriodEnd || sub.status === 'canceled' || sub.status === 'unpaid')
      return {
        organizationId: orgId,
        plan,
        planExpiresAt: expiresAt !== null && expiresAt > at ? iso(expiresAt) : null,
        customer: customerId !== undefined,
        subscription: sub
          ? {
              id: sub.id,
              status: sub.status,
              plan: sub.plan,
              seats: sub.seats,
              interval: sub.interval,
              paid: sub.paidAt !== null,
              cancelAtPeriodEnd: sub.cancelAtPeriodEnd,
              currentPeriodEnd: iso(sub.currentPeriodEnd),
              renewsAt: renewing ? iso(sub.currentPeriodEnd) : null,
              endsAt: ending ? iso(sub.currentPeriodEnd) : null,
              latestInvoice: sub.invoice ? { status: sub.invoice.outcome, url: sub.invoice.url } : null,
            }
          : null,
      }
    },

    /**
     * A subscription of the organisation that would charge it again (active, trialing or past due, and not set to end
     * at its period's end): an organisation with one is not deleted until it is cancelled in the billing portal.
     */
    async renewingSubscription(orgId: string): Promise<{ id: string; status: string } | undefined> {
      const renewing = (await subscriptionsOf(db.sql, orgId)).find((r) => ['active', 'trialing', 'past_due'].includes(r.status ?? '') && !r.cancelAtPeriodEnd)
      return renewing && { id: renewing.id, status: renewing.status! }
    },

    /** Appends one entry to the audit log, in a transaction of its own. */
    recordAudit: (input: AuditInput): Promise<AuditEntry> => db.sql.begin((tx) => appendAudit(tx, input, now())),

    /**
     * Deletes the organisation's billing customer, subscriptions and checkout requests (an organisation's deletion).
     * The audit log and the payment events stay: they are the record of money that moved, and the chain must verify.
     */
    async deleteOrganisationBilling(orgId: string): Promise<{ customers: number; subscriptions: number; checkouts: number }> {
      return db.sql.begin(async (tx) => {
        const subscriptions = await tx`DELETE FROM billing_subscriptions WHERE org_id = ${orgId} RETURNING id`
        const customers = await tx`DELETE FROM billing_customers WHERE org_id = ${orgId} RETURNING org_id`
        const checkouts = await tx`DELETE FROM checkout_requests WHERE org_id = ${orgId} RETURNING org_id`
        return { customers: customers.length, subscriptions: subscriptions.length, checkouts: checkouts.length }
      })
    },

    listAudit: (query: AuditQuery): Promise<{ entries: AuditEntry[]; more: boolean }> => listAudit(db, query),
    verifyAudit: () => verifyAuditChain(db),

    /** Applies what a crash left behind, then keeps looking every `recoveryIntervalMs`. */
    async start(): Promise<void> {
      // A failed pass must not stop the service from starting; the timer tries again.
      await recover().catch(() => {})
      const interval = options.recoveryIntervalMs ?? 30_000
      if (interval > 0 && !timer) {
        timer = setInterval(() => void recover().catch(() => {}), interval)
        timer.unref?.()
      }
    },

    async close(): Promise<void> {
      if (timer) clearInterval(timer)
      timer = undefined
      await sweeping
    },
  }
}

export type PaymentsService = ReturnType<typeof createPaymentsService>
