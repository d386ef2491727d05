/**
 * The first run as an operator meets it: the service started the way `npm start` starts it, with no
 * configuration, prints a setup code; Chromium opens the logged URL, fills the form, and is signed in from then
 * on: the page after setup and the playground find the session without the password being typed again.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { chromiumAvailable, launchChromium } from '../chromium.ts'
import type { Browser, Page } from 'playwright-core'
import { SETUP_LOG_MESSAGE } from '../../plugins/setup/service.ts'
import { tempDir } from '../helpers.ts'
import { startServiceProcess, type LogLine, type ServiceProcess } from '../scale-out/cluster.ts'
import { OWNER } from './support.ts'

const available = chromiumAvailable('browser test of the first run')

describe.skipIf(!available)('first run of a real process, in a browser', () => {
  const dataDir = tempDir('svc-first-run-')
  let service: ServiceProcess
  let codeLine: LogLine
  let browser: Browser
  let page: Page
  const cspViolations: string[] = []
  const pageErrors: string[] = []

  beforeAll(async () => {
    // Nothing but a data directory: no ADMIN_EMAIL, no secrets, SQLite.
    service = await startServiceProcess('first-run', { DATA_DIR: dataDir.path })
    codeLine = await service.waitForLog((line) => line.msg === SETUP_LOG_MESSAGE)
    browser = await launchChromium()
    page = await (await browser.newContext()).newPage()
    page.on('console', (message) => {
      if (/Content Security Policy/i.test(message.text())) cspViolations.push(message.text())
    })
    page.on('pageerror', (error) => pageErrors.push(error.message))
  })

  afterAll(async () => {
    await browser?.close()
    await service?.kill()
    dataDir.remove()
  })

  test('the start-up log prints one code, at warn level, with the URL to open', () => {
    const port = new URL(service.url).port
    expect(codeLine).toMatchObject({ level: 'warn', setupUrl: `http://localhost:${port}/setup` })
    expect(String(codeLine.setupCode)).toMatch(/^[0-9A-Z]{4}(-[0-9A-Z]{4}){3}$/)
    expect(service.logs.filter((line) => JSON.stringify(line).includes(String(codeLine.setupCode)))).toHaveLength(1)
  })

  test('the landing page leads to the setup', async () => {
    await page.goto(`${service.url}/`)
    await page.getByRole('link', { name: /Set up/ }).click()
    await page.waitForURL(/\/setup$/)
    expect(await page.locator('h1').textContent()).toBe('Create the first owner')
  })

  test('the form at the logged URL creates the owner, and the next page says this browser is signed in', async () => {
    await page.goto(String(codeLine.setupUrl))
    await page.getByLabel('Setup code').fill(String(codeLine.setupCode))
    await page.getByLabel('Email').fill(OWNER.email)
    await page.getByLabel('Password').fill(OWNER.password)
    await page.getByLabel('Organisation').fill(OWNER.organizationName)
    await page.getByRole('button', { name: 'Create the owner' }).click()
    await page.waitForURL(/\/setup\/done$/)
    expect(await page.locator('h1').textContent()).toBe('The first owner is created')

    const result = page.locator('#session-check[data-state]')
    await result.waitFor()
    expect(await result.getAttribute('data-state')).toBe('signed-in')
    expect(await result.textContent()).toContain(`This browser is signed in as ${OWNER.email}, owner of organisation`)
    expect(await page.locator('input[type="password"]').count()).toBe(0)
    await service.waitForLog((line) => line.msg === 'first owner created' && line.via === 'setup')
  })

  test('the playground then opens signed in: the password was typed once, at setup', async () => {
    await page.getByRole('link', { name: 'Playground' }).first().click()
    await page.waitForURL(/\/playground$/)
    await page.locator('body[data-session]').waitFor()
    expect(await page.locator('body').getAttribute('data-session')).toBe('signed-in')
    expect(await page.locator('#who').textContent()).toBe(`Signed in as ${OWNER.email}`)
    expect(await page.evaluate(() => (globalThis as unknown as { document: { cookie: string } }).document.cookie)).toBe('')
    await page.reload()
    await page.locator('body[data-session]').waitFor()
    expect(await page.locator('body').getAttribute('data-session')).toBe('signed-in')
  })

  test('afterwards /setup is closed, in the browser too', async () => {
    const response = await page.goto(`${service.url}/setup`)
    expect(response?.status()).toBe(410)
    expect(await page.locator('h1').textContent()).toBe('Setup is complete')
    const login = await service.request('/auth/login', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: OWNER.email, password: OWNER.password }),
    })
    expect(login.status).toBe(200)
  })

  test('no page broke its Content-Security-Policy or threw', () => {
    expect(cspViolations).toEqual([])
    expect(pageErrors).toEqual([])
  })

  test('a restart with the owner in place prints no code', async () => {
    expect(await service.stop()).toBe(0)
    service = await startServiceProcess('first-run-again', { DATA_DIR: dataDir.path })
    await Bun.sleep(300)
    expect(service.logs.some((line) => line.msg === SETUP_LOG_MESSAGE)).toBe(false)
    expect((await service.request('/setup')).status).toBe(410)
  })
})
