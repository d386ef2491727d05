/**
 * The code sandbox: runs user-supplied TypeScript or JavaScript (a program, or its `bun test` suite) in
 * a separate, isolated process tree per run and reports a verdict. What is enforced, and how, is
 * decided once at start-up from what the machine allows and published in `enforcement`.
 */
import { tmpdir } from 'node:os'
import { isAbsolute, resolve } from 'node:path'
import type { Logger } from '../log.ts'
import { detectCgroups, type CgroupSupport } from './cgroup.ts'
import {
  checkFiles,
  checkSyntax,
  defaultEntry,
  pythonCommand,
  pythonSyntaxError,
  SANDBOX_LANGUAGES,
  sandboxCommand,
  type SandboxLanguage,
  type SyntaxCheck,
} from './languages.ts'
import { chooseLauncher, SANDBOX_DIR, sandboxEnv, visibleProgram, type LauncherChoice, type LauncherKind } from './launcher.ts'
import { configuredLimits, resolveLimits, type SandboxLimits } from './limits.ts'
import { executeRun, type RunSpec, type SandboxResult } from './run.ts'
import { SandboxRequestError, validateFiles } from './workspace.ts'

export type { SandboxLanguage, SyntaxCheck } from './languages.ts'
export type { SandboxLimits } from './limits.ts'
export { SandboxLaunchError, type SandboxResult, type SandboxVerdict } from './run.ts'
export { SandboxRequestError } from './workspace.ts'

export interface SandboxRequest {
  language: SandboxLanguage
  /** Files written into a fresh directory; paths relative, no '..'. */
  files: Record<string, string>
  /** 'run': run `entry` (default main.ts / main.js). 'test': run `bun test` in the directory (user-supplied *.test.ts files). */
  mode: 'run' | 'test'
  entry?: string
  /** Each limit may be lowered for this run, never raised above the sandbox's own. */
  timeoutMs?: number
  memoryMb?: number
  maxOutputBytes?: number
  maxProcesses?: number
  signal?: AbortSignal
}

/**
 * A command line run in an existing directory (a development workspace), mounted read-write as the run's
 * working directory: every protection of `run` applies, and the files it writes stay in the directory.
 */
export interface SandboxCommandRequest {
  /** Host directory the command works in; it sees it as SANDBOX_DIR. Owned by the run's uid afterwards. */
  directory: string
  /** Run by `/bin/sh -c`; `bun` is first on PATH, then the host's /usr/local/bin, /usr/bin and /bin. */
  command: string
  timeoutMs?: number
  memoryMb?: number
  maxOutputBytes?: number
  maxProcesses?: number
  /** Largest file the command may write (RLIMIT_FSIZE), in bytes; a write past it fails. Default: no limit beyond the disk. */
  maxFileBytes?: number
  signal?: AbortSignal
}

/** The machine cannot isolate a run (no network namespace, say), so the sandbox refuses to run anything. */
export class SandboxUnavailableError extends Error {
  override name = 'SandboxUnavailableError'
}

export interface SandboxOptions {
  /** The Bun binary runs use; every uid must be able to execute it. Example: `process.execPath`. */
  bunPath: string
  /** Where each run's files are written before being copied into the sandbox. Default: the OS temp directory. */
  workRoot?: string
  /** The limits of a run; requests may only lower them. Default: DEFAULT_SANDBOX_LIMITS. */
  defaults?: Partial<SandboxLimits>
  /** Host paths (the service's DATA_DIR, say) that sandboxed code sees as empty, unreadable directories. Default: none. */
  hiddenPaths?: string[]
  /** Mount point of the cgroup v1 hierarchies, or false to use the fallbacks. Default: /sys/fs/cgroup. */
  cgroupRoot?: string | false
  /** Name of the cgroup under each hierarchy that holds the per-run cgroups. Default: `sandbox`. */
  cgroupName?: string
  /** Runs take uids `firstUid` .. `firstUid + uidCount - 1`, one per concurrent run. Default: 1_500_000_000 and 1_000_000. */
  firstUid?: number
  uidCount?: number
  /** How often limits without kernel enforcement are measured. Default: 25 ms. */
  pollIntervalMs?: number
  /**
   * What isolates a run: `bubblewrap` (bwrap builds its namespaces and mounts) or `unshare` (util-linux's unshare
   * and a shell script that mounts). Naming one uses only it: runs are refused where it does not work. Default:
   * bubblewrap where `bwrap` is installed and a probe launch through it works, else unshare (enforcement.isolation
   * says which, and why).
   */
  launcher?: LauncherKind
  logger: Logger
}

