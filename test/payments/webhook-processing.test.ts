import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { checkoutSession, event, ids, invoice, seconds, subscription, type StripeEvent, type SubscriptionFacts } from './events.ts'
import { deliverOk, forEachBillingBackend, PRICES, type BillingTestApp } from './harness.ts'

function permutations<T>(items: T[]): T[][] {
  if (items.length <= 1) return [items]
  return items.flatMap((item, i) => permutations([...items.slice(0, i), ...items.slice(i + 1)]).map((rest) => [item, ...rest]))
}

forEachBillingBackend((backend) => {
  describe(`payment events on ${backend.name}`, () => {
    let t: BillingTestApp
    beforeAll(async () => {
      t = await backend.open()
    })
    afterAll(() => t.close())

    const planOf = async (orgId: string) => (await t.deps.accounts.organization(orgId))!.plan
    const appliedCount = async (eventId: string) =>
      Number(
        (await t.deps.db.sql`SELECT COUNT(*) AS n FROM audit_log WHERE action = 'payment_event.applied' AND details LIKE ${`%"eventId":"${eventId}"%`}`)[0].n,
      )
    async function newSubscription(name: string, plan: keyof typeof PRICES = 'team', periodEnd = seconds() + 30 * 86_400): Promise<SubscriptionFacts> {
      const org = await t.deps.accounts.createOrganization(name, 'free')
      return { id: ids.subscription(), customer: ids.customer(), orgId: org.id, plan, priceId: PRICES[plan], status: 'incomplete', periodEnd }
    }
    /** A checkout that is paid at once: created incomplete, invoice paid, made active (3 seats), checkout completed. */
    function paidCheckout(f: SubscriptionFacts, at = seconds() - 60) {
      return {
        created: event('customer.subscription.created', subscription({ ...f, status: 'incomplete' }), at),
        paid: event('invoice.paid', invoice({ customer: f.customer, subscription: f.id, orgId: f.orgId, plan: f.plan, status: 'paid' }), at + 1),
        activated: event('customer.subscription.updated', subscription({ ...f, status: 'active', seats: 3 }), at + 1),
        completed: event(
          'checkout.session.completed',
          checkoutSession({ customer: f.customer, subscription: f.id, orgId: f.orgId, plan: f.plan, paymentStatus: 'paid' }),
          at + 2,
        ),
      }
    }

    test('a replayed event is acknowledged again and applied once', async () => {
      const f = await newSubscription('Replay Co')
      const { completed } = paidCheckout(f)
      expect(await deliverOk(t, completed)).toMatchObject({ eventId: completed.id, duplicate: false })
      expect(await deliverOk(t, completed)).toMatchObject({ eventId: completed.id, duplicate: true })
      expect(await appliedCount(completed.id)).toBe(1)
      const [row] = await t.deps.db.sql`SELECT attempts, result FROM payment_events WHERE id = ${completed.id}`
      expect({ attempts: Number(row.attempts), result: row.result }).toEqual({ attempts: 1, result: 'applied' })
      expect(await planOf(f.orgId)).toBe('team')
    })

    test('subscription.updated arriving before checkout.session.completed: no access until the payment, then both facts held', async () => {
      const f = await newSubscription('Early Update Co')
      const { activated, completed } = paidCheckout(f)
      await deliverOk(t, activated)
      // Active says nothing about money having moved: no plan yet.
      expect(await planOf(f.orgId)).toBe('free')
      await deliverOk(t, completed)
      expect(await planOf(f.orgId)).toBe('team')
      const billing = await t.deps.payments.billingOf(f.orgId)
      expect(billing.subscription).toMatchObject({ id: f.id, status: 'active', seats: 3, plan: 'team', paid: true })
      expect(billing.customer).toBe(true)
    })

    test('every ordering of four related events ends in the same state, and access never comes before payment', async () => {
      const orders = permutations(['created', 'paid', 'activated', 'completed'] as const)
      expect(orders).toHaveLength(24)
      const finals = new Set<string>()
      const at = seconds() - 60
      for (const [n, order] of orders.entries()) {
        const f = await newSubscription(`Order ${n}`, 'team', at + 30 * 86_400)
        const events = paidCheckout(f, at)
        let paymentSeen = false
        for (const name of order) {
          await deliverOk(t, events[name])
          paymentSeen ||= name === 'paid' || name === 'completed'
          expect(await planOf(f.orgId)).toBe(paymentSeen ? 'team' : 'free')
        }
        const billing = await t.deps.payments.billingOf(f.orgId)
        finals.add(JSON.stringify({ ...billing, organizationId: '-', subscription: { ...billing.subscription, id: '-' } }))
      }
      expect(finals.size).toBe(1)
      expect(JSON.parse([...finals][0]!)).toMatchObject({
        plan: 'team',
        planExpiresAt: null,
        customer: true,
        subscription: { status: 'active', plan: 'team', seats: 3, paid: true, cancelAtPeriodEnd: false, latestInvoice: { status: 'paid' } },
      })
    })

    test('the same event delivered ten times at once is applied once', async () => {
      const f = await newSubscription('Stampede Co')
      const { completed } = paidCheckout(f)
      const receipts = await Promise.all(Array.from({ length: 10 }, () => deliverOk(t, completed)))
      expect(receipts.filter((r) => !r.duplicate)).toHaveLength(1)
      expect(await appliedCount(completed.id)).toBe(1)
      const received = await t.deps.db
        .sql`SELECT COUNT(*) AS n FROM audit_log WHERE action = 'payment_webhook.received' AND details LIKE ${`%${completed.id}%`}`
      expect(Number(received[0].n)).toBe(1)
      const [row] = await t.deps.db.sql`SELECT attempts, result FROM payment_events WHERE id = ${completed.id}`
      expect({ attempts: Number(row.attempts), result: row.result }).toEqual({ attempts: 1, result: 'applied' })
    })

    test('an older subscription event never overwrites newer state', async () => {
      const f = await newSubscription('Late Letter Co')
      const at = seconds() - 600
      await deliverOk(
        t,
        event(
          'checkout.session.completed',
          checkoutSession({ customer: f.customer, subscription: f.id, orgId: f.orgId, plan: 'team', paymentStatus: 'paid' }),
          at,
        ),
      )
      const newer = event('customer.subscription.updated', subscription({ ...f, status: 'active', seats: 5 }), at + 20)
      const older = event('customer.subscription.updated', subscription({ ...f, status: 'active', seats: 2 }), at + 10)
      await deliverOk(t, newer)
      await deliverOk(t, older)
      expect((await t.deps.payments.billingOf(f.orgId)).subscription?.seats).toBe(5)
      const [row] = await t.deps.db.sql`SELECT result FROM payment_events WHERE id = ${older.id}`
      expect(row.result).toBe('stale: nothing newer than the stored state')
      // Cancelled a moment later, then a delayed "active" from before the cancellation: still cancelled.
      await deliverOk(t, event('customer.subscription.deleted', subscription({ ...f, status: 'canceled', seats: 5 }), at + 30))
      await deliverOk(t, event('customer.subscription.updated', subscription({ ...f, status: 'active', seats: 5 }), at + 25))
      expect((await t.deps.payments.billingOf(f.orgId)).subscription?.status).toBe('canceled')
    })

    test('a 3-D Secure subscription that never gets paid grants nothing', async () => {
      const f = await newSubscription('Unfinished Challenge Co', 'enterprise')
      const at = seconds() - 3600
      const hostedUrl = 'https://invoice.stripe.test/i/acct_1/test_3ds'
      const sequence: StripeEvent[] = [
        event('customer.subscription.created', subscription({ ...f, status: 'incomplete' }), at),
        event(
          'invoice.payment_action_required',
          invoice({ customer: f.customer, subscription: f.id, orgId: f.orgId, plan: f.plan, status: 'open', hostedUrl }),
          at,
        ),
        event(
          'checkout.session.completed',
          checkoutSession({ customer: f.customer, subscription: f.id, orgId: f.orgId, plan: f.plan, paymentStatus: 'unpaid' }),
          at + 1,
        ),
      ]
      for (const e of sequence) await deliverOk(t, e)
      expect(await planOf(f.orgId)).toBe('free')
      const pending = await t.deps.payments.billingOf(f.orgId)
      expect(pending.subscription).toMatchObject({ status: 'incomplete', paid: false, latestInvoice: { status: 'action_required', url: hostedUrl } })
      // The challenge is never completed: the subscription expires.
      await deliverOk(t, event('customer.subscription.updated', subscription({ ...f, status: 'incomplete_expired' }), at + 82_800))
      expect(await planOf(f.orgId)).toBe('free')
      expect(await t.deps.plans.isEnterprise(f.orgId)).toBe(false)
      const plansChanged = await t.deps.db.sql`SELECT COUNT(*) AS n FROM audit_log WHERE org_id = ${f.orgId} AND action = 'plan.changed'`
      expect(Number(plansChanged[0].n)).toBe(0)
    })

    test('each applied event is audited with the state before and after, on behalf of the provider', async () => {
      const f = await newSubscription('Trail Co')
      const { created, completed } = paidCheckout(f)
      await deliverOk(t, created)
      await deliverOk(t, completed)
      const rows = await t.deps.db.sql`SELECT action, actor, details FROM audit_log WHERE org_id = ${f.orgId} ORDER BY seq`
      expect(rows.map((r: { action: string }) => r.action)).toEqual([
        'payment_webhook.received',
        'payment_event.applied',
        'payment_webhook.received',
        'plan.changed',
        'payment_event.applied',
      ])
      expect(new Set(rows.map((r: { actor: string }) => r.actor))).toEqual(new Set(['provider:stripe']))
      const applied = JSON.parse(rows[4].details)
      expect(applied).toMatchObject({
        eventId: completed.id,
        type: 'checkout.session.completed',
        before: { plan: 'free', subscription: { status: 'incomplete', paid: false } },
        after: { plan: 'team', subscription: { status: 'incomplete', paid: true } },
      })
      expect(JSON.parse(rows[3].details)).toMatchObject({ from: 'free', to: 'team', eventId: completed.id })
    })

    test('events about organisations this service does not know are stored and acknowledged, changing nothing', async () => {
      const stranger = event(
        'customer.subscription.updated',
        subscription({
          id: ids.subscription(),
          customer: ids.customer(),
          orgId: 'no-such-org',
          plan: 'team',
          priceId: PRICES.team,
          status: 'active',
          periodEnd: seconds() + 1000,
        }),
        seconds(),
      )
      expect(await deliverOk(t, stranger)).toMatchObject({ duplicate: false })
      const [row] = await t.deps.db.sql`SELECT result FROM payment_events WHERE id = ${stranger.id}`
      expect(row.result).toStartWith('ignored: no organisation')
    })
  })
})
