import { afterAll, describe, expect, test } from 'bun:test'
import { bearer, userWithRole } from '../helpers.ts'
import { billingApp, PRICES, YEARLY_PRICES } from './harness.ts'

describe('POST /api/payment/create-checkout', async () => {
  const t = await billingApp()
  afterAll(() => t.close())
  const checkout = (token: string, body: unknown, headers: Record<string, string> = {}) =>
    t.send('POST', '/api/payment/create-checkout', body, { ...bearer(token), ...headers })
  const newOrg = async (name: string) => t.deps.accounts.createOrganization(name, 'free')

  test('creates a subscription-mode session for every paid plan, with the configured price, URLs, metadata and 3-D Secure', async () => {
    const org = await newOrg('Every Plan Co')
    const { token, user } = await userWithRole(t, 'owner', { orgId: org.id })
    for (const [plan, price] of Object.entries(PRICES)) {
      const res = await checkout(token, { plan, seats: 3 })
      expect(res.status).toBe(200)
      const body = await res.json()
      expect(body).toMatchObject({ plan, seats: 3, interval: 'month' })
      expect(body.url).toBe(`https://checkout.stripe.test/c/pay/${body.sessionId}`)
      expect(Date.parse(body.expiresAt)).toBeGreaterThan(Date.now())
      const session = t.stripe.checkoutSessions.get(body.sessionId)!
      expect(session.mode).toBe('subscription')
      expect(session.line_items).toEqual([{ price, quantity: '3' }])
      expect(session.metadata).toEqual({ orgId: org.id, userId: user.id, plan, seats: '3', interval: 'month' })
      expect(session.subscription_data).toEqual({ metadata: { orgId: org.id, plan } })
      expect(session.client_reference_id).toBe(org.id)
      expect(session.payment_method_options).toEqual({ card: { request_three_d_secure: 'automatic' } })
      expect(session.success_url).toBe('https://app.example.test/billing/success?session_id={CHECKOUT_SESSION_ID}')
      expect(session.cancel_url).toBe('https://app.example.test/billing/cancel')
    }
    // One customer for the organisation, reused by every checkout.
    const customers = [...t.stripe.customers.values()].filter((c) => c.metadata.orgId === org.id)
    expect(customers).toHaveLength(1)
    const sessions = [...t.stripe.checkoutSessions.values()].filter((s) => s.client_reference_id === org.id)
    expect(new Set(sessions.map((s) => s.customer))).toEqual(new Set([customers[0]!.id]))
  })

  test('yearly billing uses the yearly price; a plan without one is 422 listing those that have', async () => {
    const { token } = await userWithRole(t, 'owner', { orgId: (await newOrg('Yearly Co')).id })
    const res = await checkout(token, { plan: 'pro', interval: 'year' })
    expect(res.status).toBe(200)
    const body = await res.json()
    expect(t.stripe.checkoutSessions.get(body.sessionId)!.line_items[0].price).toBe(YEARLY_PRICES.pro)
    const refused = await checkout(token, { plan: 'team', interval: 'year' })
    expect(refused.status).toBe(422)
    expect(await refused.json()).toMatchObject({ code: 'validation_failed', allowed: ['pro'], errors: [{ field: 'plan' }] })
  })

  test('an unknown plan, the free plan and bad fields are 422 naming the field and the valid plans', async () => {
    const { token } = await userWithRole(t, 'owner', { orgId: (await newOrg('Typo Co')).id })
    const sessionsBefore = t.stripe.checkoutSessions.size
    for (const plan of ['platinum', 'free']) {
      const res = await checkout(token, { plan })
      expect(res.status).toBe(422)
      const body = await res.json()
      expect(body.allowed).toEqual(['pro', 'team', 'enterprise'])
      expect(body.errors).toEqual([{ field: 'plan', message: expect.stringContaining('choose one of pro, team, enterprise') }])
    }
    for (const [body, field] of [
      [{ plan: 'pro', seats: 0 }, 'seats'],
      [{ plan: 'pro', interval: 'weekly' }, 'interval'],
      [{ plan: 'pro', coupon: 'FREE' }, 'coupon'],
      [{}, 'plan'],
    ] as const) {
      const res = await checkout(token, body)
      expect(res.status).toBe(422)
      expect(JSON.stringify((await res.json()).errors)).toContain(field)
    }
    expect(t.stripe.checkoutSessions.size).toBe(sessionsBefore)
  })

  test('a double submit makes one session: both answers carry it and the provider created one', async () => {
    const org = await newOrg('Double Click Co')
    const { token } = await userWithRole(t, 'owner', { orgId: org.id })
    const sessionsBefore = t.stripe.checkoutSessions.size
    const [a, b] = await Promise.all([checkout(token, { plan: 'team', seats: 2 }), checkout(token, { plan: 'team', seats: 2 })])
    expect([a.status, b.status]).toEqual([200, 200])
    const [first, second] = [await a.json(), await b.json()]
    expect(second.sessionId).toBe(first.sessionId)
    const again = await (await checkout(token, { plan: 'team', seats: 2 })).json()
    expect(again.sessionId).toBe(first.sessionId)
    expect(t.stripe.checkoutSessions.size).toBe(sessionsBefore + 1)
    // Both requests reached the provider with one idempotency key.
    const keys = t.stripe.requests
      .filter((r) => r.path === '/v1/checkout/sessions' && r.body.includes(encodeURIComponent(org.id)))
      .map((r) => r.headers['idempotency-key'])
    expect(keys).toHaveLength(3)
    expect(new Set(keys).size).toBe(1)
    // A different choice is a different checkout.
    const other = await (await checkout(token, { plan: 'team', seats: 5 })).json()
    expect(other.sessionId).not.toBe(first.sessionId)
  })

  test('needs billing:manage: the billing role may, a member may not', async () => {
    const org = await newOrg('Roles Co')
    const billing = await userWithRole(t, 'billing', { orgId: org.id })
    expect((await checkout(billing.token, { plan: 'pro' })).status).toBe(200)
    const member = await userWithRole(t, 'member', { orgId: org.id })
    const refused = await checkout(member.token, { plan: 'pro' })
    expect(refused.status).toBe(403)
    expect((await refused.json()).code).toBe('insufficient_scope')
    expect((await t.send('POST', '/api/payment/create-checkout', { plan: 'pro' })).status).toBe(401)
  })

  test('records who started which checkout, with the request id and client address', async () => {
    const org = await newOrg('Audited Co')
    const { token, user } = await userWithRole(t, 'owner', { orgId: org.id })
    const body = await (await checkout(token, { plan: 'pro' }, { 'x-request-id': 'checkout-req-1' })).json()
    const [entry] = await t.deps.db.sql`SELECT * FROM audit_log WHERE org_id = ${org.id} AND action = 'checkout.created'`
    expect(entry).toMatchObject({ actor: `user:${user.id}`, request_id: 'checkout-req-1' })
    expect(entry.client_ip).toBeString()
    expect(JSON.parse(entry.details)).toMatchObject({ sessionId: body.sessionId, plan: 'pro', priceId: PRICES.pro, seats: 1, interval: 'month', reused: false })
  })

  test('provider failures are 502 upstream_error naming what to check, never a session', async () => {
    const { token } = await userWithRole(t, 'owner', { orgId: (await newOrg('Outage Co')).id })
    // 401 is not retried by the SDK; the answer says which variable to check.
    t.stripe.failNext(401)
    const refusedKey = await checkout(token, { plan: 'pro' })
    expect(refusedKey.status).toBe(502)
    expect(await refusedKey.json()).toMatchObject({ code: 'upstream_error', provider: 'stripe', detail: expect.stringContaining('STRIPE_SECRET_KEY') })
    t.stripe.prices.delete(PRICES.enterprise)
    try {
      const refused = await checkout(token, { plan: 'enterprise' })
      expect(refused.status).toBe(502)
      expect((await refused.json()).detail).toContain('No such price')
    } finally {
      t.stripe.prices.add(PRICES.enterprise)
    }
  })
})
