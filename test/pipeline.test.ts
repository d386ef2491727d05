import { describe, expect, test } from 'bun:test'
import { Elysia, t, ValidationError } from 'elysia'
import { AppError } from '../src/errors.ts'
import { memoryLogger } from '../src/log.ts'
import { RouteIndex, clientAddress, requestMeta, requestPipeline } from '../src/request-pipeline.ts'
import { BASE } from './helpers.ts'

const LIMIT = 2048

function buildApp() {
  const logger = memoryLogger()
  const routeIndex = new RouteIndex()
  const app = new Elysia({ normalize: false })
    .use(requestPipeline({ logger, bodyLimitBytes: LIMIT, routeIndex }))
    .post('/echo', ({ body }) => body, {
      body: t.Object(
        { name: t.String({ minLength: 1 }), count: t.Integer({ minimum: 0 }), tags: t.Optional(t.Array(t.String())) },
        { additionalProperties: false },
      ),
    })
    .get('/boom', () => {
      throw new Error('secret internals at /srv/app.ts:12')
    })
    .get('/unmappable', () => {
      // A validation failure whose description itself overflows the stack, as deeply nested values once did.
      throw Object.create(ValidationError.prototype, {
        type: { value: 'body' },
        all: {
          get() {
            throw new RangeError('Maximum call stack size exceeded.')
          },
        },
      })
    })
    .get('/teapot', () => {
      throw new AppError('conflict', 'already exists', { extensions: { existing: 'abc' } })
    })
  routeIndex.load(app.routes)
  return { app, logger }
}

const post = (app: ReturnType<typeof buildApp>['app'], body: BodyInit | null, headers: Record<string, string> = { 'content-type': 'application/json' }) =>
  app.handle(new Request(`${BASE}/echo`, { method: 'POST', headers, body }))

async function problem(res: Response) {
  expect(res.headers.get('content-type')).toBe('application/problem+json')
  const body = await res.json()
  expect(body.requestId).toBe(res.headers.get('x-request-id'))
  expect(body.status).toBe(res.status)
  return body
}

