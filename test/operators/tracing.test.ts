/** OpenTelemetry traces over OTLP/HTTP, received by a fake collector that decodes what the exporter sends. */
import { afterAll, describe, expect, test } from 'bun:test'
import { join } from 'node:path'
import { chatHarness, eventually, readEvents } from '../chat/helpers.ts'
import { startFakeCollector, type CollectedSpan } from '../fakes/otlp-collector.ts'
import { buildExecutable, makeApp, tempDir } from '../helpers.ts'
import { ROOT, closedPort, fromSource, runToEnd, startService } from './processes.ts'

const SERVER = 2
const CLIENT = 3
const ERROR = 2

describe('with OTEL_EXPORTER_OTLP_ENDPOINT', async () => {
  const collector = startFakeCollector()
  const t = await makeApp({
    OTEL_EXPORTER_OTLP_ENDPOINT: collector.endpoint,
    OTEL_EXPORTER_OTLP_HEADERS: 'x-collector-key=s3cret%20value,x-tenant=ops',
    OTEL_SERVICE_NAME: 'ops-under-test',
  })
  afterAll(async () => {
    await t.close()
    await collector.close()
  })
  const exported = async () => {
    await Bun.sleep(5)
    await t.deps.tracing!.flush()
    return collector.spans
  }

  test('each request is a server span named by its route pattern, with its status, sent as OTLP JSON with the configured headers', async () => {
    await t.request('/health')
    await t.request('/api/chat/chat-42/stream')
    await t.request('/nowhere')
    const spans = await exported()
    const health = spans.find((s) => s.name === 'GET /health')!
    expect(health).toMatchObject({ kind: SERVER, parentSpanId: '' })
    expect(health.attributes).toMatchObject({ 'http.request.method': 'GET', 'http.route': '/health', 'http.response.status_code': 200, 'url.path': '/health' })
    expect(health.resource).toMatchObject({ 'service.name': 'ops-under-test', 'service.version': expect.any(String) })
    expect(health.endTimeUnixNano).toBeGreaterThan(health.startTimeUnixNano)
    const stream = spans.find((s) => s.name === 'GET /api/chat/:id/stream')!
    expect(stream.attributes).toMatchObject({ 'http.route': '/api/chat/:id/stream', 'http.response.status_code': 401, 'url.path': '/api/chat/chat-42/stream' })
    // No route matched: the name stays the method alone (its path would make names unbounded).
    expect(spans.find((s) => s.attributes['url.path'] === '/nowhere')).toMatchObject({ name: 'GET', attributes: { 'http.response.status_code': 404 } })
    const exports = collector.requests.filter((r) => r.path === '/v1/traces')
    expect(exports.length).toBeGreaterThan(0)
    expect(exports[0]!.headers).toMatchObject({ 'content-type': 'application/json', 'x-collector-key': 's3cret value', 'x-tenant': 'ops' })
  })

  test("a request with a W3C traceparent continues the caller's trace", async () => {
    const traceId = '4bf92f3577b34da6a3ce929d0e0e4736'
    const parent = '00f067aa0ba902b7'
    await t.request('/ready', { headers: { traceparent: `00-${traceId}-${parent}-01` } })
    const ready = (await exported()).find((s) => s.name === 'GET /ready')!
    expect(ready.traceId).toBe(traceId)
    expect(ready.parentSpanId).toBe(parent)
  })
})

describe('model calls', async () => {
  const collector = startFakeCollector()
  const h = await chatHarness({ OTEL_EXPORTER_OTLP_ENDPOINT: collector.endpoint }, { search: false })
  afterAll(async () => {
    await h.close()
    await collector.close()
  })
  const spansNamed = async (name: string, count: number) => {
    let found: CollectedSpan[] = []
    await eventually(async () => {
      await h.t.deps.tracing!.flush()
      found = collector.spans.filter((s) => s.name === name)
      return found.length >= count
    }, `${count} span(s) ${name}`)
    return found
  }

  test('each is a client span, child of the chat request that started it, with its token usage and first token', async () => {
    h.model.queue.push({ text: 'traced answer', usage: { prompt_tokens: 9, completion_tokens: 2 } })
    const response = await h.post({ messages: [{ role: 'user', content: 'trace me' }] })
    await readEvents(response)
    const [call] = await spansNamed('chat fake-model', 1)
    const [request] = await spansNamed('POST /api/chat', 1)
    expect(call!.kind).toBe(CLIENT)
    expect(call!.traceId).toBe(request!.traceId)
    expect(call!.parentSpanId).toBe(request!.spanId)
    expect(call!.attributes).toMatchObject({
      'gen_ai.operation.name': 'chat',
      'gen_ai.request.model': 'fake-model',
      'gen_ai.usage.input_tokens': 9,
      'gen_ai.usage.output_tokens': 2,
      'app.model_call.outcome': 'ok',
    })
    expect(call!.events).toContain('first_token')
  })

  test('a failed call is marked as an error', async () => {
    h.model.queue.push({ status: 500 }, { status: 500 })
    await readEvents(await h.post({ messages: [{ role: 'user', content: 'fail' }] }))
    const calls = await spansNamed('chat fake-model', 2)
    const failed = calls.find((s) => s.attributes['app.model_call.outcome'] === 'error')!
    expect(failed.statusCode).toBe(ERROR)
  })
})

