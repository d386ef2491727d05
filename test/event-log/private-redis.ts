/**
 * A redis-server of the test's own on a random port (never the shared one), started, killed and restarted by
 * its PID, with nothing saved to disk: a restart comes back empty, as a crashed cache would.
 */
import { existsSync } from 'node:fs'
import type { Subprocess } from 'bun'

export const REDIS_SERVER = '/usr/bin/redis-server'
export const redisServerInstalled = existsSync(REDIS_SERVER)

export interface PrivateRedis {
  url: string
  port: number
  /** SIGKILLs the server (by its PID) and waits for it to exit. */
  kill(): Promise<void>
  /** Starts it again on the same port. */
  start(): Promise<void>
  /** SIGSTOPs it: connections stay open and nothing answers, as with a hung server or a lost network. */
  pause(): void
  /** SIGCONTs it. */
  resume(): void
  stop(): Promise<void>
}

async function answers(port: number): Promise<boolean> {
  try {
    const socket = await Bun.connect({ hostname: '127.0.0.1', port, socket: { data() {} } })
    socket.end()
    return true
  } catch {
    return false
  }
}

export async function startPrivateRedis(): Promise<PrivateRedis> {
  let proc: Subprocess | undefined
  let port = 0
  const launch = async () => {
    proc = Bun.spawn([REDIS_SERVER, '--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdout: 'ignore', stderr: 'ignore' })
    for (let i = 0; i < 100; i++) {
      if (proc.exitCode !== null) return false
      if (await answers(port)) return true
      await Bun.sleep(20)
    }
    return false
  }
  for (let attempt = 0; attempt < 10; attempt++) {
    port = 20_000 + Math.floor(Math.random() * 40_000)
    if (await launch()) break
    proc?.kill('SIGKILL')
    proc = undefined
  }
  if (!proc) throw new Error('could not start a private redis-server')
  const kill = async () => {
    const running = proc
    proc = undefined
    if (!running) return
    running.kill('SIGKILL')
    await running.exited
  }
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    kill,
    async start() {
      if (!(await launch())) throw new Error(`redis-server did not start again on port ${port}`)
    },
    pause: () => proc?.kill('SIGSTOP'),
    resume: () => proc?.kill('SIGCONT'),
    stop: async () => {
      proc?.kill('SIGCONT')
      await kill()
    },
  }
}

/** Polls `attempt` until it resolves; answers how long that took, or throws after `withinMs`. */
export async function recovery(attempt: () => Promise<unknown>, withinMs: number, what: string): Promise<number> {
  const started = performance.now()
  let last: unknown
  while (performance.now() - started < withinMs) {
    try {
      await attempt()
      return performance.now() - started
    } catch (err) {
      last = err
      await Bun.sleep(50)
    }
  }
  throw new Error(`${what} did not recover within ${withinMs} ms: ${String(last)}`)
}