describe('request pipeline', () => {
  const { app, logger } = buildApp()

  test('a valid body passes through unchanged', async () => {
    const res = await post(app, JSON.stringify({ name: 'a', count: 2 }))
    expect(res.status).toBe(200)
    expect(await res.json()).toEqual({ name: 'a', count: 2 })
  })

  test('malformed JSON is 400 invalid_json', async () => {
    const res = await post(app, '{"name": "a",')
    expect(res.status).toBe(400)
    const body = await problem(res)
    expect(body.code).toBe('invalid_json')
    expect(body.errors[0].field).toBe('body')
  })

  test('an empty JSON body is 400 naming the body', async () => {
    const res = await post(app, '')
    expect(res.status).toBe(400)
    expect((await problem(res)).code).toBe('invalid_json')
  })

  test('a wrong content type is 415', async () => {
    const res = await post(app, 'name=a', { 'content-type': 'application/x-www-form-urlencoded' })
    expect(res.status).toBe(415)
    const body = await problem(res)
    expect(body.code).toBe('unsupported_media_type')
    expect(body.detail).toContain('application/x-www-form-urlencoded')
  })

  test('a body over the limit is 413, with or without Content-Length', async () => {
    const big = JSON.stringify({ name: 'x'.repeat(LIMIT), count: 1 })
    const declared = await post(app, big)
    expect(declared.status).toBe(413)
    expect((await problem(declared)).limitBytes).toBe(LIMIT)

    const chunked = new ReadableStream({
      start(c) {
        c.enqueue(new TextEncoder().encode(big))
        c.close()
      },
    })
    const streamed = await post(app, chunked)
    expect(streamed.status).toBe(413)
  })

  test('a wrong type is 422 naming the field', async () => {
    const res = await post(app, JSON.stringify({ name: 'a', count: 'three' }))
    expect(res.status).toBe(422)
    const body = await problem(res)
    expect(body.code).toBe('validation_failed')
    expect(body.errors).toContainEqual({ field: 'count', message: expect.stringContaining('integer') })
  })

  test('a missing field is 422 naming it', async () => {
    const res = await post(app, JSON.stringify({ count: 1 }))
    expect(res.status).toBe(422)
    const body = await problem(res)
    expect(body.errors).toContainEqual({ field: 'name', message: 'is required' })
  })

  test('an unknown field is rejected by name', async () => {
    const res = await post(app, JSON.stringify({ name: 'a', count: 1, cuont: 2 }))
    expect(res.status).toBe(422)
    const body = await problem(res)
    expect(body.errors[0].field).toBe('cuont')
    expect(body.errors[0].message).toContain('unknown field')
  })

  test('a nested wrong type names the nested path', async () => {
    const res = await post(app, JSON.stringify({ name: 'a', count: 1, tags: ['ok', 5] }))
    expect(res.status).toBe(422)
    expect((await problem(res)).errors[0].field).toBe('tags.1')
  })

  test('hostile strings are data, echoed back safely as JSON', async () => {
    const name = '"><script>alert(1)</script>\u0000\r\nX-Injected: yes\'; DROP TABLE users; --'
    const res = await post(app, JSON.stringify({ name, count: 0 }))
    expect(res.status).toBe(200)
    expect(res.headers.get('x-injected')).toBeNull()
    expect((await res.json()).name).toBe(name)
  })

  test('unknown routes are 404 and wrong methods are 405 with Allow', async () => {
    const missing = await app.handle(new Request(`${BASE}/nope`))
    expect(missing.status).toBe(404)
    expect((await problem(missing)).code).toBe('not_found')

    const wrong = await app.handle(new Request(`${BASE}/echo`, { method: 'DELETE' }))
    expect(wrong.status).toBe(405)
    expect(wrong.headers.get('allow')).toBe('POST')
    expect((await problem(wrong)).code).toBe('method_not_allowed')
  })

  test('an unexpected error is a generic 500, logged with the request id, with no internals', async () => {
    const res = await app.handle(new Request(`${BASE}/boom`, { headers: { 'x-request-id': 'trace-123' } }))
    expect(res.status).toBe(500)
    const text = await res.text()
    expect(text).not.toContain('secret internals')
    expect(text).not.toContain('.ts')
    expect(JSON.parse(text)).toMatchObject({ code: 'internal_error', requestId: 'trace-123' })
    const logged = logger.lines.find((l) => l.msg === 'unhandled error')
    expect(logged).toMatchObject({ requestId: 'trace-123', level: 'error' })
  })

  test('when describing an error throws too, the answer is still problem+json internal_error, logged once', async () => {
    const res = await app.handle(new Request(`${BASE}/unmappable`, { headers: { 'x-request-id': 'trace-456' } }))
    expect(res.status).toBe(500)
    expect(res.headers.get('content-type')).toBe('application/problem+json')
    expect(await res.json()).toMatchObject({ code: 'internal_error', requestId: 'trace-456' })
    expect(logger.lines.filter((l) => l.requestId === 'trace-456' && l.level === 'error')).toHaveLength(1)
  })

  test('JSON nested deeper than 64 levels is 400 nesting_too_deep; 64 levels are read', async () => {
    const deep = await post(app, `{"name":${'['.repeat(65)}${']'.repeat(65)}}`)
    expect(deep.status).toBe(400)
    expect(await problem(deep)).toMatchObject({ code: 'nesting_too_deep', maxDepth: 64 })
    // Brackets inside strings are text, not nesting.
    const ok = await post(app, JSON.stringify({ name: `${'['.repeat(500)}{`, count: 1, tags: ['}'.repeat(100)] }))
    expect(ok.status).toBe(200)
    const atLimit = await post(app, `{"name":"a","count":1,"tags":${'['.repeat(63)}${']'.repeat(63)}}`)
    expect(atLimit.status).toBe(422)
  })

  test('a wrong-typed field that shadows toString is 422 naming it, not a crash', async () => {
    for (const body of ['{"name":{"toString":[]},"count":1}', '{"name":{"valueOf":1,"toString":"x"},"count":1}', '{"name":{"to\\u0053tring":[]},"count":1}']) {
      const res = await post(app, body)
      expect(res.status).toBe(422)
      expect((await problem(res)).errors[0].field).toBe('name')
    }
    // The values themselves are unchanged: they serialise as they were sent.
    const echoed = await post(app, '{"name":"a","count":1,"tags":["toString"]}')
    expect(await echoed.json()).toEqual({ name: 'a', count: 1, tags: ['toString'] })
  })

  test('domain errors keep their code, status and extensions', async () => {
    const res = await app.handle(new Request(`${BASE}/teapot`))
    expect(res.status).toBe(409)
    expect(await problem(res)).toMatchObject({ code: 'conflict', detail: 'already exists', existing: 'abc' })
  })

  test('a hostile request id is replaced, a sane one is echoed', async () => {
    const hostile = await app.handle(new Request(`${BASE}/nope`, { headers: { 'x-request-id': 'a b<script>' } }))
    expect(hostile.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/)
    const sane = await app.handle(new Request(`${BASE}/nope`, { headers: { 'x-request-id': 'req-42' } }))
    expect(sane.headers.get('x-request-id')).toBe('req-42')
  })

  test('every request is logged once with id, route, status and duration', async () => {
    await post(app, JSON.stringify({ name: 'a', count: 1 }), { 'content-type': 'application/json', 'x-request-id': 'log-once' })
    await Bun.sleep(5)
    const lines = logger.lines.filter((l) => l.msg === 'request' && l.requestId === 'log-once')
    expect(lines).toHaveLength(1)
    expect(lines[0]).toMatchObject({ method: 'POST', route: '/echo', path: '/echo', status: 200 })
    expect(typeof lines[0]!.durationMs).toBe('number')
  })
})

