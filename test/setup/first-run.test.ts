/** First run through the API: the one-time setup code, the first owner, and setup closing behind it. */
import { afterEach, describe, expect, test } from 'bun:test'
import { announceSkip, freshPostgres, postgresUrl, type TestApp } from '../helpers.ts'
import { OWNER, firstRunApp, type FirstRun } from './support.ts'

const backends = postgresUrl ? (['sqlite', 'postgres'] as const) : (['sqlite'] as const)
if (!postgresUrl) announceSkip('PostgreSQL variant of the first-run suite', 'DATABASE_URL')

for (const backend of backends)
  describe(`first run (${backend})`, () => {
    const open: { t: TestApp; drop?: () => Promise<void> }[] = []
    afterEach(async () => {
      for (const { t, drop } of open.splice(0)) {
        await t.close()
        await drop?.()
      }
    })
    async function service(env: Record<string, string> = {}): Promise<FirstRun> {
      const pg = backend === 'postgres' ? await freshPostgres() : undefined
      const t = await firstRunApp({ ...env, ...(pg ? { DATABASE_URL: pg.url } : {}) })
      open.push({ t, drop: pg?.drop })
      return t
    }
    const setUp = (t: TestApp, code: string, owner = OWNER) => t.send('POST', '/setup', { code, ...owner })

    test('a start with no user logs one code, at warn level with the URL, and stores only its hash', async () => {
      const t = await service()
      const code = await t.start()
      expect(code).toMatch(/^[0-9A-HJKMNP-TV-Z]{4}(-[0-9A-HJKMNP-TV-Z]{4}){3}$/)
      const lines = t.logs.filter((line) => JSON.stringify(line).includes(code))
      expect(lines).toHaveLength(1)
      expect(lines[0]).toMatchObject({ level: 'warn', setupUrl: `${t.config.publicBaseUrl}/setup`, setupCode: code })
      expect(Date.parse(String(lines[0]!.expiresAt)) - Date.now()).toBeGreaterThan(3500 * 1000)
      const stored = await t.deps.db.sql`SELECT * FROM setup_codes`
      expect(stored).toHaveLength(1)
      expect(JSON.stringify(stored)).not.toContain(code)
      expect(JSON.stringify(stored)).not.toContain(code.replaceAll('-', ''))
    })

    test('with ADMIN_EMAIL and ADMIN_PASSWORD the owner exists at start-up, no code is made, and setup is closed', async () => {
      const t = await service({ ADMIN_EMAIL: 'admin@example.com', ADMIN_PASSWORD: 'admin-password-1234' })
      expect(await t.deps.setup.createCode()).toBeUndefined()
      await expect(t.start()).rejects.toThrow('no setup code was logged')
      expect(await t.deps.db.sql`SELECT * FROM setup_codes`).toHaveLength(0)
      const res = await t.request('/setup')
      expect(res.status).toBe(410)
      expect((await res.json()).code).toBe('setup_done')
      expect((await t.send('POST', '/auth/login', { email: 'admin@example.com', password: 'admin-password-1234' })).status).toBe(200)
    })

    test('the right code creates the owner of a new organisation, who can then sign in', async () => {
      const t = await service()
      const code = await t.start()
      expect((await t.request('/setup')).status).toBe(200)
      // Typed loosely: lower case, spaces for dashes.
      const res = await setUp(t, code.toLowerCase().replaceAll('-', ' '))
      expect(res.status).toBe(201)
      expect(res.headers.get('cache-control')).toBe('no-store')
      const pair = await res.json()
      expect(pair.user).toMatchObject({ email: OWNER.email, role: 'owner' })
      const me = await t.request('/auth/me', { headers: { authorization: `Bearer ${pair.accessToken}` } })
      expect(await me.json()).toMatchObject({ role: 'owner', organizationId: pair.user.organizationId })
      expect((await t.deps.accounts.organization(pair.user.organizationId))?.name).toBe(OWNER.organizationName)
      const login = await t.send('POST', '/auth/login', { email: OWNER.email, password: OWNER.password })
      expect(login.status).toBe(200)
      expect(t.logs.some((line) => line.msg === 'first owner created' && line.via === 'setup')).toBe(true)
    })

    test('a code works once: the second use is refused, setup answers 410, and every stored code is deleted', async () => {
      const t = await service()
      const code = await t.start()
      const other = await t.start()
      expect(await t.deps.db.sql`SELECT * FROM setup_codes`).toHaveLength(2)
      expect((await setUp(t, code)).status).toBe(201)
      for (const again of [code, other]) {
        const res = await setUp(t, again, { ...OWNER, email: 'second@example.com' })
        expect(res.status).toBe(410)
        expect((await res.json()).code).toBe('setup_done')
      }
      expect(await t.deps.db.sql`SELECT * FROM setup_codes`).toHaveLength(0)
      expect(await t.deps.accounts.countUsers()).toBe(1)
      expect((await t.request('/setup')).status).toBe(410)
      // Later starts make no code either.
      await expect(t.start()).rejects.toThrow('no setup code was logged')
    })

    test('a wrong code is refused with 403 and counted, and LOGIN_MAX_FAILURES of them lock the address out', async () => {
      const t = await service({ LOGIN_MAX_FAILURES: '3', LOGIN_LOCK_SECONDS: '600' })
      const code = await t.start()
      for (let i = 1; i <= 3; i++) {
        const res = await setUp(t, 'AAAA-BBBB-CCCC-DDDD')
        expect(res.status).toBe(403)
        const body = await res.json()
        expect(body.code).toBe('invalid_setup_code')
        expect(body.detail).toContain('wrong or was already used')
        expect((await t.deps.accounts.loginFailures('setup:unknown'))?.failures).toBe(i)
      }
      // Locked: even the right code waits now.
      const locked = await setUp(t, code)
      expect(locked.status).toBe(429)
      expect((await locked.json()).code).toBe('account_locked')
      expect(Number(locked.headers.get('retry-after'))).toBeGreaterThan(590)
      expect(await t.deps.accounts.countUsers()).toBe(0)
      // The lock kept the code unspent: once it is lifted, the code still works.
      await t.deps.accounts.clearLoginFailures('setup:unknown')
      expect((await setUp(t, code)).status).toBe(201)
    })

    test('an expired code is refused, and says so', async () => {
      const t = await service()
      const code = await t.start()
      await t.deps.db.sql`UPDATE setup_codes SET expires_at = ${Date.now() - 1}`
      const res = await setUp(t, code)
      expect(res.status).toBe(403)
      const body = await res.json()
      expect(body.code).toBe('invalid_setup_code')
      expect(body.detail).toContain('expired')
      expect(await t.deps.accounts.countUsers()).toBe(0)
      expect(await t.deps.db.sql`SELECT * FROM setup_codes`).toHaveLength(0)
      expect((await setUp(t, await t.start())).status).toBe(201)
    })

    test('two codes used at the same moment create one owner', async () => {
      const t = await service()
      const codes = [await t.start(), await t.start(), await t.start()]
      const answers = await Promise.all(codes.map((code, i) => setUp(t, code, { ...OWNER, email: `owner-${i}@example.com` })))
      expect(answers.map((res) => res.status).sort()).toEqual([201, 410, 410])
      expect(await t.deps.accounts.countUsers()).toBe(1)
      expect(await t.deps.db.sql`SELECT * FROM setup_codes`).toHaveLength(0)
    })

    test('a claim left by a process that died while creating the owner keeps setup closed only for a minute', async () => {
      const t = await service()
      const code = await t.start()
      await t.deps.db.sql`INSERT INTO setup_completion (id, claimed_at) VALUES (1, ${Date.now() - 5_000})`
      expect((await setUp(t, code)).status).toBe(410)
      await t.deps.db.sql`UPDATE setup_completion SET claimed_at = ${Date.now() - 61_000}`
      expect((await t.request('/setup')).status).toBe(200)
      expect((await setUp(t, await t.start())).status).toBe(201)
    })

    test('a user created another way (the admin command) closes setup and deletes the codes', async () => {
      const t = await service()
      const code = await t.start()
      await t.deps.access.createAccount({ email: 'cli@example.com', password: 'cli-password-1234', role: 'owner' })
      const res = await setUp(t, code)
      expect(res.status).toBe(410)
      expect(await t.deps.db.sql`SELECT * FROM setup_codes`).toHaveLength(0)
    })

    test('the body is checked against its schema: a short password or a missing field is 422', async () => {
      const t = await service()
      const code = await t.start()
      const short = await setUp(t, code, { ...OWNER, password: 'too-short' })
      expect(short.status).toBe(422)
      const { organizationName: _missing, ...rest } = OWNER
      expect((await t.send('POST', '/setup', { code, ...rest })).status).toBe(422)
      // Nothing was spent.
      expect((await setUp(t, code)).status).toBe(201)
    })
  })
