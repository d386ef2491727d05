/**
 * Personal API keys in-process, on SQLite and on PostgreSQL when DATABASE_URL is set: created with scopes and an
 * expiry, shown once, stored hashed, usable as bearer tokens within their scopes and their owner's role, refused
 * once revoked, expired or their owner deleted, spending their owner's budget, and recorded in the audit log.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { ADMIN, UNLIMITED_BUDGETS, bearer, freshPostgres, login, makeApp, postgresUrl, userWithRole, type TestApp } from '../helpers.ts'

const pg = postgresUrl ? await freshPostgres() : undefined
const backends: { name: string; env: Record<string, string> }[] = [{ name: 'sqlite', env: {} }]
if (pg) backends.push({ name: 'postgres', env: { DATABASE_URL: pg.url } })
afterAll(() => pg?.drop())

type Created = { id: string; key: string; scopes: string[]; expiresAt: number; createdAt: number }

for (const backend of backends)
  describe(`API keys (${backend.name})`, () => {
    let t: TestApp
    let owner: string
    let orgId: string
    beforeAll(async () => {
      t = await makeApp({ ADMIN_EMAIL: ADMIN.email, ADMIN_PASSWORD: ADMIN.password, ...UNLIMITED_BUDGETS, ...backend.env })
      const pair = await login(t, ADMIN.email, ADMIN.password)
      owner = pair.accessToken
      orgId = pair.user.organizationId
    })
    afterAll(() => t.close())

    async function createKey(token: string, body: Record<string, unknown>): Promise<Created> {
      const res = await t.send('POST', '/api/keys', body, bearer(token))
      expect(res.status).toBe(201)
      return (await res.json()) as Created
    }

    const problemOf = async (res: Response) => (await res.json()) as { code: string; detail: string; errors?: { field: string }[] }

    test('an anonymous caller is refused 401 before anything about the body is said', async () => {
      for (const [method, path] of [
        ['POST', '/api/keys'],
        ['GET', '/api/keys'],
        ['DELETE', '/api/keys/whatever'],
      ] as const) {
        const res = await t.request(path, { method, headers: { 'content-type': 'application/json' }, body: method === 'GET' ? undefined : '{"bogus": 1}' })
        expect(res.status).toBe(401)
        const body = await problemOf(res)
        expect(body.code).toBe('unauthenticated')
        expect(body.errors).toBeUndefined()
        expect(JSON.stringify(body)).not.toMatch(/scopes|name|bogus/)
      }
    })

    test('bad bodies are 422 naming the field', async () => {
      const cases: [Record<string, unknown>, string][] = [
        [{ scopes: ['chat:write'] }, 'name'],
        [{ name: 'x', scopes: [] }, 'scopes'],
        [{ name: 'x', scopes: ['chat:write', 'chat:write'] }, 'scopes'],
        [{ name: 'x', scopes: ['root'] }, 'scopes.0'],
        [{ name: 'x', scopes: ['chat:write'], expiresInDays: 0 }, 'expiresInDays'],
        [{ name: 'x', scopes: ['chat:write'], expiresInDays: 366 }, 'expiresInDays'],
      ]
      for (const [body, field] of cases) {
        const res = await t.send('POST', '/api/keys', body, bearer(owner))
        expect(res.status).toBe(422)
        expect((await problemOf(res)).errors?.map((e) => e.field)).toContain(field)
      }
    })

    test("scopes beyond the caller's role are 422 naming scopes", async () => {
      const member = await userWithRole(t, 'member')
      const res = await t.send('POST', '/api/keys', { name: 'too much', scopes: ['chat:write', 'billing:manage'] }, bearer(member.token))
      expect(res.status).toBe(422)
      const body = await problemOf(res)
      expect(body.errors).toEqual([{ field: 'scopes', message: expect.stringContaining('billing:manage') } as never])
    })

    test('a key is shown once, stored hashed, and works as a bearer token with its scopes only', async () => {
      const created = await createKey(owner, { name: 'CI', scopes: ['chat:write'], expiresInDays: 7 })
      expect(created.key).toMatch(/^rak_[0-9a-f-]{36}_[A-Za-z0-9_-]{43}$/)
      expect(created.expiresAt - created.createdAt).toBe(7 * 86_400_000)
      const secret = created.key.slice(41)

      const list = await (await t.request('/api/keys', { headers: bearer(owner) })).text()
      expect(list).toContain(created.id)
      expect(list).not.toContain(secret)
      expect(JSON.parse(list).keys[0]).not.toHaveProperty('key')
      const rows = await t.deps.db.sql`SELECT * FROM api_keys WHERE id = ${created.id}`
      expect(JSON.stringify(rows)).not.toContain(secret)
      expect(rows[0].secret_hash).toBe(new Bun.CryptoHasher('sha256').update(secret).digest('hex'))

      const me = await t.request('/auth/me', { headers: bearer(created.key) })
      expect(me.status).toBe(200)
      expect(await me.json()).toMatchObject({ role: 'owner', scopes: ['chat:write'], source: 'api_key' })
      expect((await t.request('/api/chats', { headers: bearer(created.key) })).status).toBe(200)

      const beyond = await t.request('/api/audit-logs', { headers: bearer(created.key) })
      expect(beyond.status).toBe(403)
      expect(await problemOf(beyond)).toMatchObject({ code: 'insufficient_scope', requiredScope: 'audit:read' })
    })

    test('its use is recorded, to the minute', async () => {
      const created = await createKey(owner, { name: 'used', scopes: ['chat:write'] })
      expect((await t.request('/api/chats', { headers: bearer(created.key) })).status).toBe(200)
      let seen: number | null = null
      for (let i = 0; i < 50 && seen === null; i++) {
        const { keys } = (await (await t.request('/api/keys', { headers: bearer(owner) })).json()) as { keys: { id: string; lastUsedAt: number | null }[] }
        seen = keys.find((k) => k.id === created.id)!.lastUsedAt
        if (seen === null) await Bun.sleep(10)
      }
      expect(seen).toBeGreaterThanOrEqual(created.createdAt)
    })

    test('a key cannot create keys, list them, revoke them or change the password: 403 session_required', async () => {
      const created = await createKey(owner, { name: 'script', scopes: ['chat:write'] })
      const attempts = [
        t.send('POST', '/api/keys', { name: 'child', scopes: ['chat:write'] }, bearer(created.key)),
        t.request('/api/keys', { headers: bearer(created.key) }),
        t.request(`/api/keys/${created.id}`, { method: 'DELETE', headers: bearer(created.key) }),
        t.send('POST', '/auth/password', { currentPassword: ADMIN.password, newPassword: 'another-long-password' }, bearer(created.key)),
      ]
      for (const res of await Promise.all(attempts)) {
        expect(res.status).toBe(403)
        expect((await problemOf(res)).code).toBe('session_required')
      }
      expect((await t.request('/api/chats', { headers: bearer(created.key) })).status).toBe(200)
    })

    test('a valid id with a wrong secret, or a malformed key, is 401 like an unknown key', async () => {
      const created = await createKey(owner, { name: 'guessed', scopes: ['chat:write'] })
      const wrong = `${created.key.slice(0, 41)}${'A'.repeat(43)}`
      const unknownId = `rak_${crypto.randomUUID()}_${created.key.slice(41)}`
      for (const token of [wrong, unknownId, 'rak_nothing', `${created.key}x`]) {
        const res = await t.request('/api/chats', { headers: bearer(token) })
        expect(res.status).toBe(401)
        expect(await problemOf(res)).toMatchObject({ code: 'invalid_token', detail: 'unknown API key' })
      }
    })

    test('a revoked key is 401 at once, though it was verified before; revoking is recorded in the audit log', async () => {
      const created = await createKey(owner, { name: 'to revoke', scopes: ['chat:write'] })
      expect((await t.request('/api/chats', { headers: bearer(created.key) })).status).toBe(200)
      expect((await t.request(`/api/keys/${created.id}`, { method: 'DELETE', headers: bearer(owner) })).status).toBe(204)
      const res = await t.request('/api/chats', { headers: bearer(created.key) })
      expect(res.status).toBe(401)
      expect(res.headers.get('www-authenticate')).toContain('error="invalid_token"')
      expect(await problemOf(res)).toMatchObject({ code: 'invalid_token', detail: 'API key revoked' })
      // Again: nothing changes and nothing more is recorded.
      expect((await t.request(`/api/keys/${created.id}`, { method: 'DELETE', headers: bearer(owner) })).status).toBe(204)

      const audit = await t.request('/api/audit-logs?limit=100', { headers: bearer(owner) })
      const { entries } = (await audit.json()) as { entries: { action: string; actor: string; details: { keyId?: string } }[] }
      const mine = entries.filter((e) => e.details.keyId === created.id).map((e) => e.action)
      expect(mine.sort()).toEqual(['api_key.created', 'api_key.revoked'])
      expect(JSON.stringify(entries)).not.toContain(created.key.slice(41))
    })

    test("another user's key is 404 to revoke, and keeps working", async () => {
      const member = await userWithRole(t, 'member')
      const created = await createKey(member.token, { name: 'theirs', scopes: ['chat:write'] })
      expect((await t.request(`/api/keys/${created.id}`, { method: 'DELETE', headers: bearer(owner) })).status).toBe(404)
      expect((await t.request('/api/chats', { headers: bearer(created.key) })).status).toBe(200)
    })

    test('an expired key is 401', async () => {
      const created = await createKey(owner, { name: 'short', scopes: ['chat:write'], expiresInDays: 1 })
      await t.deps.db.sql`UPDATE api_keys SET expires_at = ${Date.now() - 1} WHERE id = ${created.id}`
      const res = await t.request('/api/chats', { headers: bearer(created.key) })
      expect(res.status).toBe(401)
      expect(await problemOf(res)).toMatchObject({ code: 'invalid_token', detail: 'API key expired' })
    })

    test('a key loses the scopes its owner’s role loses', async () => {
      const admin = await userWithRole(t, 'admin')
      const created = await createKey(admin.token, { name: 'auditor', scopes: ['audit:read', 'chat:write'] })
      await t.deps.accounts.setRole(admin.user.id, 'member')
      const me = await t.request('/auth/me', { headers: bearer(created.key) })
      expect(await me.json()).toMatchObject({ role: 'member', scopes: ['chat:write'] })
      const res = await t.request('/api/audit-logs', { headers: bearer(created.key) })
      expect(res.status).toBe(403)
      expect((await problemOf(res)).code).toBe('insufficient_scope')
    })

    test('the keys of a deleted user are 401, those used before included, and their rows are gone', async () => {
      const member = await userWithRole(t, 'member', { orgId })
      const used = await createKey(member.token, { name: 'used', scopes: ['chat:write'] })
      const unused = await createKey(member.token, { name: 'unused', scopes: ['chat:write'] })
      expect((await t.request('/api/chats', { headers: bearer(used.key) })).status).toBe(200)
      const deleted = await t.request(`/api/users/${member.user.id}`, { method: 'DELETE', headers: bearer(owner) })
      expect(deleted.status).toBe(200)
      expect(((await deleted.json()) as { removed: Record<string, number> }).removed.apiKeys).toBe(2)
      for (const key of [used.key, unused.key]) {
        const res = await t.request('/api/chats', { headers: bearer(key) })
        expect(res.status).toBe(401)
        expect((await problemOf(res)).code).toBe('invalid_token')
      }
      expect(await t.deps.db.sql`SELECT id FROM api_keys WHERE user_id = ${member.user.id}`).toEqual([])
    })
  })

describe('rate limits', () => {
  test("a key spends its owner's budget", async () => {
    const t = await makeApp({ ADMIN_EMAIL: ADMIN.email, ADMIN_PASSWORD: ADMIN.password, RATE_LIMIT_BURST: '6', RATE_LIMIT_BURST_WINDOW_SECONDS: '3600' })
    try {
      const { accessToken } = await login(t, ADMIN.email, ADMIN.password)
      const created = (await (await t.send('POST', '/api/keys', { name: 'budget', scopes: ['chat:write'] }, bearer(accessToken))).json()) as Created
      const statuses: number[] = []
      for (const token of [accessToken, created.key, accessToken, created.key, created.key, accessToken])
        statuses.push((await t.request('/api/chats', { headers: bearer(token) })).status)
      // The key's creation spent one of the six.
      expect(statuses).toEqual([200, 200, 200, 200, 200, 429])
      const refused = await t.request('/api/chats', { headers: bearer(created.key) })
      expect(refused.status).toBe(429)
      expect(refused.headers.get('retry-after')).toBeTruthy()
    } finally {
      await t.close()
    }
  })
})
