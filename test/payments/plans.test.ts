import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { AccountStore } from '../../src/auth/account-store.ts'
import { createPlanDirectory } from '../../src/auth/plans.ts'
import { loadConfig } from '../../src/main/config.ts'
import { memoryLogger } from '../../src/log.ts'
import { createPaymentsService } from '../../plugins/payments/service.ts'
import { bearer, forEachBackend, tempDir, userWithRole, type BackendDatabase } from '../helpers.ts'
import { checkoutSession, event, ids, invoice, seconds, subscription, type SubscriptionFacts } from './events.ts'
import { billingApp, deliverOk, payloadOf, paymentEnv, PRICES, signature } from './harness.ts'

describe('plans follow billing through the access layer', async () => {
  const t = await billingApp()
  afterAll(() => t.close())

  test('paying for enterprise unlocks /api/usage; GET /api/billing shows plan, status, seats and renewal; a second checkout is refused', async () => {
    const org = await t.deps.accounts.createOrganization('Upgrade Co', 'free')
    const owner = await userWithRole(t, 'owner', { orgId: org.id })
    const member = await userWithRole(t, 'member', { orgId: org.id })
    const usage = () => t.request('/api/usage', { headers: bearer(owner.token) })
    const locked = await usage()
    expect(locked.status).toBe(403)
    expect((await locked.json()).code).toBe('plan_required')

    const started = await (await t.send('POST', '/api/payment/create-checkout', { plan: 'enterprise', seats: 4 }, bearer(owner.token))).json()
    const session = t.stripe.checkoutSessions.get(started.sessionId)!
    const f: SubscriptionFacts = {
      id: ids.subscription(),
      customer: session.customer,
      orgId: org.id,
      plan: 'enterprise',
      priceId: PRICES.enterprise,
      status: 'active',
      seats: 4,
      periodEnd: seconds() + 30 * 86_400,
    }
    await deliverOk(t, event('customer.subscription.created', subscription(f), seconds() - 2))
    expect((await usage()).status).toBe(403)
    await deliverOk(
      t,
      event('invoice.paid', invoice({ customer: f.customer, subscription: f.id, orgId: org.id, plan: 'enterprise', status: 'paid' }), seconds() - 1),
    )
    expect((await usage()).status).toBe(200)

    const billing = await t.request('/api/billing', { headers: bearer(member.token) })
    expect(billing.status).toBe(200)
    expect(await billing.json()).toEqual({
      organizationId: org.id,
      plan: 'enterprise',
      planExpiresAt: null,
      customer: true,
      subscription: {
        id: f.id,
        status: 'active',
        plan: 'enterprise',
        seats: 4,
        interval: 'month',
        paid: true,
        cancelAtPeriodEnd: false,
        currentPeriodEnd: new Date(f.periodEnd * 1000).toISOString(),
        renewsAt: new Date(f.periodEnd * 1000).toISOString(),
        endsAt: null,
        latestInvoice: { status: 'paid', url: null },
      },
    })
    const again = await t.send('POST', '/api/payment/create-checkout', { plan: 'pro' }, bearer(owner.token))
    expect(again.status).toBe(409)
    expect(await again.json()).toMatchObject({ code: 'already_subscribed', plan: 'enterprise' })
  })

  test('a plan change made in the portal moves the plan; a cancellation keeps it until the period ends', async () => {
    const org = await t.deps.accounts.createOrganization('Downgrade Co', 'free')
    const { token } = await userWithRole(t, 'owner', { orgId: org.id })
    const f: SubscriptionFacts = {
      id: ids.subscription(),
      customer: ids.customer(),
      orgId: org.id,
      plan: 'team',
      priceId: PRICES.team,
      status: 'active',
      periodEnd: seconds() + 10 * 86_400,
    }
    const at = seconds() - 100
    await deliverOk(
      t,
      event(
        'checkout.session.completed',
        checkoutSession({ customer: f.customer, subscription: f.id, orgId: org.id, plan: 'team', paymentStatus: 'paid' }),
        at,
      ),
    )
    await deliverOk(t, event('customer.subscription.updated', subscription(f), at + 1))
    expect(await t.deps.plans.planOf(org.id)).toBe('team')
    // The customer switches to pro in the portal: the subscription's price changes.
    await deliverOk(t, event('customer.subscription.updated', subscription({ ...f, priceId: PRICES.pro }), at + 2))
    expect((await t.deps.accounts.organization(org.id))!.plan).toBe('pro')
    await deliverOk(t, event('customer.subscription.deleted', subscription({ ...f, priceId: PRICES.pro, status: 'canceled' }), at + 3))
    const stored = (await t.deps.accounts.organization(org.id))!
    expect(stored).toMatchObject({ plan: 'pro', planExpiresAt: f.periodEnd * 1000 })
    const billing = await (await t.request('/api/billing', { headers: bearer(token) })).json()
    expect(billing).toMatchObject({ plan: 'pro', planExpiresAt: new Date(f.periodEnd * 1000).toISOString() })
    expect(billing.subscription).toMatchObject({ status: 'canceled', renewsAt: null, endsAt: new Date(f.periodEnd * 1000).toISOString() })
    const changes = await t.deps.db.sql`SELECT details FROM audit_log WHERE org_id = ${org.id} AND action = 'plan.changed' ORDER BY seq`
    expect(changes.map((r: { details: string }) => JSON.parse(r.details)).map((d: any) => [d.from, d.to, d.expiresAt])).toEqual([
      ['free', 'team', null],
      ['team', 'pro', null],
      ['pro', 'pro', new Date(f.periodEnd * 1000).toISOString()],
    ])
  })

  test('a failed checkout leaves a plan set by an operator alone', async () => {
    const org = await t.deps.accounts.createOrganization('Contract Co', 'enterprise')
    const f: SubscriptionFacts = {
      id: ids.subscription(),
      customer: ids.customer(),
      orgId: org.id,
      plan: 'pro',
      priceId: PRICES.pro,
      status: 'incomplete',
      periodEnd: seconds() + 1000,
    }
    await deliverOk(t, event('customer.subscription.created', subscription(f), seconds()))
    await deliverOk(
      t,
      event('invoice.payment_failed', invoice({ customer: f.customer, subscription: f.id, orgId: org.id, plan: 'pro', status: 'open' }), seconds()),
    )
    expect((await t.deps.accounts.organization(org.id))!.plan).toBe('enterprise')
  })
})

