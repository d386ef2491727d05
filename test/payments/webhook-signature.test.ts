import { afterAll, beforeEach, describe, expect, test } from 'bun:test'
import { billingApp, count, deliver, payloadOf, signature, WEBHOOK_SECRET } from './harness.ts'
import { event, seconds } from './events.ts'

describe('payment webhook signature', async () => {
  const t = await billingApp()
  afterAll(() => t.close())
  // An event type the service stores and acknowledges without acting on it.
  const sample = () => event('customer.created', { id: 'cus_sample', object: 'customer' }, seconds())
  let before: { events: number; audit: number }
  beforeEach(async () => {
    before = { events: await count(t, 'payment_events'), audit: await count(t, 'audit_log') }
  })
  const refused = async (res: Response, reason: string) => {
    expect(res.status).toBe(400)
    expect(res.headers.get('content-type')).toContain('application/problem+json')
    const body = await res.json()
    expect(body).toMatchObject({ code: 'invalid_signature', reason })
    // Nothing stored, nothing audited.
    expect(await count(t, 'payment_events')).toBe(before.events)
    expect(await count(t, 'audit_log')).toBe(before.audit)
    return body
  }

  test('a correctly signed event is stored, audited and acknowledged, with no bearer token', async () => {
    const e = sample()
    const res = await deliver(t, e)
    expect(res.status).toBe(200)
    expect(await res.json()).toEqual({ received: true, eventId: e.id, type: 'customer.created', duplicate: false })
    expect(await count(t, 'payment_events')).toBe(before.events + 1)
    const [stored] = await t.deps.db.sql`SELECT payload, result FROM payment_events WHERE id = ${e.id}`
    // Kept byte for byte as signed, and acknowledged though no handler acts on its type.
    expect(stored.payload).toBe(payloadOf(e))
    expect(stored.result).toBe('ignored: event type not handled')
  })

  test('a missing Stripe-Signature header is refused', async () => {
    const res = await t.request('/api/payment/webhook', { method: 'POST', headers: { 'content-type': 'application/json' }, body: payloadOf(sample()) })
    await refused(res, 'missing')
  })

  test('malformed headers are refused', async () => {
    const payload = payloadOf(sample())
    const good = await signature(payload)
    const v1 = good.split(',')[1]!
    for (const header of ['garbage', `t=soon,${v1}`, `t=${seconds()}`, v1, `t=${seconds()},t=${seconds()},${v1}`])
      await refused(await deliver(t, sample(), { header }), 'malformed')
  })

  test('a signature made with another secret is refused', async () => {
    await refused(await deliver(t, sample(), { secret: 'whsec_someone_else_entirely_0000' }), 'mismatch')
  })

  test('the exact bytes are verified: the same event re-serialised does not match', async () => {
    const e = sample()
    const header = await signature(payloadOf(e))
    const res = await t.request('/api/payment/webhook', {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'stripe-signature': header },
      body: JSON.stringify(e),
    })
    await refused(res, 'mismatch')
  })

  test('a timestamp more than 300 s old is refused, and so is one more than 300 s ahead', async () => {
    await refused(await deliver(t, sample(), { timestamp: seconds() - 301 }), 'stale')
    await refused(await deliver(t, sample(), { timestamp: seconds() + 301 }), 'future')
  })

  test('timestamps within 300 s either way are accepted', async () => {
    expect((await deliver(t, sample(), { timestamp: seconds() - 240 })).status).toBe(200)
    expect((await deliver(t, sample(), { timestamp: seconds() + 240 })).status).toBe(200)
  })

  test('a header with several v1 signatures is accepted when one matches (secret rotation)', async () => {
    const e = sample()
    const payload = payloadOf(e)
    const timestamp = seconds()
    const old = (await signature(payload, { secret: 'whsec_the_previous_secret_00000', timestamp })).split(',')[1]!
    const current = (await signature(payload, { secret: WEBHOOK_SECRET, timestamp })).split(',')[1]!
    expect((await deliver(t, e, { header: `t=${timestamp},${old},${current},v0=ignored` })).status).toBe(200)
    before = { events: await count(t, 'payment_events'), audit: await count(t, 'audit_log') }
    await refused(await deliver(t, sample(), { header: `t=${timestamp},${old},${old}` }), 'mismatch')
  })

  test('a signed body that is not an event is refused as a bad request and not stored', async () => {
    const res = await deliver(t, { hello: 'world' })
    expect(res.status).toBe(400)
    expect((await res.json()).code).toBe('bad_request')
    expect(await count(t, 'payment_events')).toBe(before.events)
  })
})
