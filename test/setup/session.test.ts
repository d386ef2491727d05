/** The setup page's form signs its browser in: the first owner's session cookie comes with the redirect. */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { OWNER, firstRunApp, form, type FirstRun } from './support.ts'

const OWN_PAGE = { origin: 'http://localhost:3000', 'sec-fetch-site': 'same-origin' }

const withHeaders = (init: RequestInit, headers: Record<string, string>): RequestInit => ({
  ...init,
  headers: { ...(init.headers as Record<string, string>), ...headers },
})

describe('the setup form and the session cookie', () => {
  let t: FirstRun
  let code: string
  beforeAll(async () => {
    t = await firstRunApp()
    code = await t.start()
  })
  afterAll(() => t.close())

  test("a wrong code from the setup page's own form sets no cookie", async () => {
    const wrong = await t.request('/setup', withHeaders(form({ code: 'AAAA-AAAA-AAAA-AAAA', ...OWNER }), OWN_PAGE))
    expect(wrong.status).toBe(403)
    expect(wrong.headers.get('set-cookie')).toBeNull()
    expect(await t.deps.db.sql`SELECT * FROM refresh_tokens`).toHaveLength(0)
  })

  test("the setup page's own form creates the owner and sets the session cookie on the redirect", async () => {
    const res = await t.request('/setup', withHeaders(form({ code, ...OWNER }), OWN_PAGE))
    expect(res.status).toBe(303)
    expect(res.headers.get('location')).toBe('/setup/done')
    expect(res.headers.get('cache-control')).toBe('no-store')
    const cookie = res.headers.get('set-cookie')!
    expect(cookie).toMatch(/^refresh_token=rt_[A-Za-z0-9_-]+; Path=\/auth; Max-Age=2592000; HttpOnly; SameSite=Strict$/)

    // The cookie is the owner's session: the page after setup (and the playground) refresh with it.
    const refreshed = await t.request('/auth/refresh', { method: 'POST', headers: { ...OWN_PAGE, 'x-session': 'cookie', cookie: cookie.split(';')[0]! } })
    expect(refreshed.status).toBe(200)
    const tokens = await refreshed.json()
    expect(tokens.user).toMatchObject({ email: OWNER.email, role: 'owner' })
    expect(tokens.refreshToken).toBeUndefined()
  })
})

describe('a setup form from another site', () => {
  let t: FirstRun
  afterAll(() => t.close())

  test('creates the owner (the code was right) but sets no cookie', async () => {
    t = await firstRunApp()
    const code = await t.start()
    const res = await t.request('/setup', withHeaders(form({ code, ...OWNER }), { origin: 'https://elsewhere.example', 'sec-fetch-site': 'cross-site' }))
    expect(res.status).toBe(303)
    expect(res.headers.get('set-cookie')).toBeNull()
    expect(await t.deps.db.sql`SELECT * FROM refresh_tokens`).toHaveLength(0)
  })
})
