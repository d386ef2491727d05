/**
 * What metrics cost a request: GET /auth/me (pipeline + token check + rate limiter) on the service with metrics
 * off (neither METRICS_TOKEN nor METRICS_PORT: nothing is collected) as the baseline, against the same service with
 * METRICS_TOKEN set (one histogram observation per request, refusals counted through the limiter), same machine,
 * same run, rounds alternating. Also the cost of one observation alone, in process.
 */
import { createApp } from '../src/main/app.ts'
import { loadConfig } from '../src/main/config.ts'
import { buildDependencies } from '../src/main/dependencies.ts'
import { createLogger } from '../src/log.ts'
import { createServiceMetrics } from '../src/observability/metrics.ts'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { load, type LoadResult } from './lib/load.ts'
import { accessTokenFor, startService, type Running } from './lib/processes.ts'
import { printTable, ratioOf, writeResults, type Row } from './lib/report.ts'

const email = 'bench@example.com'
const password = `bench-${crypto.randomUUID()}`
const metricsToken = `bench-metrics-${crypto.randomUUID()}`
const ROUNDS = 5
const CPU_PAIRS = 6
const CPU_ROUNDS = 4
const CPU_PER_ROUND = 10_000
const env = { ADMIN_EMAIL: email, ADMIN_PASSWORD: password, RATE_LIMIT_BURST: '1000000', RATE_LIMIT_BURST_WINDOW_SECONDS: '1' }

export async function run(): Promise<Row[]> {
  const running: Running[] = []
  try {
    const off = await startService(env)
    running.push(off)
    const on = await startService({ ...env, METRICS_TOKEN: metricsToken })
    running.push(on)
    console.log(`metrics: off ${off.url}, on ${on.url} (METRICS_TOKEN set)`)
    const headersOff = { Authorization: `Bearer ${await accessTokenFor(off.url, { email, password })}` }
    const headersOn = { Authorization: `Bearer ${await accessTokenFor(on.url, { email, password })}` }

    const baselines: LoadResult[] = []
    const measures: LoadResult[] = []
    for (let round = 0; round < ROUNDS; round++) {
      baselines.push(await load(off.url, { path: '/auth/me', headers: headersOff, serverPid: off.pid, durationSeconds: 5 }))
      measures.push(await load(on.url, { path: '/auth/me', headers: headersOn, serverPid: on.pid, durationSeconds: 5 }))
    }
    const counted = await countedRequests(on.url)
    const served = measures.reduce((sum, m) => sum + m.totalRequests, 0)
    const baseline = median(baselines)
    const measured = median(measures)
    const refused = [...baselines, ...measures].reduce((sum, r) => sum + r.non2xx + r.errors, 0)
    const warning = refused ? `${refused} non-2xx or failed requests: figures are not comparable` : undefined
    const elsewhere = Math.max(...[...baselines, ...measures].map((r) => r.elsewhereCpuPercent ?? 0))
    const notes = [
      `median of ${ROUNDS} alternating 5 s rounds each; the metrics-on service counted ${counted.toLocaleString('en-US')} GET /auth/me requests (the measured rounds served ${served.toLocaleString('en-US')}, warm-ups the rest)`,
      ...(elsewhere >= 15 ? [`other processes on the machine used up to ${elsewhere.toFixed(0)}% of a core during these runs`] : []),
    ]
    // Each round's own requests per CPU second, then their median: less at the mercy of one noisy round.
    const perCore = (results: LoadResult[]) => {
      const values = results.filter((r) => r.serverCpuPercent).map((r) => r.requestsPerSecond / (r.serverCpuPercent! / 100))
      return values.length ? values.sort((a, b) => a - b)[Math.floor(values.length / 2)] : undefined
    }
    const cpu = await inProcessCpu()
    const row = (figure: string, unit: string, b: number | undefined, v: number | undefined, extra: Partial<Row> = {}): Row[] =>
      v === undefined || b === undefined ? [] : [{ figure: `GET /auth/me ${figure}`, unit, baseline: b, value: v, ratio: ratioOf(v, b), ...extra }]
    return [
      ...row('throughput, metrics on vs off', 'req/s', baseline.requestsPerSecond, measured.requestsPerSecond, { target: { atLeast: 0.95 }, notes, warning }),
      ...row('throughput per server core, on vs off', 'req/core-s', perCore(baselines), perCore(measures), { target: { atLeast: 0.95 } }),
      ...row('CPU per request in process (app.handle), on vs off', 'ns', cpu.off, cpu.on, { target: { atMost: 1.05 }, notes: [cpu.note] }),
      ...row('latency p50, on vs off', 'ms', baseline.p50Ms, measured.p50Ms),
      ...row('latency p99, on vs off', 'ms', baseline.p99Ms, measured.p99Ms),
      observationCost(),
    ]
  } finally {
    for (const r of running.reverse()) await r.stop()
  }
}

