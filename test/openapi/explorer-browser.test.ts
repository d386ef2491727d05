/**
 * The API explorer in Chromium, at /swagger and /swagger/: it lists the operations, shows none of its vendor's cloud
 * features (the "Ask AI" agent, "Generate MCP", "Deploy", "Share"), asks nothing of another origin, and breaks
 * none of its Content-Security-Policy (console errors and `securitypolicyviolation` events are both collected).
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { Browser, Page } from 'playwright-core'
import { chromiumAvailable, launchChromium } from '../chromium.ts'
import { makeApp, type TestApp } from '../helpers.ts'

const available = chromiumAvailable('browser test of the API explorer')

/** Runs before the page's own script: keeps every CSP violation the page reports. */
const RECORD_VIOLATIONS = `
  window.__violations = []
  document.addEventListener('securitypolicyviolation', (e) => window.__violations.push(e.violatedDirective + ' ' + e.blockedURI + ' ' + e.sourceFile + ':' + e.lineNumber + ':' + e.columnNumber + ' ' + e.sample))
`
/** What the explorer shows of its vendor's cloud when left to its defaults (the agent, MCP installs, developer tools). */
const VENDOR_FEATURES = ['Ask AI', 'Generate MCP', 'VS Code', 'Cursor', 'Developer Tools', 'Configure', 'Share', 'Deploy']

describe.skipIf(!available)('the API explorer in a browser', () => {
  let t: TestApp
  let browser: Browser
  let origin: string

  beforeAll(async () => {
    t = await makeApp()
    t.app.listen({ hostname: '127.0.0.1', port: 0 })
    origin = `http://127.0.0.1:${t.app.server!.port}`
    browser = await launchChromium()
  })

  afterAll(async () => {
    await browser?.close()
    await t?.app.stop(true)
    await t?.close()
  })

  /** Opens `path` in a new page and answers the page with what went wrong on it. */
  async function open(path: string) {
    const page: Page = await (await browser.newContext()).newPage()
    const problems: string[] = []
    const elsewhere: string[] = []
    page.on('console', (message) => {
      if (message.type() === 'error' || /Content.Security.Policy|Refused to/i.test(message.text())) problems.push(message.text())
    })
    page.on('pageerror', (error) => problems.push(error.message))
    page.on('request', (request) => {
      if (!request.url().startsWith(origin) && !request.url().startsWith('data:') && !request.url().startsWith('blob:')) elsewhere.push(request.url())
    })
    await page.addInitScript({ content: RECORD_VIOLATIONS })
    const response = await page.goto(`${origin}${path}`)
    expect(response!.status()).toBe(200)
    return { page, problems, elsewhere }
  }

  for (const path of ['/swagger', '/swagger/']) {
    test(`${path} lists the operations, offers no vendor cloud feature and keeps to its CSP`, async () => {
      const { page, problems, elsewhere } = await open(path)
      expect(new URL(page.url()).pathname).toBe('/swagger')
      // The document was found and read: its first group is open, and another opens on a click.
      await page.getByText('Ask the documentation assistant a question').first().waitFor({ timeout: 30_000 })
      await page.getByRole('button', { name: 'Open Group - auth' }).first().click()
      await page.getByText('Exchange email and password for an access token and a refresh token').first().waitFor()
      // The explorer keeps a connection open, so there is no network idle to wait for: a moment lets its lazy parts draw.
      await page.waitForTimeout(1500)
      const controls = (await page.locator('button, a, [role="button"]').allInnerTexts()).map((text) => text.trim())
      expect(controls.filter((text) => VENDOR_FEATURES.includes(text))).toEqual([])
      for (const name of VENDOR_FEATURES) expect(await page.getByRole('button', { name, exact: true }).count()).toBe(0)
      expect(await page.evaluate('window.__violations')).toEqual([])
      expect(problems).toEqual([])
      expect(elsewhere).toEqual([])
      await page.context().close()
    })
  }

  test('/swagger/ sends the browser to /swagger, keeping the query', async () => {
    const res = await fetch(`${origin}/swagger/?x=1`, { redirect: 'manual' })
    expect(res.status).toBe(308)
    expect(res.headers.get('location')).toBe('/swagger?x=1')
  })
})
