/**
 * One cold start of a server process: from spawn to its first GET /health 200, with the CPU it spent getting there,
 * then its resident memory once it has sat idle for a while. Each start gets a fresh directory (DATA_DIR, logs) and a
 * port chosen here, so the service and a baseline are timed by the same clock and the same poll.
 */
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

export interface ColdStart {
  /** Spawn to the first 200 from /health, wall clock. */
  readyMs: number
  /** CPU time of all the process's threads at that moment: what a busy neighbour disturbs least. */
  cpuMs: number | undefined
  /** VmRSS after `settleMs` of idling. */
  idleRssMb: number | undefined
}

export interface ColdStartOptions {
  command: string[]
  cwd: string
  env?: Record<string, string>
  /** How long the process idles before its memory is read. Default 3000. */
  settleMs?: number
  /** Give up on a start after this long. Default 30000. */
  timeoutMs?: number
}

const pollMs = 2

export async function coldStart(options: ColdStartOptions): Promise<ColdStart> {
  const { settleMs = 3000, timeoutMs = 30_000 } = options
  const dir = mkdtempSync(join(tmpdir(), 'bench-cold-start-'))
  const port = freePort()
  const url = `http://127.0.0.1:${port}/health`
  const startedAt = performance.now()
  const proc = Bun.spawn(options.command, {
    cwd: options.cwd,
    env: {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? dir,
      HOST: '127.0.0.1',
      PORT: String(port),
      DATA_DIR: join(dir, 'data'),
      ...options.env,
    },
    // A file, not a pipe: nobody reads it while the process runs.
    stdout: Bun.file(join(dir, 'stdout.log')),
    stderr: Bun.file(join(dir, 'stderr.log')),
  })
  try {
    let readyMs: number | undefined
    while (readyMs === undefined) {
      if (proc.exitCode !== null) throw new Error(`${options.command.join(' ')} exited with ${proc.exitCode}: ${readFileSync(join(dir, 'stderr.log'), 'utf8')}`)
      if (performance.now() - startedAt > timeoutMs) throw new Error(`${options.command.join(' ')} did not answer /health within ${timeoutMs} ms`)
      const status = await fetch(url, { signal: AbortSignal.timeout(timeoutMs) }).then(
        (res) => res.status,
        () => 0,
      )
      if (status === 200) readyMs = performance.now() - startedAt
      else await Bun.sleep(pollMs)
    }
    const cpuMs = cpuMsOf(proc.pid)
    await Bun.sleep(settleMs)
    return { readyMs, cpuMs, idleRssMb: rssMbOf(proc.pid) }
  } finally {
    proc.kill('SIGTERM')
    const killer = setTimeout(() => proc.kill('SIGKILL'), 15_000)
    await proc.exited
    clearTimeout(killer)
    rmSync(dir, { recursive: true, force: true })
  }
}

/** A port the kernel had free a moment ago. */
function freePort(): number {
  const probe = Bun.listen({ hostname: '127.0.0.1', port: 0, socket: { data() {} } })
  const { port } = probe
  probe.stop(true)
  return port
}

/** Sum of every thread's run time, in nanoseconds, from /proc/<pid>/task/<tid>/schedstat (its first field). */
function cpuMsOf(pid: number): number | undefined {
  try {
    let ns = 0
    for (const tid of readdirSync(`/proc/${pid}/task`)) ns += Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0])
    return ns / 1e6
  } catch {
    return undefined
  }
}

function rssMbOf(pid: number): number | undefined {
  try {
    const kb = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]
    return kb === undefined ? undefined : Number(kb) / 1024
  } catch {
    return undefined
  }
}
