/**
 * The cookie session of the service's own pages (X-Session: cookie): the cookie's attributes, rotation, logout,
 * the refusals of requests from elsewhere, reuse detection, and the body-token mode left as it was.
 */
import { afterAll, describe, expect, test } from 'bun:test'
import { ADMIN, bearer, login, makeApp } from '../helpers.ts'

/** What the playground sends: the header, and the Origin and fetch metadata its browser adds. */
const OWN_PAGE = { 'x-session': 'cookie', origin: 'http://localhost:3000', 'sec-fetch-site': 'same-origin' }
const COOKIE = /^refresh_token=(rt_[A-Za-z0-9_-]+); Path=\/auth; Max-Age=(\d+); HttpOnly; SameSite=Strict$/
const CLEARED = 'refresh_token=; Path=/auth; Max-Age=0; HttpOnly; SameSite=Strict'

describe('the session cookie', async () => {
  const t = await makeApp({ ADMIN_EMAIL: ADMIN.email, ADMIN_PASSWORD: ADMIN.password })
  afterAll(() => t.close())

  const signIn = async (headers: Record<string, string> = OWN_PAGE) => t.send('POST', '/auth/login', { email: ADMIN.email, password: ADMIN.password }, headers)
  /** The refresh token a Set-Cookie carries. */
  const cookieOf = (response: Response) => COOKIE.exec(response.headers.get('set-cookie') ?? '')?.[1]
  const post = (path: string, cookie: string | undefined, headers: Record<string, string> = OWN_PAGE) =>
    t.request(path, { method: 'POST', headers: { ...headers, ...(cookie ? { cookie: `theme=dark; refresh_token=${cookie}` } : {}) } })
  const rows = async () => Number((await t.deps.db.sql`SELECT COUNT(*) AS n FROM refresh_tokens`)[0].n)

  test('sign-in sets it HttpOnly, SameSite=Strict, on /auth only, for the refresh lifetime, and leaves the refresh token out of the body', async () => {
    const res = await signIn()
    expect(res.status).toBe(200)
    expect(res.headers.get('cache-control')).toBe('no-store')
    const [, token, maxAge] = COOKIE.exec(res.headers.get('set-cookie')!)!
    expect(Number(maxAge)).toBe(30 * 24 * 3600) // REFRESH_TOKEN_TTL_SECONDS
    const body = await res.json()
    expect(body.refreshToken).toBeUndefined()
    expect(JSON.stringify(body)).not.toContain(token!)
    expect(body).toMatchObject({ tokenType: 'Bearer', user: { email: ADMIN.email, role: 'owner' } })
    expect((await t.request('/auth/me', { headers: bearer(body.accessToken) })).status).toBe(200)
  })

  test('refresh with no body token rotates the cookie: a new one is set and the old one is spent', async () => {
    const first = cookieOf(await signIn())!
    const res = await post('/auth/refresh', first)
    expect(res.status).toBe(200)
    const second = cookieOf(res)!
    expect(second).not.toBe(first)
    const body = await res.json()
    expect(body.refreshToken).toBeUndefined()
    expect((await t.request('/auth/me', { headers: bearer(body.accessToken) })).status).toBe(200)
    const third = await post('/auth/refresh', second)
    expect(third.status).toBe(200)
  })

  test('logout ends the session and clears the cookie; the access token and the cookie stop working', async () => {
    const signedIn = await signIn()
    const token = cookieOf(signedIn)!
    const { accessToken } = await signedIn.json()
    const out = await post('/auth/logout', token)
    expect(out.status).toBe(204)
    expect(out.headers.get('set-cookie')).toBe(CLEARED)
    expect((await t.request('/auth/me', { headers: bearer(accessToken) })).status).toBe(401)
    const again = await post('/auth/refresh', token)
    expect(again.status).toBe(401)
    expect(again.headers.get('set-cookie')).toBe(CLEARED)
  })

  test('refresh without a cookie is 401 and sets nothing; logout without one still clears', async () => {
    const res = await post('/auth/refresh', undefined)
    expect(res.status).toBe(401)
    expect((await res.json()).code).toBe('invalid_token')
    expect(res.headers.get('set-cookie')).toBeNull()
    const out = await post('/auth/logout', undefined)
    expect(out.status).toBe(204)
    expect(out.headers.get('set-cookie')).toBe(CLEARED)
  })

  test('a cookie value that is not a refresh token is no session', async () => {
    const res = await t.request('/auth/refresh', { method: 'POST', headers: { ...OWN_PAGE, cookie: 'refresh_token=%27%20OR%201=1' } })
    expect(res.status).toBe(401)
  })

  test('a stolen cookie value replayed after rotation ends the whole session: the rotated cookie dies too', async () => {
    const signedIn = await signIn()
    const stolen = cookieOf(signedIn)!
    const { accessToken } = await signedIn.json()
    const current = cookieOf(await post('/auth/refresh', stolen))!
    const replay = await post('/auth/refresh', stolen)
    expect(replay.status).toBe(401)
    expect((await replay.json()).detail).toContain('reuse')
    expect(replay.headers.get('set-cookie')).toBe(CLEARED)
    const victim = await post('/auth/refresh', current)
    expect(victim.status).toBe(401)
    expect((await victim.json()).detail).toBe('refresh token revoked')
    expect((await t.request('/auth/me', { headers: bearer(accessToken) })).status).toBe(401)
  })

  describe('requests from elsewhere never use it', () => {
    const cases: [string, Record<string, string>][] = [
      ['another origin', { ...OWN_PAGE, origin: 'https://attacker.example', 'sec-fetch-site': 'cross-site' }],
      ['another port of the same host (the same site)', { ...OWN_PAGE, origin: 'http://localhost:4000', 'sec-fetch-site': 'same-site' }],
      ['the right Origin but fetch metadata of another site', { ...OWN_PAGE, 'sec-fetch-site': 'same-site' }],
      ['no Origin', { 'x-session': 'cookie' }],
      ['a sandboxed page (Origin null)', { ...OWN_PAGE, origin: 'null' }],
    ]
    for (const [name, headers] of cases)
      test(`${name}: sign-in, refresh and logout are 403 forbidden, and the session is untouched`, async () => {
        const token = cookieOf(await signIn())!
        const before = await rows()
        const login = await signIn(headers)
        expect(login.status).toBe(403)
        expect(login.headers.get('set-cookie')).toBeNull()
        for (const path of ['/auth/refresh', '/auth/logout']) {
          const res = await post(path, token, headers)
          expect(res.status).toBe(403)
          const problem = await res.json()
          expect(problem.code).toBe('forbidden')
          expect(problem.detail).toStartWith('Cookie sessions are for pages this service serves')
          expect(res.headers.get('set-cookie')).toBeNull()
        }
        // Nothing was issued, and the cookie still rotates for its own page.
        expect(await rows()).toBe(before)
        expect((await post('/auth/refresh', token)).status).toBe(200)
      })

    test('without X-Session (a cross-site form post, a simple cross-origin fetch) the cookie is not read: 422, nothing rotated or ended', async () => {
      const token = cookieOf(await signIn())!
      const before = await rows()
      for (const path of ['/auth/refresh', '/auth/logout']) {
        const res = await post(path, token, { origin: 'https://attacker.example', 'content-type': 'text/plain' })
        expect(res.status).toBe(422)
        expect((await res.json()).errors).toEqual([{ field: 'refreshToken', message: 'is required' }])
        expect(res.headers.get('set-cookie')).toBeNull()
      }
      const formPost = await t.request('/auth/logout', {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: `refresh_token=${token}`, origin: 'https://attacker.example' },
        body: 'x=1',
      })
      // The auth routes read JSON only: a form is refused before anything else.
      expect(formPost.status).toBe(415)
      expect(await rows()).toBe(before)
      expect((await post('/auth/refresh', token)).status).toBe(200)
    })

    test('an X-Session other than cookie is refused', async () => {
      const res = await signIn({ ...OWN_PAGE, 'x-session': 'body' })
      expect(res.status).toBe(422)
      expect((await res.json()).errors).toEqual([{ field: 'x-session', message: 'must be cookie' }])
    })

    test('the page reached by another name than PUBLIC_BASE_URL (Origin and Host agree) is its own page', async () => {
      const res = await signIn({ ...OWN_PAGE, origin: 'http://127.0.0.1:8080', host: '127.0.0.1:8080' })
      expect(res.status).toBe(200)
      expect(cookieOf(res)).toBeDefined()
    })
  })

  describe('the body-token mode is unchanged', () => {
    test('sign-in answers the refresh token in the body and sets no cookie; refresh and logout take it from the body', async () => {
      const res = await signIn({})
      expect(res.headers.get('set-cookie')).toBeNull()
      const pair = await res.json()
      expect(pair.refreshToken).toStartWith('rt_')
      const rotated = await t.send('POST', '/auth/refresh', { refreshToken: pair.refreshToken })
      expect(rotated.status).toBe(200)
      expect(rotated.headers.get('set-cookie')).toBeNull()
      const next = await rotated.json()
      expect(next.refreshToken).toStartWith('rt_')
      const out = await t.send('POST', '/auth/logout', { refreshToken: next.refreshToken })
      expect(out.status).toBe(204)
      expect(out.headers.get('set-cookie')).toBeNull()
    })

    test('a body token wins over a cookie, from any origin, and the cookie is left alone', async () => {
      const cookie = cookieOf(await signIn())!
      const pair = await login(t, ADMIN.email, ADMIN.password)
      const res = await t.send(
        'POST',
        '/auth/refresh',
        { refreshToken: pair.refreshToken },
        { origin: 'https://app.example.com', cookie: `refresh_token=${cookie}` },
      )
      expect(res.status).toBe(200)
      expect(res.headers.get('set-cookie')).toBeNull()
      expect((await res.json()).refreshToken).toStartWith('rt_')
      expect((await post('/auth/refresh', cookie)).status).toBe(200)
    })

    test('no token at all is 422 naming refreshToken, as before', async () => {
      for (const path of ['/auth/refresh', '/auth/logout']) {
        const res = await t.send('POST', path, {})
        expect(res.status).toBe(422)
        expect((await res.json()).errors).toEqual([{ field: 'refreshToken', message: 'is required' }])
      }
    })
  })
})

describe('the session cookie of an https service', async () => {
  const t = await makeApp({ ADMIN_EMAIL: ADMIN.email, ADMIN_PASSWORD: ADMIN.password, PUBLIC_BASE_URL: 'https://ai.example.com' })
  afterAll(() => t.close())

  test('is Secure, and its pages are those of PUBLIC_BASE_URL', async () => {
    const headers = { 'x-session': 'cookie', origin: 'https://ai.example.com' }
    const res = await t.send('POST', '/auth/login', { email: ADMIN.email, password: ADMIN.password }, headers)
    expect(res.status).toBe(200)
    expect(res.headers.get('set-cookie')).toMatch(/; HttpOnly; SameSite=Strict; Secure$/)
    const plain = await t.send('POST', '/auth/login', { email: ADMIN.email, password: ADMIN.password }, { ...headers, origin: 'http://ai.example.com' })
    expect(plain.status).toBe(403)
  })
})
