import { Elysia, redirect, t } from 'elysia'
import type { AccessService } from '../../src/auth/access-service.ts'
import type { PlanDirectory } from '../../src/auth/plans.ts'
import { accessControl } from '../../src/auth/plugin.ts'
import { problem } from '../../src/schemas.ts'
import { rateLimiting, type RateLimitingOptions } from '../../src/rate-limit/plugin.ts'
import { requestMeta } from '../../src/request-pipeline.ts'
import { auditRoutes } from './audit-routes.ts'
import { billingOverview, checkoutBody, checkoutSession, portalLink, webhookReceipt } from './schemas.ts'
import type { PaymentsService } from './service.ts'
export { paymentsSettings } from './settings.ts'

export { createPaymentsService, type PaymentsService } from './service.ts'

export interface PaymentsPluginOptions {
  payments: PaymentsService
  access: AccessService
  plans: PlanDirectory
  rateLimits: RateLimitingOptions
}

const receiptOf = (request: Request) => {
  const meta = requestMeta(request)
  return { requestId: meta.id, clientIp: meta.clientIp }
}

/**
 * Checkout, the payment webhook, the billing portal, the billing view and the audit log.
 * Payment routes answer 503 not_configured until STRIPE_SECRET_KEY and PAYMENT_WEBHOOK_SECRET are set.
 */
export function paymentsPlugin(options: PaymentsPluginOptions) {
  const { payments } = options
  return new Elysia({ name: 'payments', detail: { tags: ['billing'] } })
    .use(accessControl(options))
    .use(rateLimiting(options.rateLimits))
    .post(
      '/api/payment/create-checkout',
      ({ body, principal, request }) => payments.createCheckout({ orgId: principal.orgId, userId: principal.userId }, body, receiptOf(request)),
      {
        body: checkoutBody,
        auth: 'billing:manage',
        rateLimit: 'default',
        response: { 200: checkoutSession, 401: problem, 403: problem, 409: problem, 422: problem, 429: problem, 502: problem, 503: problem, 504: problem },
        detail: {
          summary: 'Start a subscription checkout for a plan: answers the hosted Checkout page to send the customer to',
          description:
            'Subscription-mode Checkout Session for the plan\'s price (PLAN_PRICES, or PLAN_PRICES_YEARLY with interval "year"), with seats as the quantity. ' +
            'The hosted page performs 3-D Secure when the card needs it (strong customer authentication). The same request again within 10 minutes answers the same session. ' +
            'The plan is granted by the webhook once money has moved. 422 lists the plans that can be bought; 409 already_subscribed when a subscription renews already (use the billing portal).',
        },
      },
    )
    .post(
      '/api/payment/webhook',
      async ({ body, request }) => {
        // The pipeline parsed the JSON and kept the exact bytes; the signature is checked over those.
        void body
        const meta = requestMeta(request)
        const receipt = await payments.receiveWebhook(meta.rawBody ?? '', request.headers.get('stripe-signature'), receiptOf(request))
        return { received: true as const, ...receipt }
      },
      {
        body: t.Unknown({ description: 'A payment provider event, exactly as signed' }),
        response: { 200: webhookReceipt, 400: problem, 413: problem, 415: problem, 503: problem },
        detail: {
          summary: 'Receive a payment provider event (no bearer token: the Stripe-Signature header is verified)',
          security: [],
          description:
            'The signature is checked over the raw body with PAYMENT_WEBHOOK_SECRET; a timestamp more than PAYMENT_WEBHOOK_TOLERANCE_SECONDS (300) old or ahead is refused, ' +
            'and any one of several v1 signatures may match. A failed check is 400 invalid_signature and stores nothing. A verified event is stored before it is acknowledged, ' +
            'applied from the store once however often it is delivered, and applied later if applying it fails now.',
        },
      },
    )
    .get(
      '/api/payment/billing-portal',
      async ({ principal, request }) => {
        const { url } = await payments.openBillingPortal({ orgId: principal.orgId, userId: principal.userId }, receiptOf(request))
        return /application\/json/i.test(request.headers.get('accept') ?? '') ? { url } : redirect(url, 303)
      },
      {
        auth: 'billing:manage',
        rateLimit: 'default',
        response: {
          200: portalLink,
          303: t.Void({ description: 'Redirect to the billing portal (Location header)' }),
          401: problem,
          403: problem,
          409: problem,
          429: problem,
          502: problem,
          503: problem,
          504: problem,
        },
        detail: {
          summary: "Open the payment provider's customer portal: 303 to it, or {url} with Accept: application/json",
          description: '409 no_customer when the organisation has never started a checkout.',
        },
      },
    )
    .get('/api/billing', ({ principal }) => payments.billingOf(principal.orgId), {
      auth: 'any',
      rateLimit: 'default',
      response: { 200: billingOverview, 401: problem, 429: problem },
      detail: { summary: "The organisation's plan, subscription status, seats and renewal date (any member)" },
    })
    .use(auditRoutes(options))
}
