import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

const root = join(import.meta.dir, '..', '..')
const startTimeoutMs = 30_000

export interface Running {
  url: string
  pid: number
  /** What the listening line said about storage and Redis, so a figure is never read without them. */
  facts: Record<string, unknown>
  stop(): Promise<void>
}

/**
 * Starts `bun src/main/index.ts` on 127.0.0.1 with a fresh DATA_DIR. Its logs go to a file rather than a pipe: at
 * info level it writes one line per request, and a pipe nobody reads would stall it mid-benchmark.
 */
export async function startService(env: Record<string, string> = {}): Promise<Running> {
  // The port is only learnt from the info-level "listening" line.
  if (env.LOG_LEVEL && !['debug', 'info'].includes(env.LOG_LEVEL)) throw new Error(`LOG_LEVEL=${env.LOG_LEVEL} would hide the listening line`)
  const dir = mkdtempSync(join(tmpdir(), 'bench-service-'))
  const logPath = join(dir, 'stdout.log')
  const errPath = join(dir, 'stderr.log')
  // --no-env-file: a developer's .env (a REDIS_URL, say) must not change what is measured.
  const proc = Bun.spawn([process.execPath, '--no-env-file', 'src/main/index.ts'], {
    cwd: root,
    env: {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? dir,
      HOST: '127.0.0.1',
      PORT: '0',
      DATA_DIR: join(dir, 'data'),
      LOG_LEVEL: 'info',
      LOG_FORMAT: 'json',
      ...env,
    },
    stdout: Bun.file(logPath),
    stderr: Bun.file(errPath),
  })
  const cleanUp = () => rmSync(dir, { recursive: true, force: true })

  const deadline = Date.now() + startTimeoutMs
  try {
    for (;;) {
      const line = (await Bun.file(logPath).text()).split('\n').find((l) => l.includes('"msg":"listening"'))
      if (line) {
        const { url, storage, redis } = JSON.parse(line) as { url: string; storage: unknown; redis: unknown }
        return {
          url,
          pid: proc.pid,
          facts: { storage, redis },
          stop: async () => {
            proc.kill('SIGTERM')
            await proc.exited
            cleanUp()
          },
        }
      }
      if (proc.exitCode !== null) throw new Error(`service exited with ${proc.exitCode}: ${await Bun.file(errPath).text()}`)
      if (Date.now() > deadline) throw new Error(`service did not log "listening" within ${startTimeoutMs} ms`)
      await Bun.sleep(50)
    }
  } catch (err) {
    proc.kill('SIGKILL')
    await proc.exited
    cleanUp()
    throw err
  }
}

/**
 * Starts a baseline from bench/baseline/ (bare-server.ts by default) in its own process, as the service
 * runs in its own. The script prints `listening <url>` once.
 */
export async function startBareBaseline(script = 'bare-server.ts', env: Record<string, string> = {}): Promise<Running> {
  const proc = Bun.spawn([process.execPath, '--no-env-file', join(root, 'bench', 'baseline', script)], {
    cwd: root,
    env: { PATH: process.env.PATH ?? '', ...env },
    stdout: 'pipe',
    stderr: 'inherit',
  })
  const timeout = setTimeout(() => proc.kill('SIGKILL'), startTimeoutMs)
  try {
    // It prints exactly one line and nothing after, so the pipe cannot fill up.
    const reader = proc.stdout.getReader()
    const decoder = new TextDecoder()
    let buffered = ''
    let url: string | undefined
    while (!url) {
      const { value, done } = await reader.read()
      if (done) throw new Error(`bare baseline exited with ${await proc.exited} before listening`)
      buffered += decoder.decode(value, { stream: true })
      url = /^listening (http:\S+)$/m.exec(buffered)?.[1]
    }
    reader.releaseLock()
    return {
      url,
      pid: proc.pid,
      facts: {},
      stop: async () => {
        proc.kill('SIGTERM')
        await proc.exited
      },
    }
  } catch (err) {
    proc.kill('SIGKILL')
    throw err
  } finally {
    clearTimeout(timeout)
  }
}

/** Signs in to a running service and answers the access token; a refused sign-in stops the benchmark. */
export async function accessTokenFor(url: string, credentials: { email: string; password: string }): Promise<string> {
  const res = await fetch(`${url}/auth/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(credentials) })
  if (!res.ok) throw new Error(`login answered ${res.status}: ${await res.text()}`)
  return ((await res.json()) as { accessToken: string }).accessToken
}