export interface Sandbox {
  run(request: SandboxRequest): Promise<SandboxResult>
  runCommand(request: SandboxCommandRequest): Promise<SandboxResult>
  /** Parses code with Bun's transpiler in-process: no file, no child process. */
  checkSyntax(language: SandboxLanguage, code: string): SyntaxCheck
  /** False when runs are refused (see `enforcement.isolation`). */
  readonly available: boolean
  /** What each protection is and how it is enforced on this machine, in words (for logs and status pages). */
  readonly enforcement: Readonly<Record<string, string>>
  readonly limits: SandboxLimits
  /** Stops every run in progress (verdict `cancelled`), waits for its clean-up, and refuses new runs. */
  close(): Promise<void>
}

/** The isolation line of the enforcement report: which launcher, how it runs, and why it was chosen. */
function describeIsolation(choice: LauncherChoice, asRoot: boolean): string {
  if (!choice.available) return `unavailable (${choice.reason}); runs are refused`
  const namespaces = 'own network, PID, mount, IPC and UTS namespaces'
  if (choice.launcher.kind === 'bubblewrap')
    return asRoot
      ? `${namespaces} by bubblewrap (${choice.why}): bwrap runs as root without a user namespace and setpriv drops the program to the run's uid`
      : `${namespaces} by bubblewrap (${choice.why}) in a user namespace (--unshare-user) mapping the service uid to root, without capabilities`
  return `${namespaces} by the unshare launcher (unshare${asRoot ? '' : ' --map-root-user'} and a mounting shell script; ${choice.why})`
}

function describeEnforcement(choice: LauncherChoice, cgroups: CgroupSupport, asRoot: boolean, limits: SandboxLimits, hidden: readonly string[]) {
  const off = (what: string) => (choice.available ? what : 'not applied: runs are refused')
  const bubblewrap = choice.available && choice.launcher.kind === 'bubblewrap'
  return Object.freeze({
    isolation: describeIsolation(choice, asRoot),
    network: off(
      bubblewrap
        ? 'no network: a fresh network namespace whose only interface is its own loopback (bubblewrap brings it up; it reaches nothing outside the run)'
        : 'no network: a fresh network namespace has only a loopback interface, and it is down',
    ),
    filesystem: off(
      `files in a private tmpfs at ${SANDBOX_DIR}; /tmp, /var/tmp, /run and /dev/shm replaced by empty tmpfs` +
        (hidden.length > 0 ? `; hidden: ${hidden.join(', ')}` : '') +
        (bubblewrap
          ? "; the host's root read-only, a fresh /dev; elsewhere ordinary permissions apply to reading"
          : '; elsewhere ordinary permissions apply (the run owns nothing outside its tmpfs)'),
    ),
    identity: off(
      asRoot
        ? 'a uid of its own per run, no supplementary groups, no capabilities, no_new_privs: files not readable by others are denied'
        : 'the service uid mapped to root of a user namespace, with no capabilities (the service does not run as root): only hidden paths are denied',
    ),
    environment: `only ${Object.keys(sandboxEnv()).join(', ')}: nothing of the service environment`,
    processes: cgroups.pids
      ? `at most ${limits.maxProcesses} tasks by a pids cgroup per run (${cgroups.notes.pids})`
      : asRoot
        ? `at most ${limits.maxProcesses} tasks by RLIMIT_NPROC on the run's own uid (${cgroups.notes.pids}); reaching it is detected by polling`
        : `not enforced by the kernel (${cgroups.notes.pids}); the task count is polled and the run killed at ${limits.maxProcesses}`,
    memory: cgroups.memory
      ? `${limits.memoryMb} MiB for the process tree and its files by a memory cgroup per run (${cgroups.notes.memory})`
      : `not enforced by the kernel (${cgroups.notes.memory}); the tree's resident private memory is polled and the run killed above ${limits.memoryMb} MiB; written files are capped at the same size`,
    timeout: `${limits.timeoutMs} ms wall clock, then the whole tree is killed`,
    output: `${limits.maxOutputBytes} bytes of stdout and stderr, then the run is killed`,
    cleanup:
      'the program is PID 1 of its namespace, so the kernel kills every process in it when it ends; the cgroup members are killed until the cgroups can be removed, ' +
      "and without cgroups (or when one cannot be emptied) everything with the run's uid; the run dies with the service",
  })
}

