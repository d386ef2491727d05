/** CORS_ORIGINS over HTTP: the setting, the preflight on every route, and the headers of every answer. */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { loadConfig } from '../../src/main/config.ts'
import { ALLOWED_HEADERS, EXPOSED_HEADERS, PREFLIGHT_MAX_AGE_SECONDS } from '../../src/cors.ts'
import { OPENAPI_JSON_PATH } from '../../plugins/docs/index.ts'
import { ADMIN, bearer, login, makeApp, tempDir, type TestApp } from '../helpers.ts'

const APP = 'http://app.example.test:5173'
const ELSEWHERE = 'https://elsewhere.example.test'

const corsHeaders = (response: Response) => [...response.headers.keys()].filter((name) => name.startsWith('access-control-'))

const preflight = (t: TestApp, path: string, method: string, origin = APP) =>
  t.request(path, {
    method: 'OPTIONS',
    headers: { origin, 'access-control-request-method': method, 'access-control-request-headers': 'authorization, content-type, last-event-id' },
  })

describe('the CORS_ORIGINS setting', () => {
  const dir = tempDir()
  afterAll(() => dir.remove())
  const origins = (value: string) => loadConfig({ DATA_DIR: dir.path, CORS_ORIGINS: value }).corsOrigins

  test('takes origins as browsers send them in Origin, and is empty by default', () => {
    expect(loadConfig({ DATA_DIR: dir.path }).corsOrigins).toEqual([])
    expect(origins('https://App.Example.com/, http://127.0.0.1:5173,https://app.example.com:443')).toEqual([
      'https://app.example.com',
      'http://127.0.0.1:5173',
      'https://app.example.com',
    ])
    expect(origins('*')).toEqual(['*'])
  })

  test('refuses a path, a bare host, another scheme, or * beside origins, naming each entry', () => {
    const cases: [value: string, named: string][] = [
      ['https://app.example.com/chat', 'https://app.example.com/chat'],
      ['app.example.com', 'app.example.com'],
      ['ftp://app.example.com', 'ftp://app.example.com'],
      ['https://user@app.example.com', 'https://user@app.example.com'],
      ['*, https://app.example.com', '* alone'],
    ]
    for (const [value, named] of cases) expect(() => origins(value)).toThrow(new RegExp(`CORS_ORIGINS .*${named.replace(/[.*/]/g, '\\$&')}`))
  })
})

describe('with no origin listed', () => {
  let t: TestApp
  beforeAll(async () => {
    t = await makeApp({ ADMIN_EMAIL: ADMIN.email, ADMIN_PASSWORD: ADMIN.password })
  })
  afterAll(() => t.close())

  test('no answer carries a CORS header, and a preflight is an unrouted method', async () => {
    const options = await preflight(t, '/api/chat', 'POST')
    expect(options.status).toBe(405)
    expect(options.headers.get('allow')).toBe('POST')
    expect(corsHeaders(options)).toEqual([])
    const signedIn = await t.send('POST', '/auth/login', ADMIN, { origin: APP })
    expect(signedIn.status).toBe(200)
    expect(corsHeaders(signedIn)).toEqual([])
  })
})

