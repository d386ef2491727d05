import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { AccountStore } from '../../src/auth/account-store.ts'
import { createPlanDirectory } from '../../src/auth/plans.ts'
import { loadConfig } from '../../src/main/config.ts'
import { memoryLogger } from '../../src/log.ts'
import { createPaymentsService, type PaymentsServiceOptions } from '../../plugins/payments/service.ts'
import { forEachBackend, tempDir, type BackendDatabase } from '../helpers.ts'
import { checkoutSession, event, ids, seconds } from './events.ts'
import { payloadOf, paymentEnv, signature } from './harness.ts'

forEachBackend((backend) => {
  describe(`payment event recovery on ${backend.name}`, () => {
    let store: BackendDatabase
    let accounts: AccountStore
    const dir = tempDir()
    // Verifying signatures never calls the API, so nothing needs to listen at STRIPE_API_URL.
    const config = loadConfig({ DATA_DIR: dir.path, ...paymentEnv({ url: 'http://127.0.0.1:9' }) })
    beforeAll(async () => {
      store = await backend.open()
      accounts = new AccountStore(store.db)
    })
    afterAll(async () => {
      await store.close()
      dir.remove()
    })

    const service = (extra: Partial<PaymentsServiceOptions> = {}) =>
      createPaymentsService({
        db: store.db,
        accounts,
        plans: createPlanDirectory(accounts, { enterprise: config.plans.enterprise, fallbackPlan: 'free' }),
        logger: memoryLogger('error'),
        settings: config.payments,
        planIds: config.plans.ids,
        recoveryIntervalMs: 0,
        ...extra,
      })
    async function paidCheckoutEvent(name: string) {
      const org = await accounts.createOrganization(name, 'free')
      const e = event(
        'checkout.session.completed',
        checkoutSession({ customer: ids.customer(), subscription: ids.subscription(), orgId: org.id, plan: 'pro', paymentStatus: 'paid' }),
        seconds(),
      )
      const payload = payloadOf(e)
      return { org, e, payload, header: await signature(payload) }
    }
    const eventRow = async (id: string) => (await store.db.sql`SELECT processed_at, result FROM payment_events WHERE id = ${id}`)[0]

    test('an event acknowledged just before a crash is applied by the next start', async () => {
      const { org, e, payload, header } = await paidCheckoutEvent('Crash Co')
      const crashing = service({
        hooks: {
          beforeApply() {
            throw new Error('simulated crash between storing and applying')
          },
        },
      })
      // The delivery is acknowledged: the event is stored, so the provider need not send it again.
      const receipt = await crashing.receiveWebhook(payload, header, { requestId: 'delivery-1', clientIp: '203.0.113.9' })
      expect(receipt).toEqual({ eventId: e.id, type: 'checkout.session.completed', duplicate: false })
      await crashing.close()
      expect((await eventRow(e.id)).processed_at).toBeNull()
      expect((await accounts.organization(org.id))!.plan).toBe('free')

      const restarted = service()
      await restarted.start()
      await restarted.close()
      expect(await eventRow(e.id)).toMatchObject({ result: 'applied' })
      expect((await accounts.organization(org.id))!.plan).toBe('pro')
      // The entry keeps the request id and address of the original delivery.
      const [applied] = await store.db.sql`SELECT request_id, client_ip FROM audit_log WHERE org_id = ${org.id} AND action = 'payment_event.applied'`
      expect(applied).toEqual({ request_id: 'delivery-1', client_ip: '203.0.113.9' })
    })

    test('a redelivery applies an event whose earlier apply failed, and only once', async () => {
      const { org, e, payload, header } = await paidCheckoutEvent('Second Try Co')
      let failures = 1
      const flaky = service({
        hooks: {
          beforeApply() {
            if (failures-- > 0) throw new Error('the database went away')
          },
        },
      })
      expect((await flaky.receiveWebhook(payload, header, { requestId: 'a', clientIp: null })).duplicate).toBe(false)
      expect((await eventRow(e.id)).processed_at).toBeNull()
      expect((await flaky.receiveWebhook(payload, header, { requestId: 'b', clientIp: null })).duplicate).toBe(true)
      expect((await eventRow(e.id)).result).toBe('applied')
      expect((await accounts.organization(org.id))!.plan).toBe('pro')
      expect((await flaky.recover()).events).toBe(0)
      await flaky.close()
    })

    test('two processes recovering the same backlog apply each event once', async () => {
      const crashing = service({
        hooks: {
          beforeApply() {
            throw new Error('down')
          },
        },
      })
      const backlog = await Promise.all(['Backlog A', 'Backlog B', 'Backlog C'].map(paidCheckoutEvent))
      for (const { payload, header } of backlog) await crashing.receiveWebhook(payload, header, { requestId: null, clientIp: null })
      const [first, second] = [service(), service()]
      const results = await Promise.all([first.recover(), second.recover()])
      expect(results[0].events + results[1].events).toBe(3)
      for (const { org } of backlog) {
        const applied = await store.db.sql`SELECT COUNT(*) AS n FROM audit_log WHERE org_id = ${org.id} AND action = 'payment_event.applied'`
        expect(Number(applied[0].n)).toBe(1)
      }
      await Promise.all([crashing.close(), first.close(), second.close()])
    })
  })
})
