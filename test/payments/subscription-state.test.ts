import { describe, expect, test } from 'bun:test'
import {
  emptyRecord,
  entitlementOf,
  isNewer,
  organisationPlan,
  statusRank,
  withPayment,
  withSnapshot,
  type SubscriptionRecord,
  type SubscriptionSnapshot,
} from '../../plugins/payments/subscription-state.ts'

const NOW = Date.UTC(2027, 0, 1)
const plans = { ids: ['free', 'pro', 'team', 'enterprise'], fallback: 'free' }
const snapshot = (over: Partial<SubscriptionSnapshot> = {}): SubscriptionSnapshot => ({
  status: 'active',
  plan: 'pro',
  priceId: 'price_pro',
  interval: 'month',
  seats: 1,
  currentPeriodEnd: NOW + 86_400_000,
  cancelAtPeriodEnd: false,
  ...over,
})
const record = (over: Partial<SubscriptionSnapshot> = {}, paid = true): SubscriptionRecord => {
  const r = withSnapshot(emptyRecord('sub_1', 'org', 'cus'), snapshot(over), { at: 1, rank: statusRank(over.status ?? 'active'), eventId: 'evt_1' })
  return paid ? withPayment(r, NOW - 1000) : r
}

describe('ordering of snapshots', () => {
  test('a later second wins; within a second the later lifecycle status; then the event id', () => {
    const base = { at: 100, rank: statusRank('active'), eventId: 'evt_m' }
    expect(isNewer({ ...base, at: 101, rank: 0 }, base)).toBe(true)
    expect(isNewer({ ...base, rank: statusRank('incomplete') }, base)).toBe(false)
    expect(isNewer({ ...base, rank: statusRank('canceled') }, base)).toBe(true)
    expect(isNewer({ ...base, eventId: 'evt_n' }, base)).toBe(true)
    expect(isNewer(base, base)).toBe(false)
  })

  test('an older snapshot leaves the record as it was; payment proof keeps its earliest moment', () => {
    const newer = withSnapshot(emptyRecord('s', 'o', null), snapshot({ seats: 5 }), { at: 20, rank: 2, eventId: 'b' })
    expect(withSnapshot(newer, snapshot({ seats: 2 }), { at: 10, rank: 2, eventId: 'z' })).toBe(newer)
    expect(withPayment(withPayment(newer, 50), 40).paidAt).toBe(40)
    expect(withPayment(withPayment(newer, 40), 50).paidAt).toBe(40)
  })
})

describe('what a subscription grants', () => {
  test('nothing before money has moved, whatever the status says', () => {
    expect(entitlementOf(record({ status: 'active' }, false), NOW)).toBeUndefined()
  })

  test('renewing statuses grant the plan; an ending one until its period end; dead ones nothing', () => {
    for (const status of ['active', 'trialing', 'past_due', 'incomplete'])
      expect(entitlementOf(record({ status }), NOW)).toEqual({ plan: 'pro', expiresAt: null })
    expect(entitlementOf(record({ cancelAtPeriodEnd: true }), NOW)).toEqual({ plan: 'pro', expiresAt: NOW + 86_400_000 })
    for (const status of ['canceled', 'unpaid']) {
      expect(entitlementOf(record({ status }), NOW)).toEqual({ plan: 'pro', expiresAt: NOW + 86_400_000 })
      expect(entitlementOf(record({ status }), NOW + 86_400_000)).toBeUndefined()
    }
    for (const status of ['incomplete_expired', 'paused']) expect(entitlementOf(record({ status }), NOW)).toBeUndefined()
  })

  test("an organisation's plan: untouched when nothing was ever paid, a renewing subscription over an ending one, else the first plan", () => {
    expect(organisationPlan([record({}, false)], NOW, plans)).toBeUndefined()
    const ending = { ...record({ status: 'canceled', plan: 'enterprise' }), id: 'sub_old' }
    const renewing = { ...record({ plan: 'team' }), id: 'sub_new' }
    expect(organisationPlan([ending, renewing], NOW, plans)).toEqual({ plan: 'team', expiresAt: null })
    expect(organisationPlan([ending], NOW, plans)).toEqual({ plan: 'enterprise', expiresAt: NOW + 86_400_000 })
    expect(organisationPlan([ending], NOW + 86_400_000, plans)).toEqual({ plan: 'free', expiresAt: null })
  })
})
