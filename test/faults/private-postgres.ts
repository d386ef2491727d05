/**
 * A PostgreSQL server of the test's own, in a temp directory on a random port of 127.0.0.1, that the test may
 * kill (SIGKILL to the postmaster, as a crash or an out-of-memory kill would) and start again on the same data
 * and port. The shared server of DATABASE_URL is never touched.
 */
import { chownSync, existsSync, readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import type { Subprocess } from 'bun'
import { freePort } from '../deployment/files.ts'
import { tempDir } from '../helpers.ts'

/** The newest installed server's bin directory (Debian's layout first, then the PATH). */
function serverBin(): string | undefined {
  const root = '/usr/lib/postgresql'
  if (existsSync(root)) {
    const versions = readdirSync(root)
      .filter((v) => existsSync(join(root, v, 'bin', 'initdb')))
      .sort((a, b) => Number(b) - Number(a))
    if (versions[0]) return join(root, versions[0], 'bin')
  }
  const initdb = Bun.which('initdb')
  return initdb ? initdb.slice(0, initdb.lastIndexOf('/')) : undefined
}

export const postgresBin = serverBin()

// initdb and postgres refuse to run as root: as root, they run as the postgres account.
const asRoot = process.getuid?.() === 0
function serverUser(): { uid: number; gid: number } | undefined {
  if (!asRoot) return undefined
  const line = readFileSync('/etc/passwd', 'utf8')
    .split('\n')
    .find((l) => l.startsWith('postgres:'))
  if (!line) return undefined
  const [, , uid, gid] = line.split(':')
  return { uid: Number(uid), gid: Number(gid) }
}
const user = serverUser()
const asServerUser = (command: string[]) => (user ? ['runuser', '-u', 'postgres', '--', ...command] : command)

/** Why a private server cannot run here, or undefined when it can. */
export const privatePostgresMissing = !postgresBin
  ? 'initdb is not installed'
  : asRoot && !user
    ? 'running as root and there is no postgres account'
    : undefined

export interface PrivatePostgres {
  readonly url: string
  /** SIGKILL to the postmaster; resolves once it and its backends are gone. */
  kill(): Promise<void>
  /** Starts the server again on the same data and port (unless it runs); resolves once it accepts connections. */
  start(): Promise<void>
  /** Kills it and removes its directory. */
  remove(): Promise<void>
}

const pidAlive = (pid: number) => {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

/** Children of `pid`, from /proc: the postmaster's backends and auxiliary processes. */
function childrenOf(pid: number): number[] {
  const found: number[] = []
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8')
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1])
      if (ppid === pid) found.push(Number(entry))
    } catch {
      // Gone while listing.
    }
  }
  return found
}

export async function startPrivatePostgres(): Promise<PrivatePostgres> {
  if (privatePostgresMissing) throw new Error(`no private PostgreSQL: ${privatePostgresMissing}`)
  const dir = tempDir('svc-private-pg-')
  if (user) chownSync(dir.path, user.uid, user.gid)
  const data = join(dir.path, 'data')
  const init = Bun.spawnSync(asServerUser([join(postgresBin!, 'initdb'), '-D', data, '-A', 'trust', '-U', 'postgres', '--no-sync']), { cwd: dir.path })
  if (init.exitCode !== 0) throw new Error(`initdb failed: ${init.stderr.toString()}`)
  const port = freePort()
  let runner: Subprocess | undefined

  const postmasterPid = () => {
    try {
      return Number(readFileSync(join(data, 'postmaster.pid'), 'utf8').split('\n')[0])
    } catch {
      return undefined
    }
  }

  const start = async () => {
    const running = postmasterPid()
    if (running !== undefined && pidAlive(running)) return
    runner = Bun.spawn(
      asServerUser([join(postgresBin!, 'postgres'), '-D', data, '-p', String(port), '-k', dir.path, '-c', 'listen_addresses=127.0.0.1', '-c', 'fsync=off']),
      { cwd: dir.path, stdin: 'ignore', stdout: 'ignore', stderr: 'ignore' },
    )
    for (let attempt = 0; ; attempt++) {
      const ready = Bun.spawnSync([join(postgresBin!, 'pg_isready'), '-q', '-h', '127.0.0.1', '-p', String(port)])
      if (ready.exitCode === 0) return
      if (runner.exitCode !== null) throw new Error(`postgres exited with ${runner.exitCode}`)
      if (attempt === 200) throw new Error('postgres did not accept connections within 20 s')
      await Bun.sleep(100)
    }
  }

  const kill = async () => {
    const pid = postmasterPid()
    if (pid === undefined || !pidAlive(pid)) return
    const backends = childrenOf(pid)
    process.kill(pid, 'SIGKILL')
    // Backends leave on their own once the postmaster is gone; one that lingers would hold the shared
    // memory and keep the next start from running.
    for (let attempt = 0; attempt < 50 && backends.some(pidAlive); attempt++) await Bun.sleep(100)
    for (const backend of backends.filter(pidAlive)) process.kill(backend, 'SIGKILL')
    await runner?.exited
  }

  await start()
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    kill,
    start,
    async remove() {
      await kill()
      dir.remove()
    },
  }
}
