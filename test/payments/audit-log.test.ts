import { afterAll, beforeAll, beforeEach, describe, expect, test } from 'bun:test'
import { appendAudit, canonicalJson, verifyAuditChain } from '../../plugins/payments/audit-log.ts'
import { runCli } from '../../src/main/cli.ts'
import type { Database } from '../../src/storage/database.ts'
import { bearer, forEachBackend, userWithRole, type BackendDatabase } from '../helpers.ts'
import { billingApp } from './harness.ts'

const append = (db: Database, n: number, at = Date.now()) =>
  db.sql.begin((tx) =>
    appendAudit(tx, { orgId: 'org-1', actor: 'system', action: 'test.entry', requestId: `r${n}`, clientIp: null, details: { n, nested: { b: 2, a: 1 } } }, at),
  )

test('canonical JSON sorts keys at every level and drops undefined members', () => {
  expect(canonicalJson({ b: 1, a: { d: [1, { z: 1, y: 2 }], c: undefined } })).toBe('{"a":{"d":[1,{"y":2,"z":1}]},"b":1}')
})

forEachBackend((backend) => {
  describe(`audit hash chain on ${backend.name}`, () => {
    let store: BackendDatabase
    let db: Database
    beforeAll(async () => {
      store = await backend.open()
      db = store.db
    })
    afterAll(() => store.close())
    // Each test starts from an empty chain.
    beforeEach(async () => {
      await db.sql`DELETE FROM audit_log`
      await db.sql`UPDATE audit_chain_head SET seq = 0, hash = ${'0'.repeat(64)} WHERE id = 1`
    })

    test('concurrent appends make one unbroken chain', async () => {
      await Promise.all(Array.from({ length: 40 }, (_, i) => append(db, i)))
      const rows = await db.sql`SELECT seq, prev_hash, hash FROM audit_log ORDER BY seq`
      expect(rows.map((r: { seq: unknown }) => Number(r.seq))).toEqual(Array.from({ length: 40 }, (_, i) => i + 1))
      for (const [i, r] of (rows as { prev_hash: string }[]).entries()) expect(r.prev_hash).toBe(i === 0 ? '0'.repeat(64) : rows[i - 1].hash)
      expect(await verifyAuditChain(db)).toEqual({ valid: true, checked: 40, headSeq: 40, firstBroken: null })
    })

    test('an altered entry is reported, with the entries that still hold before it', async () => {
      for (let i = 0; i < 6; i++) await append(db, i)
      await db.sql`UPDATE audit_log SET details = ${'{"n":99}'} WHERE seq = 4`
      expect(await verifyAuditChain(db, 2)).toEqual({
        valid: false,
        checked: 3,
        headSeq: 6,
        firstBroken: { seq: 4, reason: 'content does not match its hash' },
      })
    })

    test('an entry rewritten together with its own hash breaks the link to the next one', async () => {
      for (let i = 0; i < 5; i++) await append(db, i)
      const [row] = await db.sql`SELECT * FROM audit_log WHERE seq = 2`
      const { entryHash } = await import('../../plugins/payments/audit-log.ts')
      const forged = {
        seq: 2,
        at: Number(row.at),
        orgId: row.org_id,
        actor: 'system',
        action: 'test.entry',
        requestId: row.request_id,
        clientIp: null,
        detailsText: '{"n":-1}',
      }
      await db.sql`UPDATE audit_log SET details = ${forged.detailsText}, hash = ${entryHash(row.prev_hash, forged)} WHERE seq = 2`
      expect((await verifyAuditChain(db)).firstBroken).toEqual({ seq: 3, reason: 'prev_hash does not match the previous entry' })
    })

    test('removed entries are reported, in the middle and at the end', async () => {
      for (let i = 0; i < 5; i++) await append(db, i)
      await db.sql`DELETE FROM audit_log WHERE seq = 5`
      expect((await verifyAuditChain(db)).firstBroken).toEqual({ seq: 5, reason: 'the chain head records 5 entries but 4 were found' })
      await db.sql`DELETE FROM audit_log WHERE seq = 2`
      expect((await verifyAuditChain(db)).firstBroken).toEqual({ seq: 2, reason: 'entry 2 is missing' })
    })
  })
})

