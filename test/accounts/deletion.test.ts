import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { PERSONAL_TABLES } from '../../plugins/accounts/index.ts'
import { orgDirName } from '../../plugins/code-search/index.ts'
import { runCli } from '../../src/main/cli.ts'
import { startGitServer } from '../fakes/git-server.ts'
import { startFakeOpenAi } from '../fakes/openai.ts'
import { UNLIMITED_BUDGETS, bearer, freshPostgres, login, makeApp, postgresUrl, type TestApp } from '../helpers.ts'

const model = startFakeOpenAi()
const git = startGitServer()
const pg = postgresUrl ? await freshPostgres() : undefined
const backends = [{ name: 'sqlite', env: {} as Record<string, string> }]
if (pg) backends.push({ name: 'postgres', env: { DATABASE_URL: pg.url } })

afterAll(async () => {
  await git.close()
  await model.close()
  await pg?.drop()
})

const PASSWORD = 'a-long-enough-password'

for (const backend of backends)
  describe(`deleting users and organisations (${backend.name})`, () => {
    let t: TestApp
    const people: Record<string, { id: string; orgId: string; email: string; token: string; refreshToken: string }> = {}

    async function person(name: string, role: 'owner' | 'member', org: { orgId?: string; orgName?: string }) {
      const email = `${name}-${crypto.randomUUID().slice(0, 8)}@example.com`
      const user = await t.deps.access.createAccount({ email, password: PASSWORD, role, ...org })
      const pair = await login(t, email, PASSWORD)
      people[name] = { id: user.id, orgId: user.orgId, email, token: pair.accessToken, refreshToken: pair.refreshToken }
      return people[name]!
    }

    async function chat(token: string, text: string) {
      const response = await t.send(
        'POST',
        '/api/chat',
        { messages: [{ id: crypto.randomUUID(), role: 'user', parts: [{ type: 'text', text }] }] },
        bearer(token),
      )
      expect(response.status).toBe(200)
      await response.text()
    }

    async function importRepository(token: string, name: string) {
      git.createRepository(name, { 'src/ledger.ts': `export function reconcileLedgerEntries_${name.replace(/\W/g, '')}() {\n  return 42\n}\n` })
      const response = await t.send('POST', '/api/codehost/import', { repository: name }, bearer(token))
      expect(response.status).toBe(202)
      const { importId } = await response.json()
      await t.deps.imports.settled(importId)
    }

    const search = async (token: string) => {
      const response = await t.send('POST', '/api/search', { query: 'reconcileLedgerEntries', mode: 'text' }, bearer(token))
      return { status: response.status, results: response.status === 200 ? ((await response.json()).results as unknown[]) : [] }
    }

    const count = async (sql: string, ...values: unknown[]) => {
      const [row] = await t.deps.db.sql.unsafe(sql, values)
      return Number(row.n)
    }

    /** Rows of every personal table still naming the user or the organisation. */
    async function remaining(column: 'user_id' | 'org_id', id: string): Promise<Record<string, number>> {
      const left: Record<string, number> = {}
      for (const [table, fate] of Object.entries(PERSONAL_TABLES)) {
        if (fate === 'kept') continue
        const columns = (
          await t.deps.db.sql.unsafe(
            t.deps.db.dialect === 'postgres'
              ? `SELECT column_name AS name FROM information_schema.columns WHERE table_name = '${table}'`
              : `PRAGMA table_info(${table})`,
          )
        ).map((c: { name: string }) => c.name)
        const key =
          table === 'organizations'
            ? column === 'org_id'
              ? 'id'
              : undefined
            : table === 'users'
              ? column === 'user_id'
                ? 'id'
                : 'org_id'
              : columns.includes(column)
                ? column
                : undefined
        if (!key) continue
        const n = await count(`SELECT COUNT(*) AS n FROM ${table} WHERE ${key} = $1`, id)
        if (n > 0) left[table] = n
      }
      return left
    }

    beforeAll(async () => {
      t = await makeApp({
        ...UNLIMITED_BUDGETS,
        ...backend.env,
        OPENAI_BASE_URL: model.baseUrl,
        CHAT_MODEL: 'fake-model',
        IMPORT_CODEHOST_URL: git.url,
        IMPORT_ALLOW_HOSTS: `127.0.0.1:${git.port}`,
        CODE_INDEX_SNAPSHOT_DELAY_MS: '10',
      })
      const a = await person('ownerA', 'owner', { orgName: `Org A ${crypto.randomUUID().slice(0, 6)}` })
      await person('memberA', 'member', { orgId: a.orgId })
      await person('otherMemberA', 'member', { orgId: a.orgId })
      await person('ownerB', 'owner', { orgName: 'Org B' })
      for (const name of ['ownerA', 'memberA', 'ownerB']) await chat(people[name]!.token, `hello from ${name}`)
      await importRepository(people.memberA!.token, `acme/ledger-${backend.name}-a`)
      await importRepository(people.ownerB!.token, `acme/ledger-${backend.name}-b`)
      // An integration connection (sealed tokens as the connect flow stores them) and a flow in progress.
      const now = Date.now()
      for (const name of ['memberA', 'ownerB'])
        await t.deps.db.sql`INSERT INTO integration_connections (user_id, provider, access_token, token_type, scopes, version, connected_at, updated_at)
          VALUES (${people[name]!.id}, 'github', 'sealed', 'bearer', 'repo', 1, ${now}, ${now})`
      await t.deps.db.sql`INSERT INTO oauth_states (state_hash, user_id, provider, code_verifier, binding_hash, scopes, return_to, expires_at, created_at)
        VALUES ('h1', ${people.memberA!.id}, 'github', 'v', 'b', 'repo', '/', ${now + 60_000}, ${now})`
      await t.deps.payments.recordAudit({ orgId: a.orgId, actor: `user:${a.id}`, action: 'checkout.created', details: { sessionId: 'cs_test' } })
      await t.deps.meter.flush()
    })
    afterAll(async () => {
      await t.close()
    })

    test('anonymous callers get 401 with nothing about the schema', async () => {
      for (const [method, path] of [
        ['DELETE', '/api/org'],
        ['GET', '/api/org'],
        ['DELETE', `/api/users/${people.memberA!.id}`],
      ] as const) {
        const response = await t.send(method, path, { nonsense: true })
        expect(response.status).toBe(401)
        const body = await response.json()
        expect(body.code).toBe('unauthenticated')
        expect(body.errors).toBeUndefined()
      }
    })

    test('a member cannot delete the organisation or another member (403), even with a bad body', async () => {
      const asMember = bearer(people.memberA!.token)
      expect((await t.send('DELETE', '/api/org', { confirm: 'anything' }, asMember)).status).toBe(403)
      expect((await t.send('DELETE', '/api/org', { wrong: 1 }, asMember)).status).toBe(403)
      expect((await t.send('DELETE', `/api/users/${people.otherMemberA!.id}`, {}, asMember)).status).toBe(403)
    })

    test("an owner cannot delete another organisation's user: 404, as for an unknown id", async () => {
      const unknown = await t.send('DELETE', `/api/users/${crypto.randomUUID()}`, {}, bearer(people.ownerA!.token))
      const foreign = await t.send('DELETE', `/api/users/${people.ownerB!.id}`, {}, bearer(people.ownerA!.token))
      expect(foreign.status).toBe(404)
      expect(unknown.status).toBe(404)
      expect((await foreign.json()).detail).toBe((await unknown.json()).detail)
    })

    test('a bad body is 422 naming the field; a wrong confirmation too', async () => {
      const missing = await t.send('DELETE', '/api/org', {}, bearer(people.ownerA!.token))
      expect(missing.status).toBe(422)
      expect(JSON.stringify((await missing.json()).errors)).toContain('confirm')
      const wrong = await t.send('DELETE', '/api/org', { confirm: 'Not the name' }, bearer(people.ownerA!.token))
      expect(wrong.status).toBe(422)
      expect((await wrong.json()).errors).toEqual([{ field: 'confirm', message: "must be the organisation's name, exactly" }])
    })

    test('the last owner is refused while other members exist (409 last_owner)', async () => {
      const response = await t.send('DELETE', `/api/users/${people.ownerA!.id}`, {}, bearer(people.ownerA!.token))
      expect(response.status).toBe(409)
      expect((await response.json()).code).toBe('last_owner')
    })

    test('an owner deletes a member: signed out, chats, streams and integrations gone, usage anonymised', async () => {
      const member = people.memberA!
      const chatIds = (await t.deps.db.sql`SELECT id FROM chats WHERE user_id = ${member.id}`).map((r: { id: string }) => r.id)
      expect(chatIds.length).toBe(1)
      const response = await t.send('DELETE', `/api/users/${member.id}`, {}, bearer(people.ownerA!.token))
      expect(response.status).toBe(200)
      const report = await response.json()
      expect(report).toMatchObject({ deleted: 'user', id: member.id })
      expect(report.removed).toMatchObject({ chats: 1, users: 1, integrationConnections: 1, oauthFlows: 1 })
      expect(report.removed.sessions).toBeGreaterThanOrEqual(1)
      expect((await t.request('/auth/me', { headers: bearer(member.token) })).status).toBe(401)
      expect((await t.send('POST', '/auth/refresh', { refreshToken: member.refreshToken })).status).toBe(401)
      expect(await remaining('user_id', member.id)).toEqual({})
      expect(await count('SELECT COUNT(*) AS n FROM chat_messages WHERE chat_id = $1', chatIds[0])).toBe(0)
      expect(await t.deps.chat.activeGeneration(chatIds[0]!)).toBeUndefined()
      // The import they started stays with the organisation, anonymised; so does their usage.
      expect(await count("SELECT COUNT(*) AS n FROM codehost_imports WHERE org_id = $1 AND user_id = 'deleted-user'", member.orgId)).toBe(1)
      expect((await search(people.ownerA!.token)).results.length).toBeGreaterThan(0)
    })

    test('an owner deletes the organisation: nothing of it remains, the other organisation is untouched, the audit chain verifies', async () => {
      const owner = people.ownerA!
      const orgId = owner.orgId
      const name = (await (await t.request('/api/org', { headers: bearer(owner.token) })).json()).name
      const beforeB = { search: (await search(people.ownerB!.token)).results.length, left: await remaining('org_id', people.ownerB!.orgId) }
      await Bun.sleep(100)
      expect(existsSync(join(t.config.dataDir, 'code-index', orgDirName(orgId)))).toBe(true)
      const response = await t.send('DELETE', '/api/org', { confirm: name }, bearer(owner.token))
      expect(response.status).toBe(200)
      const report = await response.json()
      expect(report).toMatchObject({ deleted: 'organization', id: orgId })
      expect(report.removed).toMatchObject({ organizations: 1, users: 2, repositories: 1, imports: 1 })
      expect(await remaining('org_id', orgId)).toEqual({})
      for (const user of [owner, people.otherMemberA!]) {
        expect(await remaining('user_id', user.id)).toEqual({})
        expect((await t.request('/auth/me', { headers: bearer(user.token) })).status).toBe(401)
      }
      expect(
        await count('SELECT COUNT(*) AS n FROM codehost_import_events e WHERE NOT EXISTS (SELECT 1 FROM codehost_imports i WHERE i.id = e.import_id)'),
      ).toBe(0)
      expect(existsSync(join(t.config.dataDir, 'code-index', orgDirName(orgId)))).toBe(false)
      expect(existsSync(join(t.config.dataDir, 'imports', orgId))).toBe(false)
      expect(await t.deps.codeIndex.search({ orgId }, { query: 'reconcileLedgerEntries', mode: 'text' })).toEqual([])
      // The other organisation keeps everything.
      expect((await search(people.ownerB!.token)).results.length).toBe(beforeB.search)
      // Searching meters a usage event, so only the usage count may have grown.
      const { usage_events: usageAfter, ...leftB } = await remaining('org_id', people.ownerB!.orgId)
      const { usage_events: usageBefore, ...leftBefore } = beforeB.left
      expect(leftB).toEqual(leftBefore)
      expect(usageAfter!).toBeGreaterThanOrEqual(usageBefore!)
      const lines: string[] = []
      expect(await runCli(['audit', 'verify'], t.deps, (line) => lines.push(line))).toBe(0)
      const actions = (await t.deps.payments.listAudit({ orgId, limit: 50 })).entries.map((e) => e.action)
      expect(actions).toEqual(expect.arrayContaining(['checkout.created', 'user.deleted', 'organization.deleted']))
    })

    test('operators delete a user and an organisation from the command line, which prints the counts', async () => {
      const owner = await person('ownerC', 'owner', { orgName: 'Org C' })
      const member = await person('memberC', 'member', { orgId: owner.orgId })
      await chat(member.token, 'hello')
      const lines: string[] = []
      expect(await runCli(['users', 'delete', '--email', member.email], t.deps, (line) => lines.push(line))).toBe(0)
      expect(lines[0]).toContain(`deleted user ${member.id}`)
      expect(lines).toContain('chats\t1')
      expect((await t.request('/auth/me', { headers: bearer(member.token) })).status).toBe(401)
      lines.length = 0
      expect(await runCli(['users', 'delete', '--user', owner.id], t.deps, (line) => lines.push(line))).toBe(2)
      expect(lines[0]).toContain('only member')
      lines.length = 0
      expect(await runCli(['orgs', 'delete', '--org', owner.orgId], t.deps, (line) => lines.push(line))).toBe(0)
      expect(lines).toContain('organizations\t1')
      expect(await remaining('org_id', owner.orgId)).toEqual({})
      lines.length = 0
      expect(await runCli(['audit', 'verify'], t.deps, (line) => lines.push(line))).toBe(0)
    })
  })
