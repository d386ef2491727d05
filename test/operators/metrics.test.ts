/** GET /metrics: closed unless configured, Prometheus text format, and each figure it promises. */
import { afterAll, describe, expect, test } from 'bun:test'
import { createApp } from '../../src/main/app.ts'
import { startServer } from '../../src/main/server.ts'
import { agentHarness, isFinal } from '../agents/helpers.ts'
import { chatHarness, eventually, readEvents } from '../chat/helpers.ts'
import { startGitServer } from '../fakes/git-server.ts'
import { ADMIN, bearer, login, makeApp, userWithRole, type TestApp } from '../helpers.ts'
import { expectValidExposition, promtool, samplesOf, sampleValue } from './exposition.ts'

const TOKEN = 'metrics-token-'.padEnd(40, 'x')
const withToken = { authorization: `Bearer ${TOKEN}` }

/** Scrapes through `app.handle` once the requests before it have been counted (after their responses). */
async function scrape(t: TestApp) {
  await Bun.sleep(5)
  const response = await t.request('/metrics', { headers: withToken })
  expect(response.status).toBe(200)
  const text = await response.text()
  expectValidExposition(text)
  return samplesOf(text)
}

if (!promtool) console.warn('[skip] promtool check metrics: promtool is not installed (Debian package prometheus); parse-prometheus-text-format still checks')

describe('without METRICS_TOKEN or METRICS_PORT', () => {
  test('/metrics is not routed and nothing is collected', async () => {
    const t = await makeApp()
    try {
      expect(t.deps.metrics).toBeUndefined()
      for (const headers of [{}, withToken]) {
        const response = await t.request('/metrics', { headers })
        expect(response.status).toBe(404)
        expect(response.headers.get('content-type')).toBe('application/problem+json')
      }
    } finally {
      await t.close()
    }
  })
})

