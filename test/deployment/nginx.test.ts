/** nginx.conf: accepted by nginx, and each streaming route gets the settings streaming needs. */
import { afterAll, describe, expect, test } from 'bun:test'
import { OPENAPI_JSON_PATH } from '../../plugins/docs/index.ts'
import { makeApp } from '../helpers.ts'
import { composeFile, environmentOf, nginxBinary, nginxTest, numericDefault, readDeploymentFile, renderNginx, replicas, unitEnvironment } from './files.ts'

const conf = readDeploymentFile('nginx.conf')

/** The directives of the first `location` block whose header matches. */
function locationBlock(header: RegExp): { pattern: string; body: string } {
  for (const m of conf.matchAll(/^\s*location\s+([^{]+?)\s*\{([^}]*)\}/gm)) if (header.test(m[1]!)) return { pattern: m[1]!, body: m[2]! }
  throw new Error(`no location matching ${header}`)
}

const directive = (body: string, name: string) => new RegExp(`^\\s*${name}\\s+([^;]+);`, 'm').exec(body)?.[1]

const seconds = (value: string | undefined) => {
  const m = /^(\d+)(ms|s|m|h|d)?$/.exec(value ?? '')
  if (!m) return 0
  return Number(m[1]) * { ms: 0.001, s: 1, m: 60, h: 3600, d: 86_400 }[m[2] ?? 's']!
}

describe.skipIf(!nginxBinary)('nginx -t', () => {
  test('accepts nginx.conf (replica addresses and listen port filled in)', () => {
    const rendered = renderNginx({ upstreams: ['127.0.0.1:3001', '127.0.0.1:3002'], listen: '127.0.0.1:18080' })
    try {
      const result = nginxTest(rendered)
      expect(result.output).toContain('test is successful')
      expect(result.exitCode).toBe(0)
    } finally {
      rendered.remove()
    }
  })

  test('refuses a broken copy, so the check above can fail', () => {
    const rendered = renderNginx({
      upstreams: ['127.0.0.1:3001', '127.0.0.1:3002'],
      listen: '127.0.0.1:18080',
      edit: (text) => text.replace('proxy_buffering off;', 'proxy_buffering sometimes;'),
    })
    try {
      expect(nginxTest(rendered).exitCode).not.toBe(0)
    } finally {
      rendered.remove()
    }
  })
})
if (!nginxBinary) console.warn('[skip] nginx -t on docs/deployment/nginx.conf: nginx is not installed')

/** Every regex `location` block, in order: nginx uses the first whose pattern matches. */
const regexLocations = [...conf.matchAll(/^\s*location\s+~\s*([^{]+?)\s*\{([^}]*)\}/gm)].map((m) => ({ matcher: new RegExp(m[1]!), body: m[2]! }))
const locationFor = (path: string) => regexLocations.find((l) => l.matcher.test(path))

