/** Payments' slice of the configuration: the payment provider, the prices of the paid plans and the billing pages. */
import { defineSettings, derived, integer, list, publicBase, text, url, type Report, type SettingsOf } from '../../src/config.ts'

/** `plan=price` pairs of `variable` as a record, each plan checked against PLANS. */
function priceList(variable: string, pairs: readonly string[], plans: readonly string[], report: Report): Record<string, string> {
  const prices: Record<string, string> = {}
  for (const pair of pairs) {
    const [plan, price] = pair.split('=').map((s) => s.trim())
    if (!plan || !price) report.problem(`${variable} entry "${pair}" must look like plan=price_id`)
    else if (!plans.includes(plan)) report.problem(`${variable} names plan "${plan}", which is not in PLANS (${plans.join(', ')})`)
    else prices[plan] = price
  }
  return prices
}

export const paymentsSettings = defineSettings({
  title: 'Payments',
  variables: {
    STRIPE_SECRET_KEY: { doc: 'Payment provider secret key', parse: text },
    PAYMENT_WEBHOOK_SECRET: { doc: 'Signing secret of the payment webhook', parse: text },
    PAYMENT_WEBHOOK_TOLERANCE_SECONDS: {
      doc: 'How far a webhook signature timestamp may be from now, in either direction',
      parse: integer(10, 3600),
      fallback: 300,
    },
    STRIPE_API_URL: {
      doc: 'Base URL of the payment provider API; the SDK is pointed at its host, port and protocol',
      parse: url('http:', 'https:'),
      fallback: 'https://api.stripe.com',
    },
    STRIPE_TIMEOUT_MS: { doc: 'Longest wait for one payment provider API call', parse: integer(500, 120_000), fallback: 10_000 },
    PLAN_PRICES: { doc: 'Payment price id of each paid plan, as plan=price pairs (pro=price_123,team=price_456)', parse: list, fallback: [] as string[] },
    PLAN_PRICES_YEARLY: {
      doc: 'Price id of each paid plan billed yearly, as plan=price pairs; empty offers monthly billing only',
      parse: list,
      fallback: [] as string[],
    },
    CHECKOUT_SUCCESS_URL: {
      doc: 'Where Checkout sends the customer after paying; {CHECKOUT_SESSION_ID} becomes the session id',
      parse: url('http:', 'https:'),
      fallback: derived(
        '$PUBLIC_BASE_URL/billing/success?session_id={CHECKOUT_SESSION_ID}',
        (env) => `${publicBase(env)}/billing/success?session_id={CHECKOUT_SESSION_ID}`,
      ),
    },
    CHECKOUT_CANCEL_URL: {
      doc: 'Where Checkout sends the customer who backs out',
      parse: url('http:', 'https:'),
      fallback: derived('$PUBLIC_BASE_URL/billing/cancel', (env) => `${publicBase(env)}/billing/cancel`),
    },
    BILLING_PORTAL_RETURN_URL: {
      doc: 'Where the billing portal sends the customer back to',
      parse: url('http:', 'https:'),
      fallback: derived('$PUBLIC_BASE_URL/billing', (env) => `${publicBase(env)}/billing`),
    },
  },
  build: (v, report) => {
    const month = priceList('PLAN_PRICES', v.PLAN_PRICES, v.PLANS, report)
    const year = priceList('PLAN_PRICES_YEARLY', v.PLAN_PRICES_YEARLY, v.PLANS, report)
    const api = new URL(v.STRIPE_API_URL)
    const protocol: 'http' | 'https' = api.protocol === 'http:' ? 'http' : 'https'
    const missing = (['STRIPE_SECRET_KEY', 'PAYMENT_WEBHOOK_SECRET'] as const).filter((name) => !v[name])
    if (missing.length > 0) report.unconfigured('payment provider (STRIPE_SECRET_KEY, PAYMENT_WEBHOOK_SECRET)')
    return {
      payments: {
        /** Undefined unless STRIPE_SECRET_KEY and PAYMENT_WEBHOOK_SECRET are both set: payment routes answer 503 not_configured. */
        provider:
          v.STRIPE_SECRET_KEY && v.PAYMENT_WEBHOOK_SECRET
            ? {
                secretKey: v.STRIPE_SECRET_KEY,
                webhookSecret: v.PAYMENT_WEBHOOK_SECRET,
                /** Where the SDK sends its requests (STRIPE_API_URL). */
                api: { host: api.hostname, port: Number(api.port || (protocol === 'http' ? 80 : 443)), protocol },
                timeoutMs: v.STRIPE_TIMEOUT_MS,
              }
            : undefined,
        /** Payment variables still unset, named in the 503 answer. */
        missing,
        /** Price id of each paid plan, per billing interval. */
        prices: { month, year },
        checkoutSuccessUrl: v.CHECKOUT_SUCCESS_URL,
        checkoutCancelUrl: v.CHECKOUT_CANCEL_URL,
        portalReturnUrl: v.BILLING_PORTAL_RETURN_URL,
        webhookToleranceSeconds: v.PAYMENT_WEBHOOK_TOLERANCE_SECONDS,
      },
    }
  },
})

/** The payment provider and its billing options. */
export type PaymentSettings = SettingsOf<typeof paymentsSettings>['payments']