test('a collector that cannot be reached costs one warning in the log, never a request', async () => {
  // The exporter retries a refused export until its timeout (10 s by default), a variable it reads itself.
  process.env.OTEL_EXPORTER_OTLP_TIMEOUT = '300'
  const t = await makeApp({ OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${closedPort()}` }).finally(() => delete process.env.OTEL_EXPORTER_OTLP_TIMEOUT)
  try {
    for (let i = 0; i < 3; i++) {
      expect((await t.request('/health')).status).toBe(200)
      await Bun.sleep(5)
      await t.deps.tracing!.flush()
    }
    expect(t.logs.filter((l) => l.msg === 'trace export failed')).toHaveLength(1)
  } finally {
    await t.close()
  }
})

test('without the endpoint no tracing code is loaded and nothing is exported', async () => {
  const dir = tempDir('operators-tracing-')
  try {
    // A fresh process: which modules the service loaded, with and without the variable.
    const script = join(dir.path, 'loaded.ts')
    await Bun.write(
      script,
      `import { loadConfig } from '${join(ROOT, 'src/main/config.ts')}'
import { buildDependencies } from '${join(ROOT, 'src/main/dependencies.ts')}'
import { createApp } from '${join(ROOT, 'src/main/app.ts')}'
const deps = await buildDependencies(loadConfig(), { sqliteFile: ':memory:' })
await createApp(deps).handle(new Request('http://localhost/health'))
console.log(JSON.stringify({ tracing: deps.tracing !== undefined, modules: Object.keys(require.cache).filter((k) => /@opentelemetry[\\\\/](sdk-trace|exporter-trace-otlp-http|otlp-|resources)/.test(k)).length }))
await deps.close()
// The exporter's keep-alive connection would hold the process open a while longer.
process.exit(0)
`,
    )
    const run = async (env: Record<string, string>) => {
      const result = await runToEnd([process.execPath, '--no-env-file', script], { DATA_DIR: join(dir.path, 'data'), LOG_LEVEL: 'error', ...env })
      expect(result.exitCode, result.stderr).toBe(0)
      return JSON.parse(result.stdout.trim().split('\n').at(-1)!) as { tracing: boolean; modules: number }
    }
    expect(await run({})).toEqual({ tracing: false, modules: 0 })
    const collector = startFakeCollector()
    try {
      const traced = await run({ OTEL_EXPORTER_OTLP_ENDPOINT: collector.endpoint })
      expect(traced.tracing).toBe(true)
      expect(traced.modules).toBeGreaterThan(0)
    } finally {
      await collector.close()
    }
  } finally {
    dir.remove()
  }
})

test('the compiled executable carries the exporter: its spans reach the collector, the last ones sent at shutdown', async () => {
  const dir = tempDir('operators-tracing-exe-')
  const collector = startFakeCollector()
  try {
    const executable = join(dir.path, 'server')
    const build = buildExecutable(executable)
    expect(build.exitCode, build.stderr.toString()).toBe(0)
    const service = await startService([executable], { DATA_DIR: join(dir.path, 'data'), OTEL_EXPORTER_OTLP_ENDPOINT: collector.endpoint })
    expect((await fetch(`${service.url}/health`)).status).toBe(200)
    // SIGTERM flushes the spans not yet sent (the export interval is 5 s).
    expect(await service.stop()).toBe(0)
    expect(collector.spans.map((s) => s.name)).toContain('GET /health')
    expect(collector.spans[0]!.resource['service.name']).toBe('realtime-ai-backend')
  } finally {
    await collector.close()
    dir.remove()
  }
})

test('bun src/main/index.ts sends the spans of a request answered just before SIGTERM', async () => {
  const dir = tempDir('operators-tracing-src-')
  const collector = startFakeCollector()
  try {
    // The signal often lands before the request's afterResponse hook has run; a few rounds catch that.
    for (let round = 0; round < 4; round++) {
      const service = await startService(fromSource([]), { DATA_DIR: join(dir.path, `data-${round}`), OTEL_EXPORTER_OTLP_ENDPOINT: collector.endpoint })
      const response = await fetch(`${service.url}/health`)
      await response.text()
      expect(await service.stop()).toBe(0)
      expect(collector.spans.filter((s) => s.name === 'GET /health')).toHaveLength(round + 1)
    }
  } finally {
    await collector.close()
    dir.remove()
  }
})
