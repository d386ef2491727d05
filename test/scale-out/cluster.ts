/**
 * Several processes of the service, started the way an operator starts them (`npm start`), on
 * random ports of 127.0.0.1, sharing one throwaway PostgreSQL database, Redis and DATA_DIR.
 */
import type { Subprocess } from 'bun'
import { join } from 'node:path'
import pkg from '../../package.json' with { type: 'json' }
import { CHEAP_PASSWORD_HASHING, freshPostgres, tempDir } from '../helpers.ts'

const projectRoot = join(import.meta.dir, '../..')
// `bun <flags> src/main/index.ts`, as the start script has it.
const startArguments = pkg.scripts.start.split(/\s+/).slice(1)

export interface LogLine {
  level: string
  msg: string
  [field: string]: unknown
}

export interface ServiceProcess {
  readonly name: string
  readonly url: string
  readonly pid: number
  /** Every JSON log line written so far. */
  readonly logs: LogLine[]
  readonly exited: Promise<number>
  /** Resolves with the first log line (past or future) that `match` accepts. */
  waitForLog(match: (line: LogLine) => boolean, timeoutMs?: number): Promise<LogLine>
  request(path: string, init?: RequestInit): Promise<Response>
  /** SIGKILL: no drain, nothing written on the way out. */
  kill(): Promise<void>
  /** SIGTERM, then waits for the exit status. */
  stop(): Promise<number>
}

/**
 * Starts one process with `env` (on top of a minimal environment) and waits for its `listening` line; with
 * `asUser`, as that uid and gid with no supplementary groups, as an operator's unit or image runs it.
 */
export async function startServiceProcess(name: string, env: Record<string, string>, options: { asUser?: number } = {}): Promise<ServiceProcess> {
  const asUser = options.asUser === undefined ? [] : ['setpriv', `--reuid=${options.asUser}`, `--regid=${options.asUser}`, '--clear-groups', '--']
  const proc: Subprocess<'ignore', 'pipe', 'pipe'> = Bun.spawn([...asUser, process.execPath, ...startArguments], {
    cwd: projectRoot,
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: process.env.HOME ?? '/tmp', HOST: '127.0.0.1', PORT: '0', LOG_LEVEL: 'info', ...env },
    stdin: 'ignore',
    stdout: 'pipe',
    stderr: 'pipe',
  })
  const logs: LogLine[] = []
  const waiters = new Set<{ match: (line: LogLine) => boolean; resolve: (line: LogLine) => void }>()
  let stderr = ''

  const readLines = async (stream: ReadableStream<Uint8Array>, onLine: (line: string) => void) => {
    const decoder = new TextDecoder()
    let buffered = ''
    for await (const chunk of stream) {
      buffered += decoder.decode(chunk, { stream: true })
      let newline: number
      while ((newline = buffered.indexOf('\n')) !== -1) {
        onLine(buffered.slice(0, newline))
        buffered = buffered.slice(newline + 1)
      }
    }
    if (buffered) onLine(buffered)
  }
  void readLines(proc.stdout, (text) => {
    let line: LogLine
    try {
      line = JSON.parse(text)
    } catch {
      return
    }
    logs.push(line)
    for (const waiter of waiters) if (waiter.match(line)) waiter.resolve(line)
  })
  void readLines(proc.stderr, (text) => (stderr += `${text}\n`))

  // A start from source takes tens of seconds on a loaded machine, beside other files of the suite.
  const waitForLog = (match: (line: LogLine) => boolean, timeoutMs = 60_000) => {
    const seen = logs.find(match)
    if (seen) return Promise.resolve(seen)
    return new Promise<LogLine>((resolve, reject) => {
      const waiter = {
        match,
        resolve: (line: LogLine) => {
          clearTimeout(timer)
          waiters.delete(waiter)
          resolve(line)
        },
      }
      const timer = setTimeout(() => {
        waiters.delete(waiter)
        reject(new Error(`${name}: no matching log line within ${timeoutMs} ms; stderr:\n${stderr}`))
      }, timeoutMs)
      waiters.add(waiter)
    })
  }

  const listening = await Promise.race([
    waitForLog((line) => line.msg === 'listening'),
    proc.exited.then((code) => {
      throw new Error(`${name} exited with ${code} before listening; stderr:\n${stderr}`)
    }),
  ]).catch((err) => {
    // A process that never said it listens is nobody's to stop later.
    proc.kill('SIGKILL')
    throw err
  })
  const url = String(listening.url)
  return {
    name,
    url,
    pid: proc.pid,
    logs,
    exited: proc.exited,
    waitForLog,
    request: (path, init) => fetch(url + path, init),
    async kill() {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL')
      await proc.exited
    },
    async stop() {
      proc.kill('SIGTERM')
      return proc.exited
    },
  }
}

export interface Cluster {
  /** Environment every process gets; `start` adds to it. */
  readonly env: Record<string, string>
  readonly dataDir: string
  readonly processes: ServiceProcess[]
  start(name: string, extra?: Record<string, string>): Promise<ServiceProcess>
  close(): Promise<void>
}

export const clusterAdmin = { email: 'owner@cluster.example', password: 'cluster-owner-password-1234' }

/**
 * A throwaway database and DATA_DIR, the given Redis, and shared secrets; processes start on demand.
 * Every process started is stopped (SIGKILL) by `close`, which then drops the database.
 */
export async function createCluster(redisUrl: string, env: Record<string, string> = {}): Promise<Cluster> {
  const pg = await freshPostgres()
  if (!pg) throw new Error('createCluster needs DATABASE_URL')
  const dir = tempDir('svc-cluster-')
  const shared: Record<string, string> = {
    DATABASE_URL: pg.url,
    REDIS_URL: redisUrl,
    DATA_DIR: dir.path,
    JWT_SECRET: `cluster-jwt-secret-${crypto.randomUUID()}`,
    TOKEN_ENCRYPTION_KEY: Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString('base64'),
    ADMIN_EMAIL: clusterAdmin.email,
    ADMIN_PASSWORD: clusterAdmin.password,
    ...CHEAP_PASSWORD_HASHING,
    ...env,
  }
  const processes: ServiceProcess[] = []
  return {
    env: shared,
    dataDir: dir.path,
    processes,
    async start(name, extra = {}) {
      const started = await startServiceProcess(name, { ...shared, ...extra })
      processes.push(started)
      return started
    },
    async close() {
      await Promise.all(processes.map((p) => p.kill()))
      await pg.drop()
      dir.remove()
    },
  }
}

/** Signs in through `via` and answers the token pair. */
export async function signIn(via: ServiceProcess, credentials = clusterAdmin) {
  const res = await via.request('/auth/login', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(credentials) })
  if (res.status !== 200) throw new Error(`login failed: ${res.status} ${await res.text()}`)
  return (await res.json()) as { accessToken: string; refreshToken: string; user: { id: string; organizationId: string } }
}

export const json = (body: unknown, token?: string): RequestInit => ({
  method: 'POST',
  headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
  body: JSON.stringify(body),
})
