/**
 * What the request pipeline costs: the service against bare Bun.serve, on /health (pipeline only) and on
 * /auth/me (pipeline + token verification + the in-memory rate limiter), same machine, same run. /auth/me has a
 * second baseline, bare Bun.serve doing that route's work by hand (bench/baseline/bare-authenticated.ts): its
 * CPU per request is the one the target bounds, the bare server that verifies nothing is shown beside it.
 */
import { load, type LoadResult } from './lib/load.ts'
import { accessTokenFor, startBareBaseline, startService, type Running } from './lib/processes.ts'
import { QUICK, quickOr } from './lib/mode.ts'
import { printTable, ratioOf, spreadOf, writeResults, type Row } from './lib/report.ts'

const email = 'bench@example.com'
const password = `bench-${crypto.randomUUID()}`
// The largest burst config accepts, per second: every request still goes through the limiter, yet autocannon
// cannot come near it, so no measured request is refused for rate.
const burst = 1_000_000
const limiterNote = `rate limiter active on /auth/me with RATE_LIMIT_BURST=${burst.toLocaleString('en-US')} per 1 s: checked on every request, never refusing the load`

// `cpuTarget` bounds the server CPU per request against the baseline doing the same work, with request logging on.
const allRoutes = [
  { path: '/health', target: undefined, cpuTarget: undefined, notes: [] },
  { path: '/auth/me', target: { atLeast: 0.6 }, cpuTarget: { atMost: 1.15 }, notes: [limiterNote] },
] as const
// A quick run measures the authenticated route only: its CPU per request is the headline figure.
const routes = QUICK ? allRoutes.filter((route) => route.path === '/auth/me') : allRoutes
// Each load is a discarded warm-up, then the measured window.
const LOAD_SECONDS = quickOr(5, 2)
const WARM_UP_SECONDS = quickOr(2, 1)
// Shared with the authenticated baseline so it verifies the service's own tokens.
const jwtSecret = Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString('base64url')

export async function run(): Promise<Row[]> {
  const running: Running[] = []
  try {
    const service = await startService({
      ADMIN_EMAIL: email,
      ADMIN_PASSWORD: password,
      RATE_LIMIT_BURST: String(burst),
      RATE_LIMIT_BURST_WINDOW_SECONDS: '1',
      JWT_SECRET: jwtSecret,
    })
    running.push(service)
    const bare = await startBareBaseline()
    running.push(bare)
    const bareAuthenticated = await startBareBaseline('bare-authenticated.ts', { JWT_SECRET: jwtSecret, RATE_LIMIT_BURST: String(burst) })
    running.push(bareAuthenticated)
    console.log(`http: service ${service.url} (${JSON.stringify(service.facts)}), bare Bun.serve ${bare.url}, bare authenticated ${bareAuthenticated.url}`)
    console.log(`http: ${limiterNote}`)

    const authorization = `Bearer ${await accessTokenFor(service.url, { email, password })}`
    const rows: Row[] = []
    for (const route of routes) {
      const headers = route.path === '/auth/me' ? { Authorization: authorization } : undefined
      // Baseline and service alternate over several rounds and each keeps its median round, so drift
      // and a neighbour's burst of work hit both alike instead of deciding the ratio.
      const authenticated = route.path === '/auth/me'
      const baselines: LoadResult[] = []
      const sameWork: LoadResult[] = []
      const measures: LoadResult[] = []
      for (let round = 0; round < ROUNDS; round++) {
        // A quick run warms each server up in its first round only.
        const window = { path: route.path, headers, durationSeconds: LOAD_SECONDS, warmupSeconds: round > 0 && QUICK ? 0 : WARM_UP_SECONDS }
        baselines.push(await load(bare.url, { ...window, serverPid: bare.pid }))
        if (authenticated) sameWork.push(await load(bareAuthenticated.url, { ...window, serverPid: bareAuthenticated.pid }))
        measures.push(await load(service.url, { ...window, serverPid: service.pid }))
      }
      const baseline = median(baselines)
      const measured = median(measures)
      rows.push(...rowsFor(`GET ${route.path}`, baseline, measured, route.target, route.notes, measures))
      const cpuPerRequest = (results: LoadResult[]) => medianOf(results.map((r) => r.serverCpuMicrosPerRequest))
      const cpuSpread = spreadOf(measures.flatMap((r) => r.serverCpuMicrosPerRequest ?? []))
      const [b, v] = [cpuPerRequest(baselines), cpuPerRequest(measures)]
      if (b !== undefined && v !== undefined)
        rows.push({
          figure: authenticated
            ? `GET ${route.path} server CPU per request, vs a bare server that verifies nothing`
            : `GET ${route.path} server CPU per request`,
          unit: 'µs',
          baseline: b,
          value: v,
          ratio: ratioOf(v, b),
          target: authenticated ? undefined : route.cpuTarget,
          notes: [cpuNote],
          spread: cpuSpread,
        })
      const same = cpuPerRequest(sameWork)
      if (authenticated && same !== undefined && v !== undefined) {
        const refused = sameWork.reduce((n, r) => n + r.non2xx + r.errors, 0)
        rows.push({
          figure: `GET ${route.path} server CPU per request, vs bare Bun.serve doing the same work`,
          unit: 'µs',
          baseline: same,
          value: v,
          ratio: ratioOf(v, same),
          target: route.cpuTarget,
          notes: [cpuNote, sameWorkNote],
          spread: cpuSpread,
          warning: refused ? `the authenticated baseline refused ${refused} requests: figures are not comparable` : undefined,
        })
      }
    }
    return rows
  } finally {
    for (const r of running.reverse()) await r.stop()
  }
}

