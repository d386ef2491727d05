/**
 * What reaches a real process through Bun's HTTP parser, started as `npm start` starts it: oversized heads and
 * bodies, short Host headers, and the headers every answer carries.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { ADMIN, tempDir } from '../helpers.ts'
import { startServiceProcess, type ServiceProcess } from '../scale-out/cluster.ts'

let service: ServiceProcess
const dataDir = tempDir('transport-')

beforeAll(async () => {
  service = await startServiceProcess('transport', {
    DATA_DIR: dataDir.path,
    ADMIN_EMAIL: ADMIN.email,
    ADMIN_PASSWORD: ADMIN.password,
    BODY_LIMIT_BYTES: '65536',
  })
})
afterAll(async () => {
  await service?.stop()
  dataDir.remove()
})

/** One raw HTTP/1.1 exchange, so the request line and headers are exactly what an attacker writes. */
async function raw(head: string, body = ''): Promise<{ status: number; headers: Record<string, string>; body: string }> {
  const { hostname, port } = new URL(service.url)
  let received = ''
  const closed = Promise.withResolvers<void>()
  const socket = await Bun.connect({
    hostname,
    port: Number(port),
    socket: {
      data(_s, chunk) {
        received += chunk.toString()
      },
      close() {
        closed.resolve()
      },
      error() {
        closed.resolve()
      },
    },
  })
  socket.write(head + body)
  await Promise.race([closed.promise, Bun.sleep(5000)])
  socket.end()
  const [statusLine = '', ...lines] = received.slice(0, received.indexOf('\r\n\r\n')).split('\r\n')
  const headers = Object.fromEntries(lines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]))
  return { status: Number(statusLine.split(' ')[1]), headers, body: received.slice(received.indexOf('\r\n\r\n') + 4) }
}

async function expectProblem(res: Response, status: number, code: string) {
  expect(res.status).toBe(status)
  expect(res.headers.get('content-type')).toBe('application/problem+json')
  const problem = await res.json()
  expect(problem.code).toBe(code)
  expect(problem.requestId).toBe(res.headers.get('x-request-id'))
  return problem
}

describe('requests Bun would refuse before the app sees them', () => {
  test('a 20 KB request target answers 414 problem+json naming the limit', async () => {
    const problem = await expectProblem(await service.request(`/api/agents/protocol?q=${'a'.repeat(20_000)}`), 414, 'uri_too_long')
    expect(problem.limitBytes).toBe(8192)
    // A guarded route still says only 401 to an anonymous caller.
    await expectProblem(await service.request(`/api/usage?q=${'a'.repeat(20_000)}`), 401, 'unauthenticated')
  })

  test('40 KB of headers answer 431 problem+json', async () => {
    const headers = Object.fromEntries(Array.from({ length: 10 }, (_, i) => [`x-filler-${i}`, 'b'.repeat(4000)]))
    await expectProblem(await service.request('/health', { headers }), 431, 'headers_too_large')
  })

  test('a body over the limit answers 413 problem+json on a public route and 401 on a guarded one', async () => {
    const body = JSON.stringify({ email: 'a@example.com', password: 'x'.repeat(200_000) })
    await expectProblem(
      await service.request('/auth/login', { method: 'POST', headers: { 'content-type': 'application/json' }, body }),
      413,
      'payload_too_large',
    )
    await expectProblem(await service.request('/api/chat', { method: 'POST', headers: { 'content-type': 'application/json' }, body }), 401, 'unauthenticated')
    // A declared length the client never sends is refused from the header alone.
    const declared = await raw(
      `POST /auth/login HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 10000000000\r\nConnection: close\r\n\r\n`,
      '{',
    )
    expect(declared.status).toBe(413)
    expect(declared.headers['content-type']).toBe('application/problem+json')
  })

  test('a JSON body nested 5,000 levels is refused as 400 naming the limit, anonymous or not', async () => {
    const body = `{"email":${'['.repeat(5000)}${']'.repeat(5000)}}`
    const problem = await expectProblem(
      await service.request('/auth/login', { method: 'POST', headers: { 'content-type': 'application/json' }, body }),
      400,
      'nesting_too_deep',
    )
    expect(problem.detail).toContain('64')
  })
})

describe('the Host header does not move the path', () => {
  for (const host of ['a', 'ab', 'abc', 'abcd', 'ab:1'])
    test(`with Host "${host}", /z/api/agents/protocol is not /api/agents/protocol`, async () => {
      const shifted = await raw(`GET /z/api/agents/protocol HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`)
      expect(shifted.status).toBe(404)
      expect(shifted.headers['content-type']).toBe('application/problem+json')
      const real = await raw(`GET /api/agents/protocol HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`)
      expect(real.status).toBe(200)
    })
})

describe('headers on every answer', () => {
  test('X-Content-Type-Options: nosniff on successes, errors, streams and pages', async () => {
    for (const [path, init] of [
      ['/health', {}],
      ['/nope', {}],
      ['/api/chat', { method: 'POST' }],
      ['/docs/errors', {}],
      ['/swagger', {}],
      ['/swagger/json', {}],
    ] as const) {
      const res = await service.request(path, init)
      expect({ path, nosniff: res.headers.get('x-content-type-options') }).toEqual({ path, nosniff: 'nosniff' })
      await res.arrayBuffer()
    }
  })

  test('answers that carry tokens are never stored: login, refresh and register', async () => {
    const login = await service.request('/auth/login', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(ADMIN) })
    expect(login.status).toBe(200)
    expect(login.headers.get('cache-control')).toBe('no-store')
    const { refreshToken } = await login.json()
    const refresh = await service.request('/auth/refresh', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ refreshToken }),
    })
    expect(refresh.status).toBe(200)
    expect(refresh.headers.get('cache-control')).toBe('no-store')
    const register = await service.request('/auth/register', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' })
    expect(register.headers.get('cache-control')).toBe('no-store')
  })

  test('the API explorer runs only scripts of its own origin and loads nothing from elsewhere', async () => {
    const page = await service.request('/swagger')
    const csp = page.headers.get('content-security-policy') ?? ''
    expect(csp).toContain("script-src 'self'")
    expect(csp).toContain("default-src 'none'")
    const html = await page.text()
    const sources = [...html.matchAll(/\b(?:src|href)="([^"]+)"/g)].map((m) => m[1]!)
    expect(sources.length).toBeGreaterThan(0)
    // Relative, or a data: URL (the page's empty icon), which loads nothing from anywhere.
    for (const source of sources)
      expect({ source, fetchesElsewhere: !source.startsWith('/') && !source.startsWith('data:') && /^[a-z]+:/i.test(source) }).toEqual({
        source,
        fetchesElsewhere: false,
      })
    // Every script is served from here: a small set-up one and the explorer itself.
    const sizes: number[] = []
    for (const source of sources.filter((s) => s.endsWith('.js'))) {
      const script = await service.request(source)
      expect(script.status).toBe(200)
      expect(script.headers.get('content-type')).toContain('javascript')
      sizes.push((await script.arrayBuffer()).byteLength)
    }
    expect(Math.max(...sizes)).toBeGreaterThan(100_000)
  })
})