describe('with origins listed', () => {
  let t: TestApp
  let token: string
  beforeAll(async () => {
    t = await makeApp({ CORS_ORIGINS: `${APP}, http://127.0.0.1:8080`, ADMIN_EMAIL: ADMIN.email, ADMIN_PASSWORD: ADMIN.password, RATE_LIMIT_BURST: '3' })
    token = (await login(t, ADMIN.email, ADMIN.password)).accessToken
  })
  afterAll(() => t.close())

  test('every route answers its preflight 204 before any guard, naming the origin and never allowing credentials', async () => {
    const routes = t.app.routes.filter((r) => !['OPTIONS', 'WS', 'ALL'].includes(r.method))
    expect(routes.length).toBeGreaterThan(30)
    for (const route of routes) {
      const path = route.path.replace(/:[^/]+/g, 'x').replace('*', 'x')
      const response = await preflight(t, path, route.method)
      const seen = {
        route: `${route.method} ${route.path}`,
        status: response.status,
        origin: response.headers.get('access-control-allow-origin'),
        methods: response.headers.get('access-control-allow-methods')?.split(', ').includes(route.method),
        headers: response.headers.get('access-control-allow-headers'),
        credentials: response.headers.get('access-control-allow-credentials'),
      }
      expect(seen).toEqual({ route: seen.route, status: 204, origin: APP, methods: true, headers: ALLOWED_HEADERS, credentials: null })
    }
  })

  test('a preflight is cached for the max age, and its answer varies with Origin', async () => {
    const response = await preflight(t, '/api/chat/x/stream', 'GET')
    expect(response.headers.get('access-control-max-age')).toBe(String(PREFLIGHT_MAX_AGE_SECONDS))
    expect(response.headers.get('vary')).toBe('Origin')
    expect(response.headers.get('x-request-id')).toBeTruthy()
  })

  test('answers and problem answers alike name the origin and expose the headers clients read', async () => {
    const answers = [
      await t.send('POST', '/auth/login', ADMIN, { origin: APP }),
      await t.request('/api/chats', { headers: { origin: APP } }),
      await t.send('POST', '/auth/login', {}, { origin: APP }),
      await t.request('/no-such-route', { headers: { origin: APP } }),
      await t.request('/api/chat', { method: 'PUT', headers: { origin: APP } }),
    ]
    expect(answers.map((r) => r.status)).toEqual([200, 401, 422, 404, 405])
    for (const response of answers) {
      expect(response.headers.get('access-control-allow-origin')).toBe(APP)
      expect(response.headers.get('access-control-expose-headers')!.split(', ')).toEqual([...EXPOSED_HEADERS])
      expect(response.headers.get('access-control-allow-credentials')).toBeNull()
    }
    expect(answers[1]!.headers.get('www-authenticate')).toStartWith('Bearer')
  })

  test('a refusal for too many requests is readable from the page, with its Retry-After and RateLimit headers exposed', async () => {
    let refused: Response | undefined
    for (let i = 0; i < 10 && !refused; i++) {
      const response = await t.request('/api/chats', { headers: { origin: 'http://127.0.0.1:8080', ...bearer(token) } })
      if (response.status === 429) refused = response
    }
    expect(refused).toBeDefined()
    expect(refused!.headers.get('access-control-allow-origin')).toBe('http://127.0.0.1:8080')
    const exposed = refused!.headers.get('access-control-expose-headers')!.split(', ')
    for (const name of ['retry-after', 'ratelimit', 'ratelimit-policy']) {
      expect(refused!.headers.get(name)).toBeTruthy()
      expect(exposed).toContain(name)
    }
  })

  test('a page on an origin not listed gets no Access-Control-Allow-Origin, so its browser keeps the answer from it', async () => {
    const options = await preflight(t, '/api/chat', 'POST', ELSEWHERE)
    expect(options.headers.get('access-control-allow-origin')).toBeNull()
    const signedIn = await t.send('POST', '/auth/login', ADMIN, { origin: ELSEWHERE })
    expect(signedIn.headers.get('access-control-allow-origin')).toBeNull()
    expect(signedIn.headers.get('vary')).toBe('Origin')
    // A look-alike is another origin.
    const lookalike = await t.send('POST', '/auth/login', ADMIN, { origin: 'http://app.example.test:5174' })
    expect(lookalike.headers.get('access-control-allow-origin')).toBeNull()
  })

  test('the API reference documents no OPTIONS operation: preflights are answered before routing', async () => {
    const document = await (await t.request(OPENAPI_JSON_PATH)).json()
    const methods = Object.values<Record<string, unknown>>(document.paths).flatMap((operations) => Object.keys(operations))
    expect(methods.length).toBeGreaterThan(30)
    expect(methods).not.toContain('options')
  })

  test('an unknown path with an unrouted method is still 404, not 405 for the preflight route', async () => {
    const response = await t.request('/no-such-route', { method: 'DELETE', headers: { origin: APP } })
    expect(response.status).toBe(404)
    const known = await t.request('/api/chat', { method: 'DELETE' })
    expect(known.headers.get('allow')).toBe('POST')
  })
})

describe('with * listed', () => {
  let t: TestApp
  beforeAll(async () => {
    t = await makeApp({ CORS_ORIGINS: '*' })
  })
  afterAll(() => t.close())

  test('any origin may read, still without credentials', async () => {
    const response = await t.request('/health', { headers: { origin: ELSEWHERE } })
    expect(response.headers.get('access-control-allow-origin')).toBe(ELSEWHERE)
    expect(response.headers.get('access-control-allow-credentials')).toBeNull()
  })
})