describe('client address', () => {
  test('X-Forwarded-For is ignored unless the peer is a trusted proxy', () => {
    expect(clientAddress('203.0.113.9', '1.2.3.4', [])).toBe('203.0.113.9')
    expect(clientAddress('203.0.113.9', '1.2.3.4', ['10.0.0.1'])).toBe('203.0.113.9')
  })

  test('through a trusted proxy, the right-most untrusted hop is the client', () => {
    expect(clientAddress('10.0.0.1', 'spoofed, 198.51.100.7', ['10.0.0.1'])).toBe('198.51.100.7')
    expect(clientAddress('10.0.0.1', '198.51.100.7, 10.0.0.2', ['10.0.0.1', '10.0.0.2'])).toBe('198.51.100.7')
  })
})

describe('client address in the access log', () => {
  function appLooking(logClientAddress?: 'always' | 'when-used', peer: () => string | undefined = () => '198.51.100.4') {
    const logger = memoryLogger()
    const routeIndex = new RouteIndex()
    let lookups = 0
    const app = new Elysia({ normalize: false })
      .use(
        requestPipeline({
          logger,
          bodyLimitBytes: LIMIT,
          routeIndex,
          logClientAddress,
          peerAddress: () => {
            lookups++
            return peer()
          },
        }),
      )
      .get('/plain', () => ({ ok: true }))
      .get('/reads-address', ({ request }) => ({ ip: requestMeta(request).clientIp }))
      .get('/refused', () => {
        throw new AppError('forbidden', 'no')
      })
    routeIndex.load(app.routes)
    const lineFor = async (path: string) => {
      const id = `ip-${crypto.randomUUID().slice(0, 8)}`
      await app.handle(new Request(`${BASE}${path}`, { headers: { 'x-request-id': id } }))
      await Bun.sleep(5)
      return logger.lines.find((l) => l.msg === 'request' && l.requestId === id)!
    }
    return { lineFor, lookups: () => lookups }
  }

  test('by default a request that never needs its address does not look it up, and its line has none', async () => {
    const { lineFor, lookups } = appLooking()
    expect((await lineFor('/plain')).ip).toBeUndefined()
    expect(lookups()).toBe(0)
  })

  test('a request that reads its address looks it up once, and its line names it', async () => {
    const { lineFor, lookups } = appLooking()
    expect((await lineFor('/reads-address')).ip).toBe('198.51.100.4')
    expect(lookups()).toBe(1)
  })

  test('a refused request names its client', async () => {
    const { lineFor } = appLooking()
    const line = await lineFor('/refused')
    expect(line.status).toBe(403)
    expect(line.ip).toBe('198.51.100.4')
    expect((await lineFor('/nowhere')).ip).toBe('198.51.100.4')
  })

  test('LOG_CLIENT_ADDRESS=always names it on every line', async () => {
    const { lineFor, lookups } = appLooking('always')
    expect((await lineFor('/plain')).ip).toBe('198.51.100.4')
    expect(lookups()).toBe(1)
  })

  test('a peer the server cannot name is unknown, not an error', async () => {
    const { lineFor } = appLooking('when-used', () => {
      throw new TypeError('request is not from this server')
    })
    const line = await lineFor('/reads-address')
    expect(line.status).toBe(200)
    expect(line.ip).toBe('unknown')
    expect((await lineFor('/refused')).status).toBe(403)
  })
})