describe('GET /api/audit-logs', async () => {
  const t = await billingApp()
  afterAll(() => t.close())
  const org = await t.deps.accounts.createOrganization('Audited Co', 'free')
  const other = await t.deps.accounts.createOrganization('Elsewhere Co', 'free')
  const owner = await userWithRole(t, 'owner', { orgId: org.id })
  const admin = await userWithRole(t, 'admin', { orgId: org.id })
  const base = Date.UTC(2026, 5, 1)
  const write = (orgId: string, action: string, actor: 'system' | `user:${string}`, minutes: number) =>
    t.deps.db.sql.begin((tx) => appendAudit(tx, { orgId, actor, action, details: { minutes } }, base + minutes * 60_000))
  await write(org.id, 'checkout.created', `user:${owner.user.id}`, 0)
  await write(org.id, 'billing_portal.opened', `user:${owner.user.id}`, 10)
  await write(other.id, 'checkout.created', 'system', 15)
  await write(org.id, 'plan.changed', 'system', 20)
  await write(org.id, 'checkout.created', `user:${admin.user.id}`, 30)
  const list = async (query: string, token = admin.token) => t.request(`/api/audit-logs${query}`, { headers: bearer(token) })

  test("pages through the organisation's entries, newest first, with a cursor", async () => {
    const seen: number[] = []
    let cursor: string | null = ''
    let pages = 0
    while (cursor !== null) {
      const res = await list(`?limit=2${cursor ? `&cursor=${cursor}` : ''}`)
      expect(res.status).toBe(200)
      const body = await res.json()
      seen.push(...body.entries.map((e: { details: { minutes: number } }) => e.details.minutes))
      cursor = body.nextCursor
      pages++
    }
    expect(seen).toEqual([30, 20, 10, 0])
    expect(pages).toBe(2)
    const [entry] = (await (await list('?limit=1')).json()).entries
    expect(entry).toMatchObject({
      organizationId: org.id,
      actor: `user:${admin.user.id}`,
      action: 'checkout.created',
      at: new Date(base + 30 * 60_000).toISOString(),
    })
    expect(entry.hash).toMatch(/^[0-9a-f]{64}$/)
  })

  test('filters by action, actor and time', async () => {
    const minutes = async (query: string) => (await (await list(query)).json()).entries.map((e: { details: { minutes: number } }) => e.details.minutes)
    expect(await minutes('?action=checkout.created')).toEqual([30, 0])
    expect(await minutes(`?actor=user:${owner.user.id}`)).toEqual([10, 0])
    expect(await minutes('?actor=system')).toEqual([20])
    const at = (m: number) => new Date(base + m * 60_000).toISOString()
    expect(await minutes(`?from=${at(10)}&to=${at(30)}`)).toEqual([20, 10])
  })

  test('bad cursors and periods are 422 naming the field; members are refused', async () => {
    const bad = await list('?cursor=bm90LWEtY3Vyc29y')
    expect(bad.status).toBe(422)
    expect((await bad.json()).errors).toEqual([{ field: 'cursor', message: 'is not a cursor this service handed out' }])
    const backwards = await list(`?from=${new Date(base + 1000).toISOString()}&to=${new Date(base).toISOString()}`)
    expect((await backwards.json()).errors[0].field).toBe('from')
    const member = await userWithRole(t, 'member', { orgId: org.id })
    expect((await list('', member.token)).status).toBe(403)
  })

  test('verification passes, then names the altered entry; so does the operator command', async () => {
    const cli = async () => {
      const lines: string[] = []
      return { code: await runCli(['audit', 'verify'], t.deps, (l) => lines.push(l)), lines }
    }
    const ok = await (await t.request('/api/audit-logs/verify', { headers: bearer(owner.token) })).json()
    expect(ok).toMatchObject({ valid: true, firstBroken: null })
    expect(await cli()).toEqual({ code: 0, lines: [`audit log intact: ${ok.checked} entries`] })

    await t.deps.db.sql`UPDATE audit_log SET actor = ${'system'} WHERE seq = 2`
    const broken = await (await t.request('/api/audit-logs/verify', { headers: bearer(owner.token) })).json()
    expect(broken).toMatchObject({ valid: false, checked: 1, firstBroken: { seq: 2, reason: 'content does not match its hash' } })
    const failed = await cli()
    expect(failed.code).toBe(1)
    expect(failed.lines[0]).toStartWith('audit log broken at entry 2')
  })
})
