/** Shared pieces of the sandbox suites: a sandbox built for tests, a witness server, and a survivor check. */
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, realpathSync, rmSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { memoryLogger } from '../../src/log.ts'
import { createSandbox, type SandboxOptions } from '../../src/sandbox/index.ts'

/** Small limits so the containment cases end quickly. */
export const TEST_LIMITS = { timeoutMs: 8000, memoryMb: 128, maxOutputBytes: 64 * 1024, maxProcesses: 32 }

export function makeSandbox(options: Partial<SandboxOptions> = {}) {
  const logger = memoryLogger()
  const sandbox = createSandbox({ bunPath: process.execPath, defaults: TEST_LIMITS, logger, ...options })
  return { sandbox, logger }
}

/** Log lines at warn or above: a clean run writes none. */
export const problems = (logger: ReturnType<typeof memoryLogger>) => logger.lines.filter((l) => l.level === 'warn' || l.level === 'error')

/** A unique word to put in the command lines of processes a case starts, so leftovers can be found. */
export const marker = (name: string) => `sbxmark-${name}-${crypto.randomUUID().slice(0, 8)}`

/** Pids of live (non-zombie) processes whose command line contains `word`, across the whole machine. */
export async function processesWith(word: string): Promise<number[]> {
  const pgrep = Bun.spawn(['pgrep', '-f', word], { stdout: 'pipe', stderr: 'ignore' })
  const pids = (await new Response(pgrep.stdout).text()).split('\n').filter(Boolean).map(Number)
  await pgrep.exited
  const live: number[] = []
  for (const pid of pids) {
    const status = await Bun.file(`/proc/${pid}/status`)
      .text()
      .catch(() => '')
    if (status && !/^State:\s+[ZX]/m.test(status)) live.push(pid)
  }
  return live
}

/** Waits until `check` holds, or gives up after `ms`. */
export async function waitFor(check: () => boolean | Promise<boolean>, ms = 5000): Promise<boolean> {
  const until = Date.now() + ms
  while (Date.now() < until) {
    if (await check()) return true
    await Bun.sleep(20)
  }
  return check()
}

/** A server in the test process that counts every request it sees. */
export function startWitness() {
  let hits = 0
  const server = Bun.serve({
    port: 0,
    hostname: '127.0.0.1',
    fetch() {
      hits++
      return new Response('still here')
    },
  })
  return { url: `http://127.0.0.1:${server.port}/`, hits: () => hits, stop: () => server.stop(true) }
}

const HIDDEN_BY_SANDBOX = ['/tmp', '/var/tmp', '/run', '/dev/shm']

/**
 * Where the test data directories go: the project tree (under a git-ignored `data/`), unless the project itself
 * sits where the sandbox's private /tmp hides everything (a checkout under /tmp), then a directory in /var/lib.
 */
function dataParent(): string {
  const tree = realpathSync(import.meta.dir)
  const hidden = HIDDEN_BY_SANDBOX.some((p) => tree === p || tree.startsWith(`${p}/`))
  return hidden ? '/var/lib/realtime-ai-backend-sandbox-tests' : join(import.meta.dir, 'data')
}

/**
 * A service data directory owned by root, mode 0700 holding a 0600 secret (or 0755 and 0644), beside a
 * world-readable `control.json` that proves a read attempt really reaches the file system.
 */
export function makeDataDir(access: 'private' | 'world-readable' = 'private') {
  const parent = dataParent()
  mkdirSync(parent, { recursive: true, mode: 0o755 })
  chmodSync(parent, 0o755)
  writeFileSync(join(parent, 'control.json'), JSON.stringify({ name: 'realtime-ai-backend' }), { mode: 0o644 })
  const dir = mkdtempSync(join(parent, 'service-'))
  chmodSync(dir, access === 'private' ? 0o700 : 0o755)
  const secret = `secret-${crypto.randomUUID()}`
  const file = join(dir, 'secrets.json')
  writeFileSync(file, JSON.stringify({ jwtSecret: secret }))
  chmodSync(file, access === 'private' ? 0o600 : 0o644)
  return {
    dir,
    secret,
    remove() {
      rmSync(dir, { recursive: true, force: true })
      // The parent goes with the last suite's directory.
      if (readdirSync(parent).every((name) => name === 'control.json')) rmSync(parent, { recursive: true, force: true })
    },
  }
}

/** Code that tries to read the data directory and a world-readable control file, and prints what happened. */
export function readAttempt(dataDir: string): string {
  return `import { readdirSync, readFileSync } from 'node:fs'
const attempt = (label: string, read: () => unknown) => {
  try { console.log(label, 'READ', JSON.stringify(read())) } catch (e) { console.log(label, 'DENIED', (e as NodeJS.ErrnoException).code) }
}
attempt('secret', () => readFileSync(${JSON.stringify(join(dataDir, 'secrets.json'))}, 'utf8'))
attempt('listing', () => readdirSync(${JSON.stringify(dataDir)}))
attempt('control', () => JSON.parse(readFileSync(${JSON.stringify(join(dirname(dataDir), 'control.json'))}, 'utf8')).name)
`
}
