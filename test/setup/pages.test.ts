/** The landing page and the setup pages as a browser and an API client see them (no browser here). */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createHash } from 'node:crypto'
import { OPENAPI_JSON_PATH } from '../../plugins/docs/index.ts'
import { prefersHtml } from '../../plugins/setup/index.ts'
import { OWNER, firstRunApp, form, type FirstRun } from './support.ts'

const BROWSER_ACCEPT = 'text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8'

/** The page's inline styles and scripts must be exactly those its Content-Security-Policy names by hash. */
function expectOnlyHashedInlineCode(page: string, csp: string) {
  const hash = (text: string) => `'sha256-${createHash('sha256').update(text).digest('base64')}'`
  const directive = (name: string) =>
    csp
      .split(';')
      .map((d) => d.trim())
      .find((d) => d.startsWith(`${name} `)) ?? ''
  expect(csp).toContain("default-src 'none'")
  expect(csp).toContain("form-action 'self'")
  expect(csp).toContain("frame-ancestors 'none'")
  expect(csp).not.toContain('unsafe-inline')
  for (const [tag, name] of [
    ['style', 'style-src'],
    ['script', 'script-src'],
  ] as const) {
    const blocks = [...page.matchAll(new RegExp(`<${tag}>([\\s\\S]*?)</${tag}>`, 'g'))].map((m) => m[1]!)
    for (const block of blocks) expect(directive(name)).toContain(hash(block))
    if (blocks.length === 0) expect(directive(name)).toBe('')
  }
  expect(page).not.toMatch(/<(script|link|img)[^>]+(src|href)="(https?:)?\/\//)
  expect(page).not.toMatch(/ on[a-z]+="/)
}

describe('while no user exists', () => {
  let t: FirstRun
  let code: string
  beforeAll(async () => {
    t = await firstRunApp()
    code = await t.start()
  })
  afterAll(() => t.close())

  test('GET / answers JSON links for API clients, the setup among them', async () => {
    for (const accept of [undefined, 'application/json', '*/*', 'application/json, text/html;q=0.5']) {
      const res = await t.request('/', { headers: accept ? { accept } : {} })
      expect(res.status).toBe(200)
      expect(res.headers.get('content-type')).toStartWith('application/json')
      expect(res.headers.get('vary')).toBe('accept')
      const body = await res.json()
      expect(body).toMatchObject({ setup: { open: true }, links: { docs: '/docs', explorer: '/swagger', playground: '/playground', setup: '/setup' } })
    }
  })

  test('GET / in a browser is a landing page linking the docs, the explorer, the playground and the setup', async () => {
    const res = await t.request('/', { headers: { accept: BROWSER_ACCEPT } })
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8')
    const page = await res.text()
    for (const href of ['/docs', '/swagger', '/playground', '/setup', '/swagger/json']) expect(page).toContain(`href="${href}"`)
    expect(page).toContain('First run')
    expectOnlyHashedInlineCode(page, res.headers.get('content-security-policy')!)
  })

  test('GET /setup is a form that posts to /setup without script', async () => {
    const res = await t.request('/setup', { headers: { accept: BROWSER_ACCEPT } })
    expect(res.status).toBe(200)
    expect(res.headers.get('cache-control')).toBe('no-store')
    const page = await res.text()
    expect(page).toContain('<form method="post" action="/setup">')
    for (const field of ['code', 'email', 'password', 'organizationName']) expect(page).toContain(`name="${field}"`)
    expect(page).toContain('minlength="12"')
    expect(page).not.toContain('<script')
    expectOnlyHashedInlineCode(page, res.headers.get('content-security-policy')!)
  })

  test('/setup/done sends people back to the form while setup is open', async () => {
    const res = await t.request('/setup/done')
    expect(res.status).toBe(303)
    expect(res.headers.get('location')).toBe('/setup')
  })

  test('only routes that declare it take a form body: /setup does, /auth/login does not', async () => {
    const login = await t.request('/auth/login', form({ email: OWNER.email, password: OWNER.password }))
    expect(login.status).toBe(415)
    expect((await login.json()).detail).toBe('Content-Type must be application/json, got "application/x-www-form-urlencoded"')
    const text = await t.request('/setup', { method: 'POST', headers: { 'content-type': 'text/plain' }, body: 'code=x' })
    expect(text.status).toBe(415)
    expect((await text.json()).detail).toContain('application/json or application/x-www-form-urlencoded')
  })

  test('a form with a wrong code gets the form again, with the error, the email and the organisation kept', async () => {
    const res = await t.request('/setup', form({ code: 'WXYZ-WXYZ-WXYZ-WXYZ', ...OWNER }))
    expect(res.status).toBe(403)
    expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8')
    const page = await res.text()
    expect(page).toContain('<p class="error" role="alert">The setup code is wrong or was already used')
    expect(page).toContain(`value="${OWNER.email}"`)
    expect(page).toContain(`value="${OWNER.organizationName}"`)
    expect(page).not.toContain(OWNER.password)
    expect((await t.deps.accounts.loginFailures('setup:unknown'))?.failures).toBe(1)
  })

  test('the OpenAPI document lists both bodies POST /setup takes and every status it answers', async () => {
    const doc = await (await t.request(OPENAPI_JSON_PATH)).json()
    const operation = doc.paths['/setup'].post
    expect(Object.keys(operation.requestBody.content).sort()).toEqual(['application/json', 'application/x-www-form-urlencoded'])
    expect(Object.keys(operation.responses).sort()).toEqual(['201', '303', '400', '403', '409', '410', '413', '414', '415', '422', '429', '431'])
    expect(doc.paths['/'].get.responses['200']).toBeDefined()
  })

  test('the right code in the form creates the owner and leads to the page that says what to do next', async () => {
    const res = await t.request('/setup', form({ code, ...OWNER }))
    expect(res.status).toBe(303)
    expect(res.headers.get('location')).toBe('/setup/done')
    expect(await t.deps.accounts.countUsers()).toBe(1)
    // A form that does not show it comes from the setup page itself (no Origin here) gets no session cookie.
    expect(res.headers.get('set-cookie')).toBeNull()
    expect(await t.deps.db.sql`SELECT * FROM refresh_tokens`).toHaveLength(0)
    const done = await t.request('/setup/done', { headers: { accept: BROWSER_ACCEPT } })
    expect(done.status).toBe(200)
    const page = await done.text()
    expect(page).toContain('The first owner is created')
    expect(page).toContain('href="/playground"')
    expect(page).toContain('<p id="session-check" role="status" hidden>')
    expect(page).not.toContain('type="password"')
    const csp = done.headers.get('content-security-policy')!
    expect(csp).toContain("connect-src 'self'")
    expectOnlyHashedInlineCode(page, csp)
  })
})

describe('once the first owner exists', () => {
  let t: FirstRun
  beforeAll(async () => {
    t = await firstRunApp({ ADMIN_EMAIL: OWNER.email, ADMIN_PASSWORD: OWNER.password })
  })
  afterAll(() => t.close())

  test('GET / no longer offers the setup', async () => {
    const body = await (await t.request('/', { headers: { accept: 'application/json' } })).json()
    expect(body.setup).toEqual({ open: false })
    expect(body.links.setup).toBeUndefined()
    const page = await (await t.request('/', { headers: { accept: BROWSER_ACCEPT } })).text()
    expect(page).not.toContain('href="/setup"')
    expect(page).toContain('POST /auth/login')
  })

  test('GET /setup is 410: a page for browsers, setup_done for API clients', async () => {
    const browser = await t.request('/setup', { headers: { accept: BROWSER_ACCEPT } })
    expect(browser.status).toBe(410)
    expect(await browser.text()).toContain('Setup is complete')
    const api = await t.request('/setup')
    expect(api.status).toBe(410)
    expect(api.headers.get('content-type')).toBe('application/problem+json')
    expect((await api.json()).code).toBe('setup_done')
  })

  test('a form posted to /setup gets the 410 page', async () => {
    const res = await t.request('/setup', form({ code: 'AAAA-AAAA-AAAA-AAAA', ...OWNER, email: 'late@example.com' }))
    expect(res.status).toBe(410)
    expect(await res.text()).toContain('Setup is complete')
  })
})

test('a browser Accept header prefers HTML; API clients and wildcards get JSON', () => {
  expect(prefersHtml(BROWSER_ACCEPT)).toBe(true)
  expect(prefersHtml('text/html')).toBe(true)
  expect(prefersHtml(null)).toBe(false)
  expect(prefersHtml('*/*')).toBe(false)
  expect(prefersHtml('application/json')).toBe(false)
  expect(prefersHtml('application/json, text/html;q=0.5')).toBe(false)
  expect(prefersHtml('text/html;q=0')).toBe(false)
})
