import { afterAll, describe, expect, test } from 'bun:test'
import { ConfigError, loadConfig } from '../../src/main/config.ts'
import { ADMIN, bearer, login, makeApp, tempDir } from '../helpers.ts'

describe('payment configuration', () => {
  const dir = tempDir()
  afterAll(() => dir.remove())
  const load = (env: Record<string, string>) => loadConfig({ DATA_DIR: dir.path, ...env })

  test('STRIPE_API_URL becomes the host, port and protocol the SDK is given', () => {
    const local = load({ STRIPE_SECRET_KEY: 'sk_test_x', PAYMENT_WEBHOOK_SECRET: 'whsec_x', STRIPE_API_URL: 'http://127.0.0.1:12111' })
    expect(local.payments.provider?.api).toEqual({ host: '127.0.0.1', port: 12111, protocol: 'http' })
    const real = load({ STRIPE_SECRET_KEY: 'sk_test_x', PAYMENT_WEBHOOK_SECRET: 'whsec_x' })
    expect(real.payments.provider).toMatchObject({ api: { host: 'api.stripe.com', port: 443, protocol: 'https' }, timeoutMs: 10_000 })
    expect(real.payments.webhookToleranceSeconds).toBe(300)
  })

  test('redirect URLs derive from PUBLIC_BASE_URL unless given', () => {
    const config = load({ PUBLIC_BASE_URL: 'https://app.example.test/', BILLING_PORTAL_RETURN_URL: 'https://app.example.test/settings/billing' })
    expect(config.payments).toMatchObject({
      checkoutSuccessUrl: 'https://app.example.test/billing/success?session_id={CHECKOUT_SESSION_ID}',
      checkoutCancelUrl: 'https://app.example.test/billing/cancel',
      portalReturnUrl: 'https://app.example.test/settings/billing',
    })
  })

  test('prices per interval, and the unset variables are named', () => {
    const config = load({ PLAN_PRICES: 'pro=price_a', PLAN_PRICES_YEARLY: 'pro=price_b, team=price_c', STRIPE_SECRET_KEY: 'sk_test_x' })
    expect(config.payments.prices).toEqual({ month: { pro: 'price_a' }, year: { pro: 'price_b', team: 'price_c' } })
    expect(config.payments.provider).toBeUndefined()
    expect(config.payments.missing).toEqual(['PAYMENT_WEBHOOK_SECRET'])
  })

  test('bad yearly prices and tolerances stop start-up with every problem named', () => {
    let error: unknown
    try {
      load({ PLAN_PRICES_YEARLY: 'gold=price_x,pro', PAYMENT_WEBHOOK_TOLERANCE_SECONDS: '0' })
    } catch (err) {
      error = err
    }
    expect(error).toBeInstanceOf(ConfigError)
    const problems = (error as ConfigError).problems.join('\n')
    expect(problems).toContain('PAYMENT_WEBHOOK_TOLERANCE_SECONDS must be between 10 and 3600')
    expect(problems).toContain('PLAN_PRICES_YEARLY names plan "gold"')
    expect(problems).toContain('PLAN_PRICES_YEARLY entry "pro" must look like plan=price_id')
  })
})

describe('payments without a provider', async () => {
  const t = await makeApp({ ADMIN_EMAIL: ADMIN.email, ADMIN_PASSWORD: ADMIN.password })
  afterAll(() => t.close())
  const { accessToken } = await login(t, ADMIN.email, ADMIN.password)

  test('payment routes answer 503 not_configured naming the variables; billing and audit still answer', async () => {
    const answers = [
      await t.send('POST', '/api/payment/create-checkout', { plan: 'pro' }, bearer(accessToken)),
      await t.request('/api/payment/billing-portal', { headers: bearer(accessToken) }),
      await t.request('/api/payment/webhook', { method: 'POST', headers: { 'content-type': 'application/json', 'stripe-signature': 't=1,v1=00' }, body: '{}' }),
    ]
    for (const res of answers) {
      expect(res.status).toBe(503)
      expect(await res.json()).toMatchObject({ code: 'not_configured', variables: ['STRIPE_SECRET_KEY', 'PAYMENT_WEBHOOK_SECRET'] })
    }
    const billing = await t.request('/api/billing', { headers: bearer(accessToken) })
    expect(billing.status).toBe(200)
    expect(await billing.json()).toMatchObject({ plan: 'free', customer: false, subscription: null })
    expect((await t.request('/api/audit-logs', { headers: bearer(accessToken) })).status).toBe(200)
  })
})
