/**
 * Which launcher isolates the runs on this machine, decided once at start-up: bubblewrap (bubblewrap.ts) where
 * `bwrap` is installed and a probe launch through it works, else the unshare launcher (unshare.ts), with the
 * reason. The probe launches Bun once through the full launcher: it proves the namespaces, the mounts, the uid
 * switch and that the run's uid can execute the Bun binary.
 */
import { chownSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { bubblewrapLauncher } from './bubblewrap.ts'
import { READY_MARKER, sandboxEnv, type Launcher, type LauncherKind } from './launch.ts'
import { unshareLauncher } from './unshare.ts'

export { BIN_DIR, READY_MARKER, SANDBOX_DIR, sandboxEnv, visibleProgram, type Launcher, type LauncherKind, type LaunchOptions } from './launch.ts'

export type LauncherChoice =
  /** `why`: how this launcher came to be used, for the enforcement report. */
  { available: true; launcher: Launcher; why: string } | { available: false; reason: string }

/** Absolute paths of `names` on `searchPath` (the service's PATH when undefined), or the names that are missing. */
function findTools<T extends string>(names: readonly T[], searchPath: string | undefined): { tools: Record<T, string> } | { missing: T[] } {
  const found = Object.fromEntries(names.map((name) => [name, Bun.which(name, searchPath === undefined ? undefined : { PATH: searchPath })])) as Record<
    T,
    string | null
  >
  const missing = names.filter((name) => !found[name])
  return missing.length > 0 ? { missing } : { tools: found as Record<T, string> }
}

/** Launches Bun through `launcher`; undefined when it ran as `probeUid` (root of its namespace without one), else why not. */
function probe(launcher: Launcher, bunPath: string, probeUid: number | undefined): string | undefined {
  const dir = mkdtempSync(join(tmpdir(), 'sandbox-probe-'))
  try {
    // The run copies its files in as its own uid (bubblewrap), so it must own them, as for a real run.
    if (probeUid !== undefined) chownSync(dir, probeUid, probeUid)
    const result = Bun.spawnSync({
      cmd: launcher.command({
        uid: probeUid,
        workDir: dir,
        tmpKb: 1024,
        nproc: undefined,
        hiddenPaths: [],
        cgroupProcs: [],
        command: [bunPath, '-e', 'console.log(process.getuid())'],
      }),
      cwd: dir,
      env: sandboxEnv(),
      stdin: 'ignore',
      stdout: 'pipe',
      stderr: 'pipe',
      timeout: 15_000,
    })
    const out = result.stdout.toString().trim()
    const err = result.stderr.toString().trim()
    if (result.exitCode === 0 && out === String(probeUid ?? 0) && err.includes(READY_MARKER)) return undefined
    const detail = [err.replace(READY_MARKER, '').trim(), out].filter(Boolean).join(' | ').slice(0, 500)
    return `probe launch failed (exit ${result.exitCode ?? result.signalCode}): ${detail || 'no output'}`
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

function tryBubblewrap(bunPath: string, probeUid: number | undefined, searchPath: string | undefined): { launcher: Launcher } | { reason: string } {
  const found = findTools(['bwrap', 'setpriv', 'prlimit', 'sh'] as const, searchPath)
  if ('missing' in found) return { reason: found.missing.includes('bwrap') ? 'bwrap is not installed' : `missing ${found.missing.join(', ')}` }
  const launcher = bubblewrapLauncher(found.tools)
  const failure = probe(launcher, bunPath, probeUid)
  return failure ? { reason: `bwrap (${found.tools.bwrap}): ${failure}` } : { launcher }
}

function tryUnshare(bunPath: string, probeUid: number | undefined, searchPath: string | undefined): { launcher: Launcher } | { reason: string } {
  const found = findTools(['unshare', 'setpriv', 'prlimit', 'sh'] as const, searchPath)
  if ('missing' in found) return { reason: `missing ${found.missing.join(', ')} (util-linux)` }
  const launcher = unshareLauncher(found.tools)
  const failure = probe(launcher, bunPath, probeUid)
  return failure ? { reason: failure } : { launcher }
}

/**
 * The launcher runs use. `preference` names one and uses only it (runs are refused when it cannot work);
 * without it, bubblewrap when it works, else the unshare launcher. The tools are looked up on `searchPath`
 * (default: the service's PATH).
 */
export function chooseLauncher(bunPath: string, probeUid: number | undefined, preference?: LauncherKind, searchPath?: string): LauncherChoice {
  if (preference !== 'unshare') {
    const bubblewrap = tryBubblewrap(bunPath, probeUid, searchPath)
    if ('launcher' in bubblewrap) return { available: true, launcher: bubblewrap.launcher, why: preference ? 'chosen by configuration' : 'bwrap is installed' }
    if (preference === 'bubblewrap') return { available: false, reason: bubblewrap.reason }
    const unshare = tryUnshare(bunPath, probeUid, searchPath)
    if ('launcher' in unshare) return { available: true, launcher: unshare.launcher, why: `bubblewrap not used: ${bubblewrap.reason}` }
    return { available: false, reason: `${unshare.reason}; bubblewrap not used: ${bubblewrap.reason}` }
  }
  const unshare = tryUnshare(bunPath, probeUid, searchPath)
  return 'launcher' in unshare ? { available: true, launcher: unshare.launcher, why: 'chosen by configuration' } : { available: false, reason: unshare.reason }
}
