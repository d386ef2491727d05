/** The service as operators run it: a real process, from source or as the compiled executable. */
import type { Subprocess } from 'bun'
import { join } from 'node:path'

export const ROOT = join(import.meta.dir, '..', '..')

/** `bun src/main/index.ts ARGS`, or `bun src/main/cli.ts ARGS` with `script: 'src/main/cli.ts'`. */
export const fromSource = (args: string[], script = 'src/main/index.ts') => [process.execPath, '--no-env-file', join(ROOT, script), ...args]

/** Only what is given: no developer's DATABASE_URL or REDIS_URL leaks in. */
export function environment(env: Record<string, string>): Record<string, string> {
  return { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', LOG_LEVEL: 'warn', ...env }
}

export interface Finished {
  exitCode: number
  stdout: string
  stderr: string
}

/** Runs a command to its end (at most 30 s) and answers what it printed. */
export async function runToEnd(command: string[], env: Record<string, string>, cwd = ROOT): Promise<Finished> {
  const proc = Bun.spawn(command, { cwd, env: environment(env), stdout: 'pipe', stderr: 'pipe', stdin: 'ignore' })
  const timer = setTimeout(() => proc.kill('SIGKILL'), 30_000)
  try {
    const [stdout, stderr, exitCode] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited])
    return { exitCode, stdout, stderr }
  } finally {
    clearTimeout(timer)
  }
}

export interface RunningService {
  readonly proc: Subprocess<'ignore', 'pipe', 'pipe'>
  readonly url: string
  /** Every JSON log line so far. */
  readonly logs: Record<string, unknown>[]
  /** SIGTERM, then the exit code. */
  stop(): Promise<number>
}

/** Starts the service with PORT=0 on 127.0.0.1 and waits for its `listening` line. */
export async function startService(command: string[], env: Record<string, string>): Promise<RunningService> {
  const proc = Bun.spawn(command, {
    cwd: ROOT,
    env: environment({ HOST: '127.0.0.1', PORT: '0', LOG_LEVEL: 'info', LOG_FORMAT: 'json', ...env }),
    stdout: 'pipe',
    stderr: 'pipe',
    stdin: 'ignore',
  })
  const logs: Record<string, unknown>[] = []
  let url: string | undefined
  let waiting: (() => void) | undefined
  // Read all along, so a busy log never fills the pipe.
  void (async () => {
    let buffered = ''
    for await (const chunk of proc.stdout.pipeThrough(new TextDecoderStream())) {
      buffered += chunk
      const lines = buffered.split('\n')
      buffered = lines.pop()!
      for (const line of lines) {
        if (!line.startsWith('{')) continue
        const entry = JSON.parse(line) as Record<string, unknown>
        logs.push(entry)
        if (entry.msg === 'listening') url = entry.url as string
      }
      waiting?.()
    }
    waiting?.()
  })()
  // A start from source takes tens of seconds on a loaded machine, beside other files of the suite.
  const deadline = Date.now() + 90_000
  while (!url) {
    if (proc.exitCode !== null || Date.now() > deadline) {
      proc.kill('SIGKILL')
      throw new Error(`the service did not start (exit ${proc.exitCode}): ${await new Response(proc.stderr).text()}`)
    }
    await Promise.race([new Promise<void>((resolve) => (waiting = resolve)), Bun.sleep(100)])
  }
  return {
    proc,
    url,
    logs,
    async stop() {
      proc.kill('SIGTERM')
      const timer = setTimeout(() => proc.kill('SIGKILL'), 20_000)
      try {
        return await proc.exited
      } finally {
        clearTimeout(timer)
      }
    },
  }
}

/** A TCP port on 127.0.0.1 that nothing listens on: taken from the kernel, then released. */
export function closedPort(): number {
  const listener = Bun.listen({ hostname: '127.0.0.1', port: 0, socket: { data() {} } })
  const port = listener.port
  listener.stop(true)
  return port
}
