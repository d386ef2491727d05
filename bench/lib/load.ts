import { join } from 'node:path'
import { cpuReading, cpuSecondsSince, machineCpuSeconds } from './cpu.ts'

const autocannon = join(import.meta.dir, '..', '..', 'node_modules', 'autocannon', 'autocannon.js')
// Beyond the requested duration, how long autocannon may take to start and report before it is killed.
const graceSeconds = 20

export interface LoadOptions {
  path: string
  headers?: Record<string, string>
  connections?: number
  durationSeconds?: number
  warmupSeconds?: number
  /** The server's PID, to report how busy it was: a server well under a full core was not the bottleneck. */
  serverPid?: number
}

export interface LoadResult {
  requestsPerSecond: number
  p50Ms: number
  p99Ms: number
  non2xx: number
  /** Connection errors and timeouts. */
  errors: number
  totalRequests: number
  /** Percent of one core over the measured run; undefined where /proc is not available. */
  serverCpuPercent?: number
  /** Server CPU time per answered request, in microseconds: what a request costs, whoever was the bottleneck. */
  serverCpuMicrosPerRequest?: number
  loadGeneratorCpuPercent?: number
  /** CPU used by neither the server nor autocannon (other processes, hypervisor steal), in percent of one core. */
  elsewhereCpuPercent?: number
}

interface AutocannonReport {
  requests: { mean: number; total: number }
  latency: { p50: number; p99: number }
  non2xx: number
  errors: number
  timeouts: number
}

/** A discarded warm-up run, then a measured one: autocannon under node, so it does not share the runtime it measures. */
export async function load(url: string, options: LoadOptions): Promise<LoadResult> {
  const { path, headers = {}, connections = 50, durationSeconds = 8, warmupSeconds = 2, serverPid } = options
  const target = new URL(path, url).href
  const args = ['-c', String(connections), ...Object.entries(headers).flatMap(([k, v]) => ['-H', `${k}: ${v}`]), target]
  if (warmupSeconds > 0) await autocannonRun([...args, '-d', String(warmupSeconds)], warmupSeconds)

  const before = serverPid === undefined ? undefined : cpuReading(serverPid)
  const machineBefore = machineCpuSeconds()
  const startedAt = performance.now()
  const { report, cpuMicros } = await autocannonRun([...args, '-d', String(durationSeconds)], durationSeconds)
  const wallSeconds = (performance.now() - startedAt) / 1000
  const serverSeconds = serverPid === undefined || before === undefined ? undefined : cpuSecondsSince(serverPid, before)
  const machineAfter = machineCpuSeconds()
  const percent = (seconds: number) => (seconds / wallSeconds) * 100
  const generatorSeconds = cpuMicros === undefined ? undefined : cpuMicros / 1e6
  const machineSeconds = machineBefore !== undefined && machineAfter !== undefined ? machineAfter - machineBefore : undefined

  return {
    requestsPerSecond: report.requests.mean,
    p50Ms: report.latency.p50,
    p99Ms: report.latency.p99,
    non2xx: report.non2xx,
    errors: report.errors + report.timeouts,
    totalRequests: report.requests.total,
    // Over the whole measured run, so autocannon's own start-up is counted against both, slightly.
    serverCpuPercent: serverSeconds === undefined ? undefined : percent(serverSeconds),
    serverCpuMicrosPerRequest: serverSeconds === undefined || report.requests.total === 0 ? undefined : (serverSeconds * 1e6) / report.requests.total,
    loadGeneratorCpuPercent: generatorSeconds === undefined ? undefined : percent(generatorSeconds),
    elsewhereCpuPercent:
      machineSeconds === undefined || serverSeconds === undefined || generatorSeconds === undefined
        ? undefined
        : Math.max(0, percent(machineSeconds - serverSeconds - generatorSeconds)),
  }
}

async function autocannonRun(args: string[], durationSeconds: number) {
  const proc = Bun.spawn(['node', autocannon, '-j', '-n', ...args], { stdout: 'pipe', stderr: 'pipe' })
  const killer = setTimeout(() => proc.kill('SIGKILL'), (durationSeconds + graceSeconds) * 1000)
  try {
    const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited])
    if (code !== 0) throw new Error(`autocannon exited with ${code}: ${stderr.trim()}`)
    const cpu = proc.resourceUsage()?.cpuTime.total
    return { report: JSON.parse(stdout) as AutocannonReport, cpuMicros: cpu === undefined ? undefined : Number(cpu) }
  } finally {
    clearTimeout(killer)
  }
}
