/**
 * Both launchers, checked from the host: bubblewrap where `bwrap` is installed (the default there), and the unshare
 * launcher it falls back to. What each run is must be seen from outside, not only from what the run says.
 */
import { afterAll, describe, expect, test } from 'bun:test'
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { chooseLauncher } from '../../src/sandbox/launcher.ts'
import { makeDataDir, makeSandbox, marker, processesWith, startWitness, waitFor } from './support.ts'

const bwrap = Bun.which('bwrap')
const asRoot = process.getuid?.() === 0
const dataDir = makeDataDir()
const witness = startWitness()
const kinds = [...(bwrap ? (['bubblewrap'] as const) : []), 'unshare'] as const
const sandboxes = Object.fromEntries(kinds.map((kind) => [kind, makeSandbox({ hiddenPaths: [dataDir.dir], launcher: kind }).sandbox]))
const { sandbox: chosen } = makeSandbox()

let counter = 0
function workspace() {
  const dir = join(dataDir.dir, 'workspaces', `launcher-${++counter}`)
  mkdirSync(dir, { recursive: true, mode: 0o700 })
  return dir
}

/** Uid fields (real, effective, saved, file system) of a process, read from the host's /proc. */
function hostUids(pid: number): number[] {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8').match(/^Uid:\s+(.*)$/m)?.[1] ?? ''
  return line.split(/\s+/).map(Number)
}

/**
 * The processes a command line started, by their argv: its shell (`/bin/sh -c <command>`) and a child naming `child`.
 * The launcher's own processes carry the command line too, as one argument among theirs.
 */
async function commandProcesses(command: string, child: string): Promise<number[]> {
  const pids = await processesWith(child)
  return pids.filter((pid) => {
    const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')
    return argv[0] === '/bin/sh' && argv[1] === '-c' && (argv[2] === command || argv[3] === child)
  })
}

afterAll(async () => {
  await Promise.all([chosen.close(), ...Object.values(sandboxes).map((s) => s.close())])
  witness.stop()
  dataDir.remove()
})

describe('which launcher', () => {
  test('bubblewrap is used where bwrap is installed, and the enforcement report says which launcher runs and why', () => {
    expect(chosen.available).toBe(true)
    if (bwrap) expect(chosen.enforcement.isolation).toContain('by bubblewrap (bwrap is installed)')
    else expect(chosen.enforcement.isolation).toContain('by the unshare launcher (unshare')
    expect(sandboxes.unshare!.enforcement.isolation).toContain('unshare launcher')
    expect(sandboxes.unshare!.enforcement.isolation).toContain('chosen by configuration')
  })

  test('without bwrap the unshare launcher runs and says why; asked for bubblewrap alone, runs are refused', () => {
    // A PATH holding every tool but bwrap.
    const path = mkdtempSync(join(tmpdir(), 'no-bwrap-'))
    try {
      for (const tool of ['unshare', 'setpriv', 'prlimit', 'sh']) symlinkSync(Bun.which(tool)!, join(path, tool))
      const probeUid = asRoot ? 1_500_999_999 : undefined
      const fallback = chooseLauncher(process.execPath, probeUid, undefined, path)
      expect(fallback).toMatchObject({ available: true, launcher: { kind: 'unshare' }, why: 'bubblewrap not used: bwrap is not installed' })
      expect(chooseLauncher(process.execPath, probeUid, 'bubblewrap', path)).toEqual({ available: false, reason: 'bwrap is not installed' })
    } finally {
      rmSync(path, { recursive: true, force: true })
    }
  })
})

