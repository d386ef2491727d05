/**
 * What every launcher shares: where the run sees its files, the marker that says set-up is done, the only
 * environment a run gets, and the options one launch takes. A launcher turns these options into the argv
 * that `run.ts` spawns, with the service-side directory as its cwd; stdout carries the program's stdout and
 * stderr together, stderr only the launcher's own messages and READY_MARKER.
 */
import { isWithin } from '../paths.ts'
import { existsSync, realpathSync } from 'node:fs'
import { basename, dirname } from 'node:path'

/**
 * Where the Bun binary is seen when it lives in a directory the launcher hides (/tmp, say, for a
 * checkout under /tmp): its directory is bound here first. An empty directory on Debian-like systems.
 */
export const RUNTIME_MOUNT = '/mnt'

/** Where the run's files are, as the sandboxed code sees them (inside its private /tmp). */
export const SANDBOX_DIR = '/tmp/sandbox'

/** In the private /tmp: holds `bun`, linked to the Bun binary, first on a command's PATH. */
export const BIN_DIR = '/tmp/.sandbox-bin'

/** Written to the launcher's stderr once set-up is done; its absence means the launch itself failed. */
export const READY_MARKER = 'sandbox-ready'

/** Replaced by empty tmpfs in every run. */
export const MASKED_DIRS = ['/tmp', '/var/tmp', '/run', '/dev/shm'] as const

const PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'

/**
 * The PATH the launchers' own shell steps use while they act for the service: never BIN_DIR, which on the
 * host is a name in the world-writable /tmp that any local user could fill with a `mount` or a `chown`.
 */
export const LAUNCHER_PATH = '/usr/sbin:/usr/bin:/sbin:/bin'

export type LauncherKind = 'bubblewrap' | 'unshare'

export interface LaunchOptions {
  /** Unprivileged uid the code runs as; undefined keeps the service's (only when it is not root). */
  readonly uid: number | undefined
  /** The service-side directory: the run's files (copy) or the directory bound read-write (bind). Also the cwd. */
  readonly workDir: string
  /** Size of the private /tmp (run files plus anything the code writes), in KiB. */
  readonly tmpKb: number
  /** RLIMIT_NPROC for the run's uid; undefined when a pids cgroup counts tasks instead. */
  readonly nproc: number | undefined
  /** Host paths replaced by an empty, unreadable directory (a file by /dev/null; bubblewrap binds it without device access, so it cannot even be opened). */
  readonly hiddenPaths: readonly string[]
  readonly cgroupProcs: readonly string[]
  readonly command: readonly string[]
  /** `copy`: the cwd's files are copied into the private /tmp. `bind`: the cwd is mounted read-write there. Default copy. */
  readonly directory?: 'copy' | 'bind'
  /** Largest file the run may write (RLIMIT_FSIZE), in bytes; undefined for none beyond the tmpfs size. */
  readonly maxFileBytes?: number
  /** A directory to bind at RUNTIME_MOUNT even when the program is not hidden (Bun's, for a shell command). */
  readonly runtimeDir?: string
  /** The Bun binary as the run sees it, linked as BIN_DIR/bun. */
  readonly bunPath?: string
}

export interface Launcher {
  readonly kind: LauncherKind
  /** The argv to spawn, with `options.workDir` as its cwd and `sandboxEnv()` as its environment. */
  command(options: LaunchOptions): string[]
}

/**
 * Only these reach the sandboxed code: nothing of the service's own environment. `binDir` (where Bun is, as
 * the run sees it) goes first on PATH, so a command line can say `bun`.
 */
export function sandboxEnv(binDir?: string): Record<string, string> {
  // BUN_BE_BUN: in the single executable `bunPath` is the service itself, which this makes act as the Bun CLI.
  return { PATH: binDir ? `${binDir}:${PATH}` : PATH, HOME: SANDBOX_DIR, TMPDIR: '/tmp', NO_COLOR: '1', LANG: 'C.UTF-8', BUN_BE_BUN: '1' }
}

/** Whether `path` is `dir` or lies below it. */

/** Where `program` (an absolute path) is seen inside, and the directory to bind when it would be hidden. */
export function visibleProgram(program: string, hiddenPaths: readonly string[]): { runtime: string; path: string } {
  const real = realpathSync(program)
  const hidden = [...MASKED_DIRS, ...hiddenPaths].some((p) => isWithin(real, p))
  if (!hidden || !existsSync(RUNTIME_MOUNT)) return { runtime: '', path: program }
  return { runtime: dirname(real), path: `${RUNTIME_MOUNT}/${basename(real)}` }
}

/** The program and its arguments as seen inside, and the directory to bind when the program would be hidden. */
export function visibleCommand(command: readonly string[], hiddenPaths: readonly string[]): { runtime: string; command: readonly string[] } {
  const [program, ...args] = command
  if (!program?.startsWith('/')) return { runtime: '', command }
  const visible = visibleProgram(program, hiddenPaths)
  return { runtime: visible.runtime, command: [visible.path, ...args] }
}