forEachBackend((backend) => {
  describe(`plans that lapse at the end of the period, on ${backend.name}`, () => {
    let store: BackendDatabase
    let accounts: AccountStore
    const dir = tempDir()
    const config = loadConfig({ DATA_DIR: dir.path, ...paymentEnv({ url: 'http://127.0.0.1:9' }) })
    let clock = Date.UTC(2027, 0, 1)
    const now = () => clock
    beforeAll(async () => {
      store = await backend.open()
      accounts = new AccountStore(store.db)
    })
    afterAll(async () => {
      await store.close()
      dir.remove()
    })

    async function setUp(name: string) {
      const plans = createPlanDirectory(accounts, { enterprise: config.plans.enterprise, fallbackPlan: 'free', now })
      const payments = createPaymentsService({
        db: store.db,
        accounts,
        plans,
        logger: memoryLogger('error'),
        settings: config.payments,
        planIds: config.plans.ids,
        now,
        recoveryIntervalMs: 0,
      })
      const org = await accounts.createOrganization(name, 'free')
      const f: SubscriptionFacts = {
        id: ids.subscription(),
        customer: ids.customer(),
        orgId: org.id,
        plan: 'enterprise',
        priceId: PRICES.enterprise,
        status: 'active',
        periodEnd: seconds(clock) + 30 * 86_400,
      }
      // Signed at the service's own clock, as a delivery at that moment would be.
      const deliver = async (e: ReturnType<typeof event>) => {
        const payload = payloadOf(e)
        return payments.receiveWebhook(payload, await signature(payload, { timestamp: seconds(clock) }), { requestId: null, clientIp: null })
      }
      await deliver(
        event(
          'checkout.session.completed',
          checkoutSession({ customer: f.customer, subscription: f.id, orgId: org.id, plan: 'enterprise', paymentStatus: 'paid' }),
          seconds(clock),
        ),
      )
      await deliver(event('customer.subscription.updated', subscription(f), seconds(clock)))
      expect(await plans.planOf(org.id)).toBe('enterprise')
      return { plans, payments, org, f, deliver }
    }

    for (const ending of ['canceled', 'unpaid'] as const) {
      test(`${ending === 'unpaid' ? 'an' : 'a'} ${ending} subscription keeps its plan until the period ends, then falls back to the first plan`, async () => {
        const { plans, payments, org, f, deliver } = await setUp(`Lapsing ${ending} Co`)
        clock += 86_400_000
        await deliver(
          event(
            ending === 'canceled' ? 'customer.subscription.deleted' : 'customer.subscription.updated',
            subscription({ ...f, status: ending }),
            seconds(clock),
          ),
        )
        expect(await plans.isEnterprise(org.id)).toBe(true)
        expect(await payments.recover()).toEqual({ events: 0, lapsedPlans: 0 })

        clock = f.periodEnd * 1000 + 1000
        // The cached plan is not trusted past the period's end, even where it is read without waiting.
        expect(plans.cachedPlanOf(org.id)).toBeUndefined()
        // The access layer applies the lapse at once, before any sweep has run.
        expect(await plans.planOf(org.id)).toBe('free')
        expect(plans.cachedPlanOf(org.id)).toBe('free')
        expect(await plans.isEnterprise(org.id)).toBe(false)
        expect(await payments.recover()).toEqual({ events: 0, lapsedPlans: 1 })
        expect(await accounts.organization(org.id)).toMatchObject({ plan: 'free', planExpiresAt: null })
        const [entry] = await store.db.sql`SELECT actor, details FROM audit_log WHERE org_id = ${org.id} AND action = 'plan.changed' AND actor = 'system'`
        expect(JSON.parse(entry.details)).toMatchObject({ from: 'enterprise', to: 'free', reason: 'period_ended' })
        await payments.close()
      })
    }

    test('cancelling at the period end sets the lapse; resuming clears it', async () => {
      const { plans, payments, org, f, deliver } = await setUp('Undecided Co')
      clock += 1000
      await deliver(event('customer.subscription.updated', subscription({ ...f, cancelAtPeriodEnd: true }), seconds(clock) + 1))
      expect((await accounts.organization(org.id))!.planExpiresAt).toBe(f.periodEnd * 1000)
      await deliver(event('customer.subscription.updated', subscription({ ...f, cancelAtPeriodEnd: false }), seconds(clock) + 2))
      expect((await accounts.organization(org.id))!.planExpiresAt).toBeNull()
      clock = f.periodEnd * 1000 + 1000
      plans.forget(org.id)
      expect(await plans.planOf(org.id)).toBe('enterprise')
      await payments.close()
    })
  })
})