export function createSandbox(options: SandboxOptions): Sandbox {
  const { logger, bunPath } = options
  const limits = configuredLimits(options.defaults)
  const workRoot = resolve(options.workRoot ?? tmpdir())
  const hiddenPaths = (options.hiddenPaths ?? []).map((p) => resolve(p))
  const asRoot = process.getuid?.() === 0
  const firstUid = options.firstUid ?? 1_500_000_000
  const uidCount = options.uidCount ?? 1_000_000
  const isolation = chooseLauncher(bunPath, asRoot ? firstUid + uidCount - 1 : undefined, options.launcher)
  const cgroups: CgroupSupport = asRoot
    ? detectCgroups(options.cgroupRoot ?? '/sys/fs/cgroup', options.cgroupName ?? 'sandbox')
    : { notes: { memory: 'needs root', pids: 'needs root' } }
  const enforcement = describeEnforcement(isolation, cgroups, asRoot, limits, hiddenPaths)
  const log = logger.child({ component: 'sandbox' })
  if (isolation.available) log.info('sandbox ready', { enforcement })
  else log.warn('sandbox unavailable: code runs are refused', { reason: isolation.reason })

  const uidsInUse = new Set<number>()
  // The uid a directory's last command ran as: the next command there takes it again when it is free, so the
  // files it owns already need no new owner (the hand-over walks the whole directory otherwise). Every process
  // of a run is killed before its uid is free, so nothing of the last command runs on under it.
  const lastUidOf = new Map<string, number>()
  const LAST_UIDS_KEPT = 1000
  const allocateUid = (directory?: string): number | undefined => {
    if (!asRoot) return undefined
    const previous = directory === undefined ? undefined : lastUidOf.get(directory)
    if (previous !== undefined && !uidsInUse.has(previous)) {
      uidsInUse.add(previous)
      return previous
    }
    // Random, so two service processes on one machine are unlikely to share a uid (and a process count).
    for (;;) {
      const uid = firstUid + Math.floor(Math.random() * (uidCount - 1))
      if (!uidsInUse.has(uid)) {
        uidsInUse.add(uid)
        return uid
      }
    }
  }

  const active = new Set<{ abort: AbortController; done: Promise<unknown> }>()
  let closed = false

  // Python runs with the machine's own python3 (Debian's, say), the one commands in a workspace get too.
  const pythonPath = Bun.which('python3', { PATH: '/usr/local/bin:/usr/bin:/bin' }) ?? undefined

  async function run(request: SandboxRequest): Promise<SandboxResult> {
    if (closed) throw new SandboxUnavailableError('the sandbox is closed')
    if (!SANDBOX_LANGUAGES.includes(request.language))
      throw new SandboxRequestError('language', `must be one of ${SANDBOX_LANGUAGES.join(', ')}, got "${request.language}"`)
    if (request.mode !== 'run' && request.mode !== 'test') throw new SandboxRequestError('mode', `must be run or test, got "${request.mode}"`)
    validateFiles(request.files)
    const entry = request.entry ?? defaultEntry(request.language)
    if (request.mode === 'run' && !Object.hasOwn(request.files, entry)) throw new SandboxRequestError('entry', `"${entry}" is not one of the files`)

    const started = performance.now()
    const elapsed = () => Math.round(performance.now() - started)
    if (request.signal?.aborted) return { verdict: 'cancelled', exitCode: null, output: '', truncated: false, durationMs: 0 }
    const syntax = checkFiles(request.files)
    if (!syntax.ok) return { verdict: 'syntax_error', exitCode: null, output: syntax.message, truncated: false, durationMs: elapsed() }
    if (!isolation.available) throw new SandboxUnavailableError(`code cannot be run on this machine: ${isolation.reason}`)

    if (request.language === 'python') {
      // Parsed inside the sandbox by its own python3 before the program runs.
      if (!pythonPath) throw new SandboxUnavailableError('Python code cannot be run on this machine: python3 is not installed')
      const result = await launch(request, {
        files: request.files,
        command: pythonCommand(pythonPath, request.mode, entry),
        limits: resolveLimits(limits, request),
      })
      const syntaxError = pythonSyntaxError(result.exitCode, result.output)
      return syntaxError === undefined ? result : { ...result, verdict: 'syntax_error', exitCode: null, output: syntaxError }
    }
    return launch(request, {
      files: request.files,
      command: sandboxCommand(bunPath, request.mode, entry),
      limits: resolveLimits(limits, request),
    })
  }

  async function runCommand(request: SandboxCommandRequest): Promise<SandboxResult> {
    if (closed) throw new SandboxUnavailableError('the sandbox is closed')
    if (typeof request.command !== 'string' || request.command.trim() === '') throw new SandboxRequestError('command', 'must be a non-empty command line')
    if (request.command.includes('\0')) throw new SandboxRequestError('command', 'must not contain NUL')
    if (!isAbsolute(request.directory)) throw new SandboxRequestError('directory', 'must be an absolute path')
    if (request.signal?.aborted) return { verdict: 'cancelled', exitCode: null, output: '', truncated: false, durationMs: 0 }
    if (!isolation.available) throw new SandboxUnavailableError(`code cannot be run on this machine: ${isolation.reason}`)
    const bun = visibleProgram(bunPath, hiddenPaths)
    const maxFileBytes = request.maxFileBytes === undefined ? undefined : Math.max(1, Math.floor(request.maxFileBytes))
    return launch(request, {
      directory: request.directory,
      maxFileBytes,
      bun: { path: bun.path, runtime: bun.runtime },
      command: ['/bin/sh', '-c', request.command],
      limits: resolveLimits(limits, request),
    })
  }

  /** Launches one run under its own controller, so close() can stop it whatever signal the caller gave. */
  async function launch(request: { signal?: AbortSignal }, spec: Omit<RunSpec, 'uid' | 'signal'>): Promise<SandboxResult> {
    if (!isolation.available) throw new SandboxUnavailableError(`code cannot be run on this machine: ${isolation.reason}`)
    const abort = new AbortController()
    const onCallerAbort = () => abort.abort()
    request.signal?.addEventListener('abort', onCallerAbort, { once: true })
    const uid = allocateUid(spec.directory)
    if (spec.directory !== undefined && uid !== undefined) {
      lastUidOf.delete(spec.directory)
      lastUidOf.set(spec.directory, uid)
      if (lastUidOf.size > LAST_UIDS_KEPT) lastUidOf.delete(lastUidOf.keys().next().value!)
    }
    const done = executeRun(
      { bunPath, workRoot, launcher: isolation.launcher, cgroups, hiddenPaths, pollIntervalMs: options.pollIntervalMs ?? 25, logger: log },
      { ...spec, uid, signal: abort.signal },
    )
    const handle = { abort, done }
    active.add(handle)
    try {
      return await done
    } finally {
      active.delete(handle)
      request.signal?.removeEventListener('abort', onCallerAbort)
      if (uid !== undefined) uidsInUse.delete(uid)
    }
  }

  return {
    run,
    runCommand,
    checkSyntax,
    available: isolation.available,
    enforcement,
    limits,
    async close() {
      closed = true
      for (const handle of active) handle.abort.abort()
      await Promise.allSettled([...active].map((h) => h.done))
    },
  }
}
