import Stripe from 'stripe'
import { startFakeStripe, type FakeStripe } from '../fakes/stripe-api.ts'
import { ADMIN, announceSkip, freshPostgres, makeApp, postgresUrl, type TestApp } from '../helpers.ts'

export const SECRET_KEY = 'sk_test_fake_51QzExampleKey0000'
export const WEBHOOK_SECRET = 'whsec_test_fake_signing_secret_0000'
export const PRICES = { pro: 'price_pro_monthly', team: 'price_team_monthly', enterprise: 'price_enterprise_monthly' } as const
export const YEARLY_PRICES = { pro: 'price_pro_yearly' } as const

const pairs = (prices: Record<string, string>) =>
  Object.entries(prices)
    .map(([plan, price]) => `${plan}=${price}`)
    .join(',')

/** The variables that turn payments on, pointed at `fake`. */
export function paymentEnv(fake: { url: string }): Record<string, string> {
  return {
    STRIPE_SECRET_KEY: SECRET_KEY,
    PAYMENT_WEBHOOK_SECRET: WEBHOOK_SECRET,
    STRIPE_API_URL: fake.url,
    PLAN_PRICES: pairs(PRICES),
    PLAN_PRICES_YEARLY: pairs(YEARLY_PRICES),
    PUBLIC_BASE_URL: 'https://app.example.test',
  }
}

export interface BillingTestApp extends TestApp {
  stripe: FakeStripe
}

/** The whole service with payments configured against a fake Stripe; `env` adds or overrides. */
export async function billingApp(env: Record<string, string> = {}): Promise<BillingTestApp> {
  const stripe = startFakeStripe({ secretKey: SECRET_KEY, prices: [...Object.values(PRICES), ...Object.values(YEARLY_PRICES)] })
  const t = await makeApp({ ADMIN_EMAIL: ADMIN.email, ADMIN_PASSWORD: ADMIN.password, ...paymentEnv(stripe), ...env })
  return {
    ...t,
    stripe,
    async close() {
      await t.close()
      await stripe.close()
    },
  }
}

// The SDK's own signer; under Bun only the async variant works (Web Crypto).
const signer = new Stripe('sk_test_signer_only')

/** A Stripe-Signature header for `payload`, as Stripe computes it. */
export function signature(payload: string, options: { secret?: string; timestamp?: number } = {}): Promise<string> {
  return signer.webhooks.generateTestHeaderStringAsync({ payload, secret: options.secret ?? WEBHOOK_SECRET, timestamp: options.timestamp })
}

/** Stripe sends events pretty-printed: re-serialising the body would change the signed bytes. */
export const payloadOf = (event: unknown) => JSON.stringify(event, null, 2)

/** POSTs a signed event the way Stripe delivers it. */
export async function deliver(t: TestApp, event: unknown, options: { secret?: string; timestamp?: number; header?: string } = {}): Promise<Response> {
  const payload = payloadOf(event)
  const header = options.header ?? (await signature(payload, options))
  return t.request('/api/payment/webhook', {
    method: 'POST',
    headers: { 'content-type': 'application/json; charset=utf-8', 'stripe-signature': header, 'user-agent': 'Stripe/1.0 (+https://stripe.com/docs/webhooks)' },
    body: payload,
  })
}

/** Delivers and insists on a 200. */
export async function deliverOk(t: TestApp, event: unknown): Promise<{ received: true; eventId: string; type: string; duplicate: boolean }> {
  const res = await deliver(t, event)
  if (res.status !== 200) throw new Error(`webhook answered ${res.status}: ${await res.text()}`)
  return res.json()
}

/** Rows of a table, for checking what a refused delivery left behind. */
export async function count(t: TestApp, table: 'payment_events' | 'audit_log' | 'billing_subscriptions'): Promise<number> {
  const [row] = await t.deps.db.sql.unsafe(`SELECT COUNT(*) AS n FROM ${table}`)
  return Number(row.n)
}

/**
 * Runs `body` with a billing app per storage backend: SQLite always, PostgreSQL (a fresh database)
 * when DATABASE_URL is set.
 */
export function forEachBillingBackend(body: (backend: { name: 'sqlite' | 'postgres'; open(): Promise<BillingTestApp> }) => void) {
  body({ name: 'sqlite', open: () => billingApp() })
  if (!postgresUrl) return announceSkip('PostgreSQL variants of the billing suites', 'DATABASE_URL')
  body({
    name: 'postgres',
    async open() {
      const pg = (await freshPostgres())!
      const app = await billingApp({ DATABASE_URL: pg.url })
      return {
        ...app,
        async close() {
          await app.close()
          await pg.drop()
        },
      }
    },
  })
}