const latencyNote = 'autocannon records latency in whole milliseconds: 0 means under 1 ms'
const generatorBoundNote =
  "autocannon used a full core while the server had CPU to spare: the figure is the load generator's ceiling, not the server's; compare req/core-s"

const ROUNDS = 3
const cpuNote = `server CPU time (every thread, from /proc) over the requests answered, median of ${ROUNDS} alternating rounds; the load generator's CPU is not counted`

const sameWorkNote =
  "the baseline verifies the HS256 signature of every request's token (node:crypto HMAC, constant-time compare), checks type, issuer, audience, expiry and a scope, and counts the caller in a one-second window, by hand in one fetch handler (bench/baseline/bare-authenticated.ts); the service also logs each request, sets request ids and security headers, checks revoked sessions and answers from its cache of verified tokens"

function medianOf(values: (number | undefined)[]): number | undefined {
  const known = values.filter((v): v is number => v !== undefined).sort((a, b) => a - b)
  return known.length ? known[Math.floor(known.length / 2)] : undefined
}

function median(results: LoadResult[]): LoadResult {
  return [...results].sort((a, b) => a.requestsPerSecond - b.requestsPerSecond)[Math.floor(results.length / 2)]!
}

function rowsFor(label: string, baseline: LoadResult, measured: LoadResult, target: Row['target'], notes: readonly string[], rounds: LoadResult[]): Row[] {
  const refused = baseline.non2xx + baseline.errors + measured.non2xx + measured.errors
  const warning = refused
    ? `${measured.non2xx} non-2xx and ${measured.errors} errors from the service, ${baseline.non2xx} and ${baseline.errors} from the baseline: figures are not comparable`
    : undefined
  const row = (figure: string, unit: string, b: number | undefined, v: number | undefined, rowNote?: string): Row[] => {
    if (v === undefined) return []
    const ratio = b === undefined || unit === 'count' ? null : ratioOf(v, b)
    return [{ figure: `${label} ${figure}`, unit, baseline: b ?? null, value: v, ratio, notes: rowNote ? [rowNote] : undefined }]
  }
  const [throughput] = row('throughput', 'req/s', baseline.requestsPerSecond, measured.requestsPerSecond)
  return [
    { ...throughput!, target, notes: [...notes, ...boundBy(baseline, measured)], warning, spread: spreadOf(rounds.map((r) => r.requestsPerSecond)) },
    // Requests per second of server CPU does not depend on whether the load generator kept up.
    ...row('throughput per server core', 'req/core-s', perCore(baseline), perCore(measured)),
    ...row('latency p50', 'ms', baseline.p50Ms, measured.p50Ms, latencyNote),
    ...row('latency p99', 'ms', baseline.p99Ms, measured.p99Ms, latencyNote),
    ...row('non-2xx + errors', 'count', baseline.non2xx + baseline.errors, measured.non2xx + measured.errors),
    ...row('server CPU', '%', baseline.serverCpuPercent, measured.serverCpuPercent),
    ...row('autocannon CPU', '%', baseline.loadGeneratorCpuPercent, measured.loadGeneratorCpuPercent),
  ]
}

const perCore = (r: LoadResult) => (r.serverCpuPercent ? r.requestsPerSecond / (r.serverCpuPercent / 100) : undefined)

function boundBy(...results: LoadResult[]): string[] {
  const generatorBound = results.some((r) => (r.loadGeneratorCpuPercent ?? 0) >= 90 && (r.serverCpuPercent ?? 100) < 85)
  // Other engineers' test runs share this machine; a busy neighbour shows as CPU neither process used.
  const elsewhere = Math.max(...results.map((r) => r.elsewhereCpuPercent ?? 0))
  return [
    ...(generatorBound ? [generatorBoundNote] : []),
    ...(elsewhere >= 15 ? [`other processes on the machine used up to ${elsewhere.toFixed(0)}% of a core during these runs`] : []),
  ]
}

if (import.meta.main) {
  const rows = await run()
  printTable(rows)
  console.log(`results: ${writeResults('http', rows)}`)
}
