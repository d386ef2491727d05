import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { memoryLogger } from '../../src/log.ts'
import type { Database } from '../../src/storage/database.ts'
import { createUsageMeter, queryUsage } from '../../src/usage/meter.ts'
import { ADMIN, bearer, forEachBackend, makeApp, userWithRole, type BackendDatabase } from '../helpers.ts'

forEachBackend((backend) => {
  describe(`usage metering on ${backend.name}`, () => {
    let store: BackendDatabase
    let db: Database
    beforeAll(async () => {
      store = await backend.open()
      db = store.db
    })
    afterAll(() => store.close())

    test('thousands of events become a handful of rows, with exact totals', async () => {
      const meter = createUsageMeter({ db, logger: memoryLogger(), flushIntervalMs: 60_000 })
      for (let i = 0; i < 5000; i++) {
        meter.record({ orgId: 'org-a', userId: i % 2 ? 'u1' : 'u2', kind: 'chat_tokens_out', model: 'gpt-x', quantity: 3 })
        meter.record({ orgId: 'org-a', userId: 'u1', kind: 'chat_request' })
      }
      await meter.close()
      const [row] = await db.sql`SELECT COUNT(*) AS n FROM usage_events WHERE org_id = ${'org-a'}`
      expect(Number(row.n)).toBe(3)
      const report = await queryUsage(db, { orgId: 'org-a', from: 0, to: Date.now() + 1000, bucket: 'day' })
      expect(report.totals).toEqual([
        { kind: 'chat_request', model: null, quantity: 5000 },
        { kind: 'chat_tokens_out', model: 'gpt-x', quantity: 15000 },
      ])
    })

    test('series are bucketed and filters by user and kind apply', async () => {
      let clock = Date.UTC(2026, 0, 1, 10, 30)
      const meter = createUsageMeter({ db, logger: memoryLogger(), flushIntervalMs: 60_000, now: () => clock })
      meter.record({ orgId: 'org-b', userId: 'u1', kind: 'search', quantity: 2 })
      await meter.flush()
      clock += 3_600_000
      meter.record({ orgId: 'org-b', userId: 'u2', kind: 'search', quantity: 5 })
      meter.record({ orgId: 'org-b', userId: 'u2', kind: 'web_search' })
      await meter.close()
      const range = { orgId: 'org-b', from: Date.UTC(2026, 0, 1), to: Date.UTC(2026, 0, 2) }
      const hourly = await queryUsage(db, { ...range, bucket: 'hour' })
      expect(hourly.series).toEqual([
        { bucketStart: '2026-01-01T10:00:00.000Z', kind: 'search', quantity: 2 },
        { bucketStart: '2026-01-01T11:00:00.000Z', kind: 'search', quantity: 5 },
        { bucketStart: '2026-01-01T11:00:00.000Z', kind: 'web_search', quantity: 1 },
      ])
      const u2Search = await queryUsage(db, { ...range, bucket: 'day', userId: 'u2', kind: 'search' })
      expect(u2Search.totals).toEqual([{ kind: 'search', model: null, quantity: 5 }])
    })
  })
})

describe('GET /api/usage', async () => {
  const t = await makeApp({ ADMIN_EMAIL: ADMIN.email, ADMIN_PASSWORD: ADMIN.password })
  afterAll(() => t.close())
  const enterprise = await t.deps.accounts.createOrganization('Enterprise Co', 'enterprise')
  const other = await t.deps.accounts.createOrganization('Other Co', 'enterprise')

  test('an enterprise owner sees the organisation usage, including events still buffered', async () => {
    const { token, user } = await userWithRole(t, 'owner', { orgId: enterprise.id })
    t.deps.meter.record({ orgId: enterprise.id, userId: user.id, kind: 'chat_request' })
    t.deps.meter.record({ orgId: other.id, userId: 'someone', kind: 'chat_request', quantity: 99 })
    const res = await t.request('/api/usage?bucket=hour', { headers: bearer(token) })
    expect(res.status).toBe(200)
    const body = await res.json()
    expect(body.organizationId).toBe(enterprise.id)
    expect(body.totals).toEqual([{ kind: 'chat_request', model: null, quantity: 1 }])
    expect(body.series).toHaveLength(1)
    expect(body.period.bucket).toBe('hour')
  })

  test("another organisation's user id filter finds nothing", async () => {
    const { token } = await userWithRole(t, 'owner', { orgId: enterprise.id })
    const body = await (await t.request('/api/usage?userId=someone', { headers: bearer(token) })).json()
    expect(body.totals).toEqual([])
  })

  test('bad periods and unknown kinds are 422 naming the field', async () => {
    const { token } = await userWithRole(t, 'owner', { orgId: enterprise.id })
    const reversed = await t.request('/api/usage?from=2026-02-01T00:00:00Z&to=2026-01-01T00:00:00Z', { headers: bearer(token) })
    expect(reversed.status).toBe(422)
    expect((await reversed.json()).errors[0].field).toBe('from')
    const kind = await t.request('/api/usage?kind=everything', { headers: bearer(token) })
    expect(kind.status).toBe(422)
    const body = await kind.json()
    expect(body.errors[0].field).toBe('kind')
    expect(body.errors[0].message).toContain('chat_request')
    const unknown = await t.request('/api/usage?colour=red', { headers: bearer(token) })
    expect(unknown.status).toBe(422)
  })
})