for (const kind of kinds) {
  const sandbox = sandboxes[kind]!
  describe(`${kind} launcher`, () => {
    test("the run's processes carry the run's uid on the host, with no capabilities and no_new_privs inside", async () => {
      const child = marker(`uid-${kind}`)
      const dir = workspace()
      const command = `id -u; grep -E '^(CapEff|CapBnd|NoNewPrivs):' /proc/self/status; /bin/sh -c 'sleep 2; true' ${child} & sleep 2; wait`
      const running = sandbox.runCommand({ directory: dir, command })
      // The command's shell and the child it started.
      expect(await waitFor(async () => (await commandProcesses(command, child)).length === 2)).toBe(true)
      const pids = await commandProcesses(command, child)
      // As root, the directory was handed over to the run's uid before it started.
      const outside = asRoot ? statSync(dir).uid : process.getuid!()
      if (asRoot) expect(outside).not.toBe(0)
      for (const pid of pids) expect(hostUids(pid)).toEqual([outside, outside, outside, outside])
      const result = await running
      expect(result.verdict).toBe('passed')
      const [inside, ...status] = result.output.trim().split('\n')
      expect(Number(inside)).toBe(asRoot ? outside : 0)
      expect(status).toEqual(['CapEff:\t0000000000000000', 'CapBnd:\t0000000000000000', 'NoNewPrivs:\t1'])
    })

    test('a hidden path stays unreadable, and what hides it cannot be unmounted', async () => {
      const secret = join(dataDir.dir, 'secrets.json')
      const result = await sandbox.runCommand({
        directory: workspace(),
        command: `cat ${secret} || echo DENIED; umount ${dataDir.dir} || echo KEPT; umount -l ${dataDir.dir} || echo KEPT; cat ${secret} || echo DENIED`,
      })
      expect(result.output).not.toContain(dataDir.secret)
      expect(result.output.match(/DENIED/g)?.length).toBe(2)
      expect(result.output.match(/KEPT/g)?.length).toBe(2)
    })

    test('the network is unreachable: only its own loopback at most, and the server on the host sees nothing', async () => {
      const before = witness.hits()
      const result = await sandbox.run({
        language: 'typescript',
        mode: 'run',
        files: {
          'main.ts': `import { networkInterfaces } from 'node:os'
console.log(JSON.stringify(Object.keys(networkInterfaces())))
await fetch(${JSON.stringify(witness.url)}).then(() => console.log('REACHED'), (e) => console.log('BLOCKED', e.code))
`,
        },
      })
      const [interfaces, outcome] = result.output.trim().split('\n')
      expect((JSON.parse(interfaces!) as string[]).filter((name) => name !== 'lo')).toEqual([])
      expect(outcome).toStartWith('BLOCKED')
      expect(witness.hits()).toBe(before)
    })

    test('the program holds no open directory of the host: the copy of its files was made and closed before it started', async () => {
      const result = await sandbox.run({
        language: 'typescript',
        mode: 'run',
        files: {
          'main.ts': `import { fstatSync, readdirSync } from 'node:fs'
const fds = readdirSync('/proc/self/fd').map(Number).filter((fd) => fd > 2)
console.log('directories', fds.filter((fd) => { try { return fstatSync(fd).isDirectory() } catch { return false } }).length)
console.log('files', readdirSync('.').sort().join(','))
`,
          'lib/data.txt': 'x',
        },
      })
      expect(result.output).toBe('directories 0\nfiles lib,main.ts\n')
    })
  })
}

// BIN_DIR, first on a command's PATH, is a name in the host's world-writable /tmp until the launcher replaces /tmp.
const planted = '/tmp/.sandbox-bin'
describe.skipIf(existsSync(planted))('tools planted in the host /tmp', () => {
  test('are never run by a launcher acting for the service, before or after /tmp is replaced', async () => {
    const witnessDir = mkdtempSync(join(tmpdir(), 'planted-witness-'))
    chmodSync(witnessDir, 0o1777)
    mkdirSync(planted, { mode: 0o755 })
    try {
      for (const tool of ['mount', 'umount', 'find', 'chown', 'cp', 'mkdir', 'ln', 'prlimit', 'setpriv', 'bwrap', 'unshare', 'sh', 'cat', 'id']) {
        writeFileSync(join(planted, tool), `#!/bin/sh\ntouch ${witnessDir}/${tool}\necho planted ${tool} ran\nexit 1\n`, { mode: 0o755 })
      }
      for (const kind of kinds) {
        const result = await sandboxes[kind]!.runCommand({ directory: workspace(), command: 'echo ok' })
        expect(result).toMatchObject({ verdict: 'passed', output: 'ok\n' })
      }
      expect(readdirSync(witnessDir)).toEqual([])
    } finally {
      rmSync(planted, { recursive: true, force: true })
      rmSync(witnessDir, { recursive: true, force: true })
    }
  })
})