describe('streaming routes', () => {
  const sse = locationBlock(/^~ \^\/\(api\/chat\|api\/chat\//)
  const longWork = locationBlock(/^~ \^\/\(api\/chat\|api\/enhanced-chat\|api\/codehost\/import\)\$$/)
  const matcher = { test: (path: string) => locationFor(path) !== undefined }

  // Every route whose OpenAPI answer is an event stream, plus those that stream on Accept: text/event-stream.
  const app = makeApp()
  afterAll(async () => (await app).close())
  const streamingPaths = async () => {
    const document = await (await (await app).request(OPENAPI_JSON_PATH)).json()
    const documented = Object.entries<Record<string, unknown>>(document.paths)
      .filter(([, operations]) => JSON.stringify(operations).includes('text/event-stream'))
      .map(([path]) => path)
    return [...new Set(['/api/chat', '/api/publish-codehost-pages', ...documented])].map((path) => path.replace(/\{[^}]+\}/g, 'some-id'))
  }

  test('every server-sent events route falls in the SSE location, and no other route does', async () => {
    const paths = await streamingPaths()
    expect(paths.length).toBeGreaterThanOrEqual(6)
    expect(paths.filter((path) => !matcher.test(path))).toEqual([])
    expect(['/api/chats', '/api/chat/some-id', '/api/chat/some-id/cancel', '/api/codehost/imports', '/health'].filter((p) => matcher.test(p))).toEqual([])
  })

  test('the SSE locations pass each event on at once and keep the stream open for long answers', () => {
    for (const block of [sse, longWork]) {
      expect(directive(block.body, 'proxy_buffering')).toBe('off')
      expect(directive(block.body, 'proxy_cache')).toBe('off')
      expect(directive(block.body, 'gzip')).toBe('off')
      expect(seconds(directive(block.body, 'proxy_read_timeout'))).toBeGreaterThanOrEqual(600)
    }
  })

  test('new long work refused by a draining replica (503) goes to the other: chat turns and imports, and nothing else', () => {
    const retry = directive(longWork.body, 'proxy_next_upstream')!.split(/\s+/)
    expect(retry).toEqual(expect.arrayContaining(['error', 'timeout', 'http_503', 'non_idempotent']))
    for (const path of ['/api/chat', '/api/enhanced-chat', '/api/codehost/import']) expect(locationFor(path)?.body).toBe(longWork.body)
    for (const path of ['/api/publish-codehost-pages', '/api/chat/some-id/stream', '/mcp', '/api/payment/webhook'])
      expect(locationFor(path)?.body).not.toBe(longWork.body)
    const ws = locationBlock(/^=\s*\/ws\/agent$/)
    expect(directive(ws.body, 'proxy_next_upstream')!.split(/\s+/)).toEqual(['error', 'timeout', 'http_503'])
  })

  test('the agent WebSocket is upgraded over HTTP/1.1 and kept open', () => {
    const ws = locationBlock(/^=\s*\/ws\/agent$/)
    expect(seconds(directive(ws.body, 'proxy_read_timeout'))).toBeGreaterThanOrEqual(600)
    // Set once at server level; a location with its own proxy_set_header would drop them all.
    expect(ws.body).not.toContain('proxy_set_header')
    expect(sse.body).not.toContain('proxy_set_header')
    expect(longWork.body).not.toContain('proxy_set_header')
    expect(directive(conf, 'proxy_http_version')).toBe('1.1')
    expect(directive(conf, 'proxy_set_header Upgrade')).toBe('$http_upgrade')
    expect(directive(conf, 'proxy_set_header Connection')).toBe('$connection_upgrade')
  })
})

test('the client address and scheme are forwarded, for TRUSTED_PROXIES', () => {
  expect(directive(conf, 'proxy_set_header X-Forwarded-For')).toBe('$proxy_add_x_forwarded_for')
  expect(directive(conf, 'proxy_set_header X-Forwarded-Proto')).toBe('$scheme')
})

test("client_max_body_size is BODY_LIMIT_BYTES' default", () => {
  const value = directive(conf, 'client_max_body_size')!
  const m = /^(\d+)([kKmMgG]?)$/.exec(value)!
  const bytes = Number(m[1]) * ({ '': 1, k: 1024, m: 1024 ** 2, g: 1024 ** 3 } as Record<string, number>)[m[2]!.toLowerCase()]!
  expect(bytes).toBe(numericDefault('BODY_LIMIT_BYTES'))
})

test('only requests that never reached a replica are retried on the other (no non_idempotent)', () => {
  const retry = directive(conf, 'proxy_next_upstream')!
  expect(retry.split(/\s+/)).not.toContain('non_idempotent')
  // The service's own 502/504 (a provider failed) must not count against a healthy replica.
  expect(retry.split(/\s+/).filter((c) => c.startsWith('http_'))).toEqual([])
})

test('a refused connection never takes a replica out of rotation, and nginx ends idle connections before a stopping replica would', () => {
  const upstream = /upstream service \{([^}]*)\}/.exec(conf)![1]!
  const servers = [...upstream.matchAll(/^\s*server\s+([^;]+);/gm)].map((m) => m[1]!)
  expect(servers.length).toBe(2)
  for (const server of servers) expect(server).toContain('max_fails=0')
  const idleMs = seconds(directive(upstream, 'keepalive_timeout')) * 1000
  expect(idleMs).toBeGreaterThan(0)
  // Bun closes an idle connection after 10 s; a stopping replica keeps accepting for SHUTDOWN_DRAIN_DELAY_MS.
  expect(idleMs).toBeLessThan(10_000)
  const delays = [
    ...replicas(composeFile()).map(([, service]) => Number(environmentOf(service).SHUTDOWN_DRAIN_DELAY_MS)),
    Number(unitEnvironment(readDeploymentFile('realtime-ai-backend.service')).SHUTDOWN_DRAIN_DELAY_MS),
  ]
  for (const delay of delays) expect(delay).toBeGreaterThan(idleMs)
})