describe('with METRICS_TOKEN', async () => {
  const t = await makeApp({
    METRICS_TOKEN: TOKEN,
    ADMIN_EMAIL: ADMIN.email,
    ADMIN_PASSWORD: ADMIN.password,
    RATE_LIMIT_BURST: '3',
    RATE_LIMIT_BURST_WINDOW_SECONDS: '60',
  })
  afterAll(() => t.close())

  test('answers 401 with a problem body to no token, another token and a user access token', async () => {
    const { accessToken } = await login(t, ADMIN.email, ADMIN.password)
    for (const authorization of [undefined, `Bearer ${TOKEN}x`, `Bearer ${TOKEN.slice(1)}`, `Bearer ${accessToken}`, `Basic ${btoa(`metrics:${TOKEN}`)}`]) {
      const response = await t.request('/metrics', { headers: authorization ? { authorization } : {} })
      expect(response.status).toBe(401)
      expect(response.headers.get('www-authenticate')).toBe('Bearer realm="metrics"')
      expect(await response.json()).toMatchObject({ code: 'unauthenticated', status: 401 })
    }
  })

  test('answers the token with Prometheus text format 0.0.4 that Prometheus parsers accept', async () => {
    const response = await t.request('/metrics', { headers: withToken })
    expect(response.status).toBe(200)
    expect(response.headers.get('content-type')).toBe('text/plain; version=0.0.4; charset=utf-8')
    const text = await response.text()
    expectValidExposition(text)
    const families = [...text.matchAll(/^# TYPE (\S+) (\S+)$/gm)].map((m) => `${m[1]} ${m[2]}`)
    for (const family of [
      'http_request_duration_seconds histogram',
      'sse_streams_open gauge',
      'websocket_connections_open gauge',
      'agent_tasks_running gauge',
      'agent_tasks_finished_total counter',
      'imports_running gauge',
      'imports_finished_total counter',
      'rate_limit_refusals_total counter',
      'model_request_duration_seconds histogram',
      'model_first_token_seconds histogram',
      'model_tokens_total counter',
      'process_cpu_seconds_total counter',
    ])
      expect(families).toContain(family)
  })

  test('counts requests by method, route pattern and status, with their latency', async () => {
    const before = await scrape(t)
    const count = (samples: typeof before, labels: Record<string, string>) => sampleValue(samples, 'http_request_duration_seconds_count', labels) ?? 0
    await t.request('/health')
    await t.request('/health')
    await t.request('/api/chat/some-chat/stream')
    await t.request('/no/such/route')
    const after = await scrape(t)
    expect(count(after, { method: 'GET', route: '/health', status: '200' }) - count(before, { method: 'GET', route: '/health', status: '200' })).toBe(2)
    // By the route's pattern, never the path the client sent.
    expect(
      count(after, { method: 'GET', route: '/api/chat/:id/stream', status: '401' }) -
        count(before, { method: 'GET', route: '/api/chat/:id/stream', status: '401' }),
    ).toBe(1)
    expect(count(after, { method: 'GET', route: 'unmatched', status: '404' }) - count(before, { method: 'GET', route: 'unmatched', status: '404' })).toBe(1)
    expect(after.some((s) => s.labels.route === '/no/such/route' || s.labels.route === '/api/chat/some-chat/stream')).toBe(false)
    expect(sampleValue(after, 'http_request_duration_seconds_sum', { route: '/health', status: '200' })).toBeGreaterThan(0)
  })

  test('counts rate-limit refusals by the policy that refused', async () => {
    const { accessToken } = await login(t, ADMIN.email, ADMIN.password)
    const refusedBefore = sampleValue(await scrape(t), 'rate_limit_refusals_total', { policy: 'burst' }) ?? 0
    const statuses: number[] = []
    for (let i = 0; i < 5; i++) statuses.push((await t.request('/auth/me', { headers: bearer(accessToken) })).status)
    const refused = statuses.filter((s) => s === 429).length
    expect(refused).toBeGreaterThan(0)
    expect(sampleValue(await scrape(t), 'rate_limit_refusals_total', { policy: 'burst' })).toBe(refusedBefore + refused)
  })
})

describe('model calls and streams', async () => {
  const h = await chatHarness({ METRICS_TOKEN: TOKEN }, { search: false })
  afterAll(() => h.close())

  test('an open chat stream is gauged while it streams; the model call is timed and its tokens counted by model', async () => {
    let release!: () => void
    const gate = new Promise<void>((resolve) => (release = resolve))
    h.model.queue.push({ text: 'one two three four', usage: { prompt_tokens: 17, completion_tokens: 4 }, pause: { after: 1, until: gate } })
    // The gauge counts the whole process's streams; a suite run before this one may have left some open.
    const openBefore = sampleValue(await scrape(h.t), 'sse_streams_open')!
    const response = await h.post({ messages: [{ role: 'user', content: 'count to four' }] })
    expect(response.status).toBe(200)
    const reading = readEvents(response)
    let during = await scrape(h.t)
    await eventually(async () => {
      during = await scrape(h.t)
      return (sampleValue(during, 'model_first_token_seconds_count', { model: 'fake-model' }) ?? 0) === 1
    }, 'the first token')
    const openDuring = sampleValue(during, 'sse_streams_open')!
    expect(openDuring).toBeGreaterThanOrEqual(openBefore + 1)
    release()
    await reading
    await eventually(
      async () => (sampleValue(await scrape(h.t), 'model_request_duration_seconds_count', { model: 'fake-model', outcome: 'ok' }) ?? 0) === 1,
      'the call to end',
    )
    const after = await scrape(h.t)
    expect(sampleValue(after, 'model_tokens_total', { model: 'fake-model', direction: 'input' })).toBe(17)
    expect(sampleValue(after, 'model_tokens_total', { model: 'fake-model', direction: 'output' })).toBe(4)
    expect(sampleValue(after, 'model_request_duration_seconds_count', { operation: 'chat', model: 'fake-model', outcome: 'ok' })).toBe(1)
    expect(sampleValue(after, 'sse_streams_open')).toBeLessThanOrEqual(openDuring - 1)
  })

  test('a failed model call is counted as an error', async () => {
    h.model.queue.push({ status: 500 }, { status: 500 })
    await readEvents(await h.post({ messages: [{ role: 'user', content: 'fail please' }] }))
    await eventually(
      async () => (sampleValue(await scrape(h.t), 'model_request_duration_seconds_count', { model: 'fake-model', outcome: 'error' }) ?? 0) === 1,
      'the failure',
    )
  })
})

describe('agents and imports', () => {
  test('open agent WebSockets and running tasks are gauged, and finished tasks counted by command and status', async () => {
    const h = await agentHarness({ METRICS_TOKEN: TOKEN })
    try {
      const client = await h.connect()
      const second = await h.connect()
      expect(sampleValue(await scrape(h.t), 'websocket_connections_open')).toBe(2)
      const done = await h.run(client, 'status')
      await client.next(isFinal(done))
      const failed = await h.run(client, 'status', { taskId: 'task_nope' })
      await client.next(isFinal(failed))
      await eventually(
        async () => (sampleValue(await scrape(h.t), 'agent_tasks_finished_total', { command: 'status', status: 'failed' }) ?? 0) === 1,
        'the failed task',
      )
      const samples = await scrape(h.t)
      expect(sampleValue(samples, 'agent_tasks_finished_total', { command: 'status', status: 'succeeded' })).toBe(1)
      expect(sampleValue(samples, 'agent_tasks_running')).toBe(0)
      second.close()
      client.close()
      await eventually(async () => sampleValue(await scrape(h.t), 'websocket_connections_open') === 0, 'the sockets to close')
    } finally {
      await h.close()
    }
  })

  test('repository imports are counted by how they ended', async () => {
    const git = startGitServer()
    const t = await makeApp({ METRICS_TOKEN: TOKEN, IMPORT_CODEHOST_URL: git.url, IMPORT_ALLOW_HOSTS: `127.0.0.1:${git.port}` })
    try {
      git.createRepository('acme/tiny', { 'README.md': '# Tiny\n' })
      const member = await userWithRole(t, 'member')
      const importOf = async (repository: string) => {
        const response = await t.send('POST', '/api/codehost/import', { repository }, bearer(member.token))
        expect(response.status).toBe(202)
        const { importId } = await response.json()
        await t.deps.imports.settled(importId)
      }
      await importOf('acme/tiny')
      await importOf('acme/missing')
      const samples = await scrape(t)
      expect(sampleValue(samples, 'imports_finished_total', { status: 'succeeded' })).toBe(1)
      expect(sampleValue(samples, 'imports_finished_total', { status: 'failed' })).toBe(1)
      expect(sampleValue(samples, 'imports_running')).toBe(0)
    } finally {
      await t.close()
      await git.close()
    }
  })
})

describe('METRICS_PORT', () => {
  const listen = async (env: Record<string, string>) => {
    const t = await makeApp({ METRICS_PORT: '0', ...env })
    const running = startServer(createApp(t.deps), t.deps, { port: 0, hostname: '127.0.0.1' })
    return {
      t,
      running,
      metricsUrl: running.metricsUrl!,
      async close() {
        running.server.stop(true)
        await running.shutdown('test')
        await t.close().catch(() => {})
      },
    }
  }

  test('serves /metrics on its own listener bound to 127.0.0.1 only, and nothing else there; the main port keeps it unrouted', async () => {
    const s = await listen({})
    try {
      const url = new URL(s.metricsUrl)
      expect(url.hostname).toBe('127.0.0.1')
      expect(Number(url.port)).not.toBe(s.running.server.port)
      const response = await fetch(s.metricsUrl)
      expect(response.status).toBe(200)
      const text = await response.text()
      expectValidExposition(text)
      expect(text).toContain('# TYPE http_request_duration_seconds histogram')
      expect((await fetch(`${url.origin}/health`)).status).toBe(404)
      expect((await fetch(s.metricsUrl, { method: 'POST' })).status).toBe(405)
      expect((await fetch(`${s.running.url}/metrics`)).status).toBe(404)
      // Nothing answers on the machine's other addresses.
      const elsewhere = await fetch(`http://[::1]:${url.port}/metrics`).then(
        (r) => r.status,
        () => 'refused',
      )
      expect(elsewhere).toBe('refused')
    } finally {
      await s.close()
    }
  })

  test('asks for METRICS_TOKEN there too when it is set', async () => {
    const s = await listen({ METRICS_TOKEN: TOKEN })
    try {
      expect((await fetch(s.metricsUrl)).status).toBe(401)
      expect((await fetch(s.metricsUrl, { headers: withToken })).status).toBe(200)
      expect((await fetch(`${s.running.url}/metrics`, { headers: withToken })).status).toBe(200)
    } finally {
      await s.close()
    }
  })
})
