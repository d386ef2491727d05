import { afterAll, describe, expect, test } from 'bun:test'
import { bearer, userWithRole } from '../helpers.ts'
import { billingApp } from './harness.ts'

describe('GET /api/payment/billing-portal', async () => {
  const t = await billingApp()
  afterAll(() => t.close())
  const org = await t.deps.accounts.createOrganization('Portal Co', 'free')
  const owner = await userWithRole(t, 'owner', { orgId: org.id })
  const portal = (token: string, headers: Record<string, string> = {}) =>
    t.request('/api/payment/billing-portal', { headers: { ...bearer(token), ...headers } })

  test('an organisation that never started a checkout gets 409 no_customer', async () => {
    const res = await portal(owner.token)
    expect(res.status).toBe(409)
    expect(await res.json()).toMatchObject({ code: 'no_customer', detail: expect.stringContaining('create-checkout') })
    expect(t.stripe.portalSessions.size).toBe(0)
  })

  test("redirects (303) to a portal session for the organisation's customer, returning to the configured page", async () => {
    expect((await t.send('POST', '/api/payment/create-checkout', { plan: 'pro' }, bearer(owner.token))).status).toBe(200)
    const res = await portal(owner.token, { 'x-request-id': 'portal-req-1' })
    expect(res.status).toBe(303)
    const location = res.headers.get('location')!
    const session = [...t.stripe.portalSessions.values()].find((s) => s.url === location)!
    expect(session.return_url).toBe('https://app.example.test/billing')
    const customer = [...t.stripe.customers.values()].find((c) => c.metadata.orgId === org.id)!
    expect(session.customer).toBe(customer.id)
    const [entry] = await t.deps.db.sql`SELECT actor, request_id, details FROM audit_log WHERE action = 'billing_portal.opened' AND org_id = ${org.id}`
    expect(entry).toMatchObject({ actor: `user:${owner.user.id}`, request_id: 'portal-req-1' })
    expect(JSON.parse(entry.details)).toEqual({ customerId: customer.id, portalSessionId: session.id })
  })

  test('answers {url} instead when the client asks for JSON', async () => {
    const res = await portal(owner.token, { accept: 'application/json' })
    expect(res.status).toBe(200)
    const { url } = await res.json()
    expect(url).toStartWith('https://billing.stripe.test/p/session/bps_')
  })

  test('needs billing:manage', async () => {
    const admin = await userWithRole(t, 'admin', { orgId: org.id })
    const res = await portal(admin.token)
    expect(res.status).toBe(403)
    expect(await res.json()).toMatchObject({ code: 'insufficient_scope', requiredScope: 'billing:manage' })
  })
})
