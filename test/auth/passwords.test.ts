/**
 * Changing and resetting a password in-process, on SQLite and on PostgreSQL when DATABASE_URL is set: a change needs
 * the current password (a wrong one counts toward the sign-in lock) and ends every other session but the caller's;
 * a reset link from the operator command or the webhook works once, until it expires, and ends every session.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createPasswordResets } from '../../src/auth/password-reset.ts'
import { runCli } from '../../src/main/cli.ts'
import { startResetWebhook } from '../fakes/reset-webhook.ts'
import { UNLIMITED_BUDGETS, bearer, freshPostgres, login, makeApp, postgresUrl, type TestApp } from '../helpers.ts'

const pg = postgresUrl ? await freshPostgres() : undefined
const webhook = startResetWebhook()
const backends: { name: string; env: Record<string, string> }[] = [{ name: 'sqlite', env: {} }]
if (pg) backends.push({ name: 'postgres', env: { DATABASE_URL: pg.url } })
afterAll(async () => {
  await webhook.close()
  await pg?.drop()
})

const PASSWORD = 'a-long-enough-password'
const NEW_PASSWORD = 'a-brand-new-password-42'

for (const backend of backends)
  describe(`passwords (${backend.name})`, () => {
    let t: TestApp
    beforeAll(async () => {
      t = await makeApp({ ...UNLIMITED_BUDGETS, LOGIN_MAX_FAILURES: '3', PASSWORD_RESET_WEBHOOK_URL: webhook.url, ...backend.env })
    })
    afterAll(() => t.close())

    async function person() {
      const email = `p-${crypto.randomUUID().slice(0, 8)}@example.com`
      const user = await t.deps.access.createAccount({ email, password: PASSWORD, role: 'member' })
      return { user, email }
    }
    const me = (token: string) => t.request('/auth/me', { headers: bearer(token) })
    const refresh = (refreshToken: string) => t.send('POST', '/auth/refresh', { refreshToken })
    const change = (token: string, body: unknown, headers: Record<string, string> = {}) =>
      t.send('POST', '/auth/password', body, { ...bearer(token), ...headers })
    const problemOf = async (res: Response) => (await res.json()) as { code: string; detail: string; errors?: { field: string }[] }

    async function resetLink(email: string): Promise<string> {
      const lines: string[] = []
      expect(await runCli(['users', 'reset-password', '--email', email], t.deps, (line) => lines.push(line))).toBe(0)
      expect(lines[0]).toStartWith(`${t.config.publicBaseUrl}/reset-password?token=`)
      return new URL(lines[0]!).searchParams.get('token')!
    }

    test('anonymous calls are 401 with nothing about the schema; bad bodies 422 naming the field', async () => {
      const anonymous = await t.send('POST', '/auth/password', { nonsense: true })
      expect(anonymous.status).toBe(401)
      const body = await problemOf(anonymous)
      expect(body.code).toBe('unauthenticated')
      expect(JSON.stringify(body)).not.toMatch(/currentPassword|newPassword|nonsense/)

      const { email } = await person()
      const session = await login(t, email, PASSWORD)
      const short = await change(session.accessToken, { currentPassword: PASSWORD, newPassword: 'short' })
      expect(short.status).toBe(422)
      expect((await problemOf(short)).errors?.map((e) => e.field)).toEqual(['newPassword'])
      const missing = await change(session.accessToken, { newPassword: NEW_PASSWORD })
      expect((await problemOf(missing)).errors?.map((e) => e.field)).toEqual(['currentPassword'])
      const reset = await t.send('POST', '/auth/password/reset', { token: 'x' })
      expect(reset.status).toBe(422)
      expect((await problemOf(reset)).errors?.map((e) => e.field)).toEqual(['newPassword'])
    })

    test("a change ends every other session, its refresh and access tokens, but keeps the caller's", async () => {
      const { email } = await person()
      const mine = await login(t, email, PASSWORD)
      const other = await login(t, email, PASSWORD)
      expect((await me(other.accessToken)).status).toBe(200)
      expect((await change(mine.accessToken, { currentPassword: PASSWORD, newPassword: NEW_PASSWORD })).status).toBe(204)

      const refused = await me(other.accessToken)
      expect(refused.status).toBe(401)
      expect(await problemOf(refused)).toMatchObject({ code: 'invalid_token', detail: 'token revoked' })
      expect((await refresh(other.refreshToken)).status).toBe(401)

      expect((await me(mine.accessToken)).status).toBe(200)
      expect((await refresh(mine.refreshToken)).status).toBe(200)
      expect((await t.send('POST', '/auth/login', { email, password: PASSWORD })).status).toBe(401)
      await login(t, email, NEW_PASSWORD)
    })

    test('a wrong current password is 403 wrong_password and counts toward the sign-in lock', async () => {
      const { email } = await person()
      const session = await login(t, email, PASSWORD)
      for (let i = 0; i < 3; i++) {
        const res = await change(session.accessToken, { currentPassword: 'not-the-password', newPassword: NEW_PASSWORD })
        expect(res.status).toBe(403)
        expect((await problemOf(res)).code).toBe('wrong_password')
      }
      const locked = await change(session.accessToken, { currentPassword: PASSWORD, newPassword: NEW_PASSWORD })
      expect(locked.status).toBe(429)
      expect((await problemOf(locked)).code).toBe('account_locked')
      expect(locked.headers.get('retry-after')).toBeTruthy()
      // The same lock as sign-in's: the account cannot sign in either, even with the right password.
      const signIn = await t.send('POST', '/auth/login', { email, password: PASSWORD })
      expect(signIn.status).toBe(429)
    })

    test('a reset link from the operator command sets the password once and ends every session', async () => {
      const { email } = await person()
      const session = await login(t, email, PASSWORD)
      const token = await resetLink(email)

      const page = await t.request(`/reset-password?token=${token}`)
      expect(page.status).toBe(200)
      expect(page.headers.get('content-security-policy')).toContain("default-src 'none'")
      expect(page.headers.get('referrer-policy')).toBe('no-referrer')
      expect(await page.text()).toContain(`value="${token}"`)

      expect((await t.send('POST', '/auth/password/reset', { token, newPassword: NEW_PASSWORD })).status).toBe(204)
      expect((await me(session.accessToken)).status).toBe(401)
      expect((await refresh(session.refreshToken)).status).toBe(401)
      await login(t, email, NEW_PASSWORD)

      const again = await t.send('POST', '/auth/password/reset', { token, newPassword: 'yet-another-password' })
      expect(again.status).toBe(403)
      expect((await problemOf(again)).code).toBe('invalid_reset_token')
      await login(t, email, NEW_PASSWORD)
    })

    test('a reset link past its expiry, tampered with, or made before a password change is refused', async () => {
      const { user, email } = await person()
      const earlier = createPasswordResets({
        accounts: t.deps.accounts,
        access: t.deps.access,
        logger: t.deps.logger,
        secret: t.config.secrets.jwtSecret,
        publicBaseUrl: t.config.publicBaseUrl,
        ttlSeconds: t.config.passwordReset.ttlSeconds,
        now: () => Date.now() - t.config.passwordReset.ttlSeconds * 1000 - 1000,
      })
      const expired = earlier.linkFor((await t.deps.accounts.userById(user.id))!).token
      const res = await t.send('POST', '/auth/password/reset', { token: expired, newPassword: NEW_PASSWORD })
      expect(res.status).toBe(403)
      expect(await problemOf(res)).toMatchObject({ code: 'invalid_reset_token', detail: expect.stringContaining('expired') })

      const token = await resetLink(email)
      const [payload, mac] = token.split('.')
      const forged = `${Buffer.from(JSON.stringify([user.id, Date.now() + 1e9])).toString('base64url')}.${mac}`
      for (const bad of [forged, `${payload}.${'A'.repeat(43)}`, 'not-a-token'])
        expect((await t.send('POST', '/auth/password/reset', { token: bad, newPassword: NEW_PASSWORD })).status).toBe(403)

      const session = await login(t, email, PASSWORD)
      expect((await change(session.accessToken, { currentPassword: PASSWORD, newPassword: NEW_PASSWORD })).status).toBe(204)
      expect((await t.send('POST', '/auth/password/reset', { token, newPassword: 'yet-another-password' })).status).toBe(403)
      await login(t, email, NEW_PASSWORD)
    })

    test('the reset page posts a form and is answered with a page', async () => {
      const { email } = await person()
      const token = await resetLink(email)
      const form = (newPassword: string) =>
        t.request('/auth/password/reset', {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          body: new URLSearchParams({ token, newPassword }).toString(),
        })
      const done = await form(NEW_PASSWORD)
      expect(done.status).toBe(200)
      expect(done.headers.get('content-type')).toStartWith('text/html')
      expect(await done.text()).toContain('Password changed')
      const used = await form('yet-another-password')
      expect(used.status).toBe(403)
      expect(await used.text()).toContain('not valid')
    })

    test('forgot sends a working link through the webhook for a known email, nothing for an unknown one, and answers both alike', async () => {
      const { email } = await person()
      const unknown = await t.send('POST', '/auth/password/forgot', { email: 'nobody-here@example.com' })
      expect(unknown.status).toBe(202)
      expect(await webhook.next(300)).toBeUndefined()

      const known = await t.send('POST', '/auth/password/forgot', { email: email.toUpperCase() })
      expect(known.status).toBe(202)
      expect(await known.text()).toBe(await unknown.clone().text())
      const message = (await webhook.next())!
      expect(message).toMatchObject({ type: 'password_reset', email })
      const token = new URL(String(message.resetUrl)).searchParams.get('token')!
      // At most one a minute per account.
      expect((await t.send('POST', '/auth/password/forgot', { email })).status).toBe(202)
      expect(await webhook.next(300)).toBeUndefined()

      expect((await t.send('POST', '/auth/password/reset', { token, newPassword: NEW_PASSWORD })).status).toBe(204)
      await login(t, email, NEW_PASSWORD)
    })
  })

test('without PASSWORD_RESET_WEBHOOK_URL, forgot is 503 not_configured naming it', async () => {
  const t = await makeApp()
  try {
    const res = await t.send('POST', '/auth/password/forgot', { email: 'someone@example.com' })
    expect(res.status).toBe(503)
    expect(await res.json()).toMatchObject({ code: 'not_configured', detail: expect.stringContaining('PASSWORD_RESET_WEBHOOK_URL') })
  } finally {
    await t.close()
  }
})