/**
 * CPU time of this process per GET /auth/me through `app.handle` (no sockets, no load generator), metrics off and
 * on, in alternating rounds: CPU time is what another busy process on the machine disturbs least. Apps built in one
 * process share its compiled code, and the one built second measured 2 to 6 % slower even with metrics off in
 * both, which is as large as the effect measured here. So the pair is built afresh several times, each variant
 * built first in half of the pairs.
 */
async function inProcessCpu(): Promise<{ off: number; on: number; note: string }> {
  const dir = mkdtempSync(join(tmpdir(), 'bench-metrics-'))
  let built = 0
  const build = async (extra: Record<string, string>) => {
    const config = loadConfig({ DATA_DIR: join(dir, String(built++)), ...env, ...extra })
    const deps = await buildDependencies(config, { sqliteFile: ':memory:', logger: createLogger({ level: 'error' }) })
    const app = createApp(deps)
    const login = await app.handle(
      new Request('http://localhost/auth/login', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ email, password }),
      }),
    )
    const { accessToken } = (await login.json()) as { accessToken: string }
    const request = () => app.handle(new Request('http://localhost/auth/me', { headers: { authorization: `Bearer ${accessToken}` } }))
    return { deps, request }
  }
  // 64 in flight at a time; afterResponse hooks run in setImmediate, so each batch waits for them too.
  const round = async (request: () => Promise<Response>, count: number) => {
    const started = process.cpuUsage()
    for (let done = 0; done < count; done += 64) {
      const answers = await Promise.all(Array.from({ length: 64 }, request))
      if (answers.some((a) => a.status !== 200)) throw new Error(`GET /auth/me answered ${answers.find((a) => a.status !== 200)!.status}`)
      await new Promise((resolve) => setImmediate(resolve))
    }
    const used = process.cpuUsage(started)
    // cpuUsage is in microseconds.
    return ((used.user + used.system) * 1000) / count
  }
  const offs: number[] = []
  const ons: number[] = []
  try {
    for (let pair = 0; pair < CPU_PAIRS; pair++) {
      const onFirst = pair % 2 === 1
      const first = await build(onFirst ? { METRICS_TOKEN: metricsToken } : {})
      const second = await build(onFirst ? {} : { METRICS_TOKEN: metricsToken })
      const [off, on] = onFirst ? [second, first] : [first, second]
      await round(off.request, CPU_PER_ROUND)
      await round(on.request, CPU_PER_ROUND)
      for (let i = 0; i < CPU_ROUNDS; i++) {
        offs.push(await round(off.request, CPU_PER_ROUND))
        ons.push(await round(on.request, CPU_PER_ROUND))
      }
      await off.deps.close()
      await on.deps.close()
    }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
  const median = (values: number[]) => values.sort((a, b) => a - b)[Math.floor(values.length / 2)]!
  return {
    off: Math.round(median(offs)),
    on: Math.round(median(ons)),
    note: `in-process CPU: ${CPU_PAIRS} pairs of apps built afresh, each variant built first in half of them; median of ${CPU_PAIRS * CPU_ROUNDS} alternating rounds of ${CPU_PER_ROUND.toLocaleString('en-US')} requests each, 64 in flight`,
  }
}

/** Nanoseconds per request observation (the histogram update), over a spread of routes and statuses. */
function observationCost(): Row {
  const metrics = createServiceMetrics()
  const requests = ['/auth/me', '/health', '/api/chat', '/api/chat/:id/stream'].map((route) => ({ request: new Request(`http://localhost${route}`), route }))
  const observe = (n: number) => {
    for (let i = 0; i < n; i++) {
      const { request, route } = requests[i & 3]!
      metrics.requests.finished(request, route, i % 7 === 0 ? 401 : 200, 0.4)
    }
  }
  observe(200_000)
  const n = 2_000_000
  const startedAt = performance.now()
  observe(n)
  const ns = ((performance.now() - startedAt) * 1e6) / n
  return { figure: 'one request observation (histogram update)', unit: 'ns', baseline: null, value: Math.round(ns), ratio: null }
}

async function countedRequests(url: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`, { headers: { Authorization: `Bearer ${metricsToken}` } })).text()
  return [...text.matchAll(/^http_request_duration_seconds_count\{[^}]*route="\/auth\/me"[^}]*status="200"[^}]*\} (\d+)$/gm)].reduce(
    (sum, m) => sum + Number(m[1]),
    0,
  )
}

function median(results: LoadResult[]): LoadResult {
  return [...results].sort((a, b) => a.requestsPerSecond - b.requestsPerSecond)[Math.floor(results.length / 2)]!
}

if (import.meta.main) {
  const rows = await run()
  printTable(rows)
  console.log(`results: ${writeResults('metrics', rows)}`)
}
