/**
 * The playground's session across reloads, in Chromium: signed in once with the password, the page finds its
 * session again after a reload (the refresh token in an HttpOnly cookie page script cannot read), two tabs
 * reloading at once keep it, signing out ends it; and a page on another origin of the same host (the same site,
 * so the browser sends it the SameSite=Strict cookie) cannot use it, even with its origin in CORS_ORIGINS.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { Browser, BrowserContext, Page } from 'playwright-core'
import { chromiumAvailable, launchChromium } from '../chromium.ts'
import { startFakeOpenAi, type FakeOpenAi } from '../fakes/openai.ts'
import { ADMIN, makeApp, type TestApp } from '../helpers.ts'

const available = chromiumAvailable('browser test of the playground session')

/** What the page's script can reach (the tests are type-checked without the DOM library). */
interface PageGlobals {
  document: { cookie: string }
  localStorage: { length: number }
  sessionStorage: { length: number }
}

/** What a page on another origin can get out of /auth/refresh with the browser's cookies. */
interface Attempt {
  name: string
  status?: number
  accessToken?: string
  error?: string
}

describe.skipIf(!available)('the playground session in a browser', () => {
  let t: TestApp
  let model: FakeOpenAi
  let browser: Browser
  let context: BrowserContext
  let page: Page
  let origin: string
  let elsewhere: ReturnType<typeof Bun.serve>
  const pageErrors: string[] = []

  beforeAll(async () => {
    model = startFakeOpenAi()
    // Another origin on the same host: a different port is a different origin, but the same site.
    elsewhere = Bun.serve({
      hostname: '127.0.0.1',
      port: 0,
      fetch: () => new Response('<!doctype html><title>elsewhere</title><p>another origin</p>', { headers: { 'content-type': 'text/html' } }),
    })
    t = await makeApp({
      ADMIN_EMAIL: ADMIN.email,
      ADMIN_PASSWORD: ADMIN.password,
      OPENAI_BASE_URL: model.baseUrl,
      CHAT_MODEL: 'fake-model',
      CHAT_SEARCH_AUGMENTATION: 'false',
      // Listed, so its preflights pass and the service's own check is what refuses it.
      CORS_ORIGINS: `http://127.0.0.1:${elsewhere.port}`,
    })
    t.app.listen({ hostname: '127.0.0.1', port: 0 })
    origin = `http://127.0.0.1:${t.app.server!.port}`
    browser = await launchChromium()
    context = await browser.newContext()
    page = await context.newPage()
    page.on('pageerror', (error) => pageErrors.push(error.message))
  })

  afterAll(async () => {
    await browser?.close()
    await t?.app.stop(true)
    await t?.close()
    await model?.close()
    elsewhere?.stop(true)
  })

  /** Loads (or reloads) the playground and waits until it knows whether it is signed in. */
  async function open(on: Page = page): Promise<'signed-in' | 'signed-out'> {
    await on.goto(`${origin}/playground`)
    await on.locator('body[data-session]').waitFor()
    return (await on.locator('body').getAttribute('data-session')) as 'signed-in' | 'signed-out'
  }

  const sessionCookie = async () => (await context.cookies(`${origin}/auth/refresh`)).find((c) => c.name === 'refresh_token')
  const refreshTokenRows = async () => Number((await t.deps.db.sql`SELECT COUNT(*) AS n FROM refresh_tokens`)[0].n)

  test('a first visit is signed out, and the password signs in', async () => {
    expect(await open()).toBe('signed-out')
    expect(await page.locator('#sign-in').isVisible()).toBe(true)
    await page.fill('#sign-in [name="email"]', ADMIN.email)
    await page.fill('#sign-in [name="password"]', ADMIN.password)
    await page.click('#sign-in button[type="submit"]')
    await page.locator('#workspace').waitFor()
    expect(await page.locator('#who').textContent()).toBe(`Signed in as ${ADMIN.email}`)
  })

  test('the session cookie is HttpOnly, SameSite=Strict and on /auth only: page script cannot read it, and nothing is stored', async () => {
    const cookie = await sessionCookie()
    expect(cookie).toMatchObject({ path: '/auth', httpOnly: true, sameSite: 'Strict', secure: false })
    expect(cookie!.value).toStartWith('rt_')
    const seen = await page.evaluate(() => {
      const window = globalThis as unknown as PageGlobals
      return { cookie: window.document.cookie, local: window.localStorage.length, session: window.sessionStorage.length }
    })
    expect(seen).toEqual({ cookie: '', local: 0, session: 0 })
    expect(await page.content()).not.toContain(cookie!.value)
  })

  test('after a reload the page is still signed in, with no password typed, and a chat request works', async () => {
    const before = (await sessionCookie())!.value
    expect(await open()).toBe('signed-in')
    expect(await page.locator('#who').textContent()).toBe(`Signed in as ${ADMIN.email}`)
    expect(await page.locator('#sign-in [name="password"]').inputValue()).toBe('')
    // The reload rotated the refresh token.
    expect((await sessionCookie())!.value).not.toBe(before)

    model.queue = [{ text: 'Bun ships a SQL client.' }]
    await page.fill('#chat [name="text"]', 'What does Bun ship for SQL?')
    await page.click('#chat button[type="submit"]')
    await page.locator('#chat .status[data-status="ready"]').waitFor()
    expect(await page.locator('#chat .message[data-role="assistant"] [data-part="text"]').last().textContent()).toBe('Bun ships a SQL client.')
  })

  test('two tabs reloading at the same moment both stay signed in (one refresh at a time), and so does the next reload', async () => {
    const second = await context.newPage()
    const states = await Promise.all([open(page), open(second)])
    expect(states).toEqual(['signed-in', 'signed-in'])
    await second.close()
    expect(await open()).toBe('signed-in')
  })

  test('a page on another origin of the same host cannot refresh, sign out or sign in with the cookie', async () => {
    const attacker = await context.newPage()
    await attacker.goto(`http://127.0.0.1:${elsewhere.port}/`)
    const rowsBefore = await refreshTokenRows()
    const cookieBefore = (await sessionCookie())!.value
    const attempts = await attacker.evaluate(async (service): Promise<Attempt[]> => {
      const attempt = async (name: string, path: string, init: RequestInit): Promise<Attempt> => {
        try {
          const response = await fetch(service + path, { method: 'POST', credentials: 'include', ...init })
          const text = await response.text()
          return { name, status: response.status, ...(text.includes('accessToken') ? { accessToken: text } : {}) }
        } catch (error) {
          return { name, error: String(error) }
        }
      }
      return [
        await attempt('refresh in cookie mode', '/auth/refresh', { headers: { 'x-session': 'cookie' } }),
        await attempt('refresh in cookie mode, response unread', '/auth/refresh', { headers: { 'x-session': 'cookie' }, mode: 'no-cors' }),
        await attempt('refresh without the header', '/auth/refresh', { headers: { 'content-type': 'text/plain' }, body: '{}' }),
        await attempt('logout in cookie mode', '/auth/logout', { headers: { 'x-session': 'cookie' } }),
        await attempt('logout without the header', '/auth/logout', { mode: 'no-cors' }),
        await attempt('refresh without credentials', '/auth/refresh', { credentials: 'omit', headers: { 'x-session': 'cookie' } }),
      ]
    }, origin)
    await attacker.close()
    for (const attempt of attempts) {
      expect(attempt.accessToken, attempt.name).toBeUndefined()
      // A credentialed answer is never shared (no Access-Control-Allow-Credentials); an opaque one has status 0.
      if (attempt.status !== undefined) expect([0, 401, 403], attempt.name).toContain(attempt.status)
    }
    expect(attempts.filter((a) => a.error !== undefined).length).toBeGreaterThanOrEqual(3)
    // Nothing was issued, rotated or ended: the cookie is the one the playground left, and still works there.
    expect(await refreshTokenRows()).toBe(rowsBefore)
    expect((await sessionCookie())!.value).toBe(cookieBefore)
    expect(await open()).toBe('signed-in')
  })

  test('signing out ends the session: the cookie is gone, and after a reload the page is signed out', async () => {
    await page.click('#sign-out')
    await page.locator('#sign-in').waitFor()
    expect(await sessionCookie()).toBeUndefined()
    expect(await open()).toBe('signed-out')
    expect(await page.locator('#workspace').isVisible()).toBe(false)
    expect(pageErrors).toEqual([])
  })
})
