/** One sandbox run: launch, watch the limits, collect output, decide the verdict, and leave nothing behind. */
import type { Logger } from '../log.ts'
import { createRunCgroup, type CgroupSupport, type RunCgroup } from './cgroup.ts'
import { BIN_DIR, READY_MARKER, sandboxEnv, type Launcher } from './launcher.ts'
import type { SandboxLimits } from './limits.ts'
import { childrenOf, drainWaits, hasExited, killPids, ownedBy, readProcessTable, treeOf, type ProcessEntry } from './process-table.ts'
import { createWorkspace, removeWorkspace } from './workspace.ts'

export type SandboxVerdict = 'passed' | 'failed' | 'syntax_error' | 'timeout' | 'memory_limit' | 'output_limit' | 'process_limit' | 'cancelled'

export interface SandboxResult {
  verdict: SandboxVerdict
  /** Exit status of the program; null when it was killed (by a limit, a cancellation or the kernel). */
  exitCode: number | null
  /** stdout and stderr interleaved as received, capped at maxOutputBytes (then `truncated`). */
  output: string
  truncated: boolean
  durationMs: number
}

/** The launch itself failed (not the code it was given): a fault of the machine, reported as an error. */
export class SandboxLaunchError extends Error {
  override name = 'SandboxLaunchError'
}

/** A limit or event that ends the run before the program does. */
type StopReason = 'timeout' | 'memory_limit' | 'output_limit' | 'process_limit' | 'cancelled'

export interface RunEnvironment {
  readonly bunPath: string
  readonly workRoot: string
  readonly launcher: Launcher
  readonly cgroups: CgroupSupport
  readonly hiddenPaths: readonly string[]
  /** How often limits the kernel does not enforce are measured from /proc, and cgroup counters read. */
  readonly pollIntervalMs: number
  readonly logger: Logger
}

export interface RunSpec {
  /** Written to a fresh directory that is copied into the run, then removed; or `directory` instead. */
  readonly files?: Readonly<Record<string, string>>
  /** An existing directory mounted read-write as the run's directory; it stays after the run. */
  readonly directory?: string
  /** RLIMIT_FSIZE of the run, in bytes. */
  readonly maxFileBytes?: number
  /** The Bun binary as the run sees it, reachable as `bun` on PATH; and the host directory to bind for it when hidden. */
  readonly bun?: { path: string; runtime: string }
  readonly command: readonly string[]
  readonly limits: SandboxLimits
  /** The run's own uid, or undefined when the service is not root. */
  readonly uid: number | undefined
  readonly signal?: AbortSignal
}

/** Keeps the first `limit` bytes of what the program prints and says when more arrived. */
class OutputCapture {
  private readonly chunks: Uint8Array[] = []
  private kept = 0
  truncated = false
  constructor(private readonly limit: number) {}

  /** Adds a chunk; false once the cap is reached. */
  add(chunk: Uint8Array): boolean {
    const room = this.limit - this.kept
    if (chunk.byteLength > room) {
      this.chunks.push(chunk.subarray(0, room))
      this.kept = this.limit
      this.truncated = true
      return false
    }
    this.chunks.push(chunk)
    this.kept += chunk.byteLength
    return true
  }

  text(): string {
    // stream: true holds back a character cut in half by the cap instead of printing a replacement.
    return new TextDecoder().decode(Buffer.concat(this.chunks), { stream: this.truncated })
  }
}

/** `promise`'s value, or `fallback` if it takes longer than `ms`. */
async function within<T>(promise: Promise<T>, ms: number, fallback: T): Promise<T> {
  let timer: Timer | undefined
  const late = new Promise<T>((resolve) => (timer = setTimeout(() => resolve(fallback), ms)))
  try {
    return await Promise.race([promise, late])
  } finally {
    clearTimeout(timer)
  }
}

async function readAll(stream: ReadableStream<Uint8Array>, limit: number): Promise<string> {
  const capture = new OutputCapture(limit)
  for await (const chunk of stream) if (!capture.add(chunk)) break
  return capture.text()
}

/**
 * The run's processes, found without a cgroup: by its uid, or as the launcher's descendants. Zombies
 * are included: until reaped they still count against RLIMIT_NPROC.
 */
function runProcesses(table: ProcessEntry[], uid: number | undefined, launcherPid: number): ProcessEntry[] {
  return uid === undefined ? treeOf(table, launcherPid) : table.filter((p) => p.uid === uid)
}

export async function executeRun(env: RunEnvironment, spec: RunSpec): Promise<SandboxResult> {
  const { limits, uid } = spec
  const memoryBytes = limits.memoryMb * 1024 * 1024
  let cgroup: RunCgroup | undefined
  let workspace: string | undefined
  try {
    workspace = spec.directory ?? (await createWorkspace(env.workRoot, spec.files ?? {}, uid))
    cgroup = createRunCgroup(env.cgroups, { memoryBytes, maxProcesses: limits.maxProcesses })
    return await supervise(env, spec, workspace, cgroup, memoryBytes)
  } finally {
    // Emptied and removed, the run's cgroups prove nothing of it is left: every process of the run joined them
    // before anything of it started, and leaving one takes root. Without them, or when one could not be
    // emptied, the run's uid is swept across the whole process table.
    let emptied = false
    if (cgroup)
      emptied = await cgroup.remove().then(
        () => cgroup!.holdsTree,
        (err) => {
          env.logger.error('sandbox cgroup not removed', { err })
          return false
        },
      )
    if (uid !== undefined && !emptied) await killOwnedBy(uid, env.logger)
    if (workspace && !spec.directory) await removeWorkspace(workspace).catch((err) => env.logger.error('sandbox directory not removed', { err, workspace }))
  }
}

async function supervise(env: RunEnvironment, spec: RunSpec, workspace: string, cgroup: RunCgroup, memoryBytes: number): Promise<SandboxResult> {
  const { limits, uid } = spec
  const started = performance.now()
  const child = Bun.spawn({
    cmd: env.launcher.command({
      uid,
      workDir: workspace,
      // Files the code writes live in memory: the memory ceiling bounds them too.
      tmpKb: limits.memoryMb * 1024,
      // Without a pids cgroup, the kernel's per-user process limit on the run's own uid bounds forks.
      nproc: cgroup.limitsProcesses || uid === undefined ? undefined : limits.maxProcesses,
      hiddenPaths: env.hiddenPaths,
      cgroupProcs: cgroup.procsFiles,
      command: spec.command,
      directory: spec.directory ? 'bind' : 'copy',
      maxFileBytes: spec.maxFileBytes,
      runtimeDir: spec.bun?.runtime || undefined,
      bunPath: spec.bun?.path,
    }),
    cwd: workspace,
    env: sandboxEnv(spec.bun ? BIN_DIR : undefined),
    stdin: 'ignore',
    stdout: 'pipe',
    stderr: 'pipe',
  })

  // Every layer at once: the launcher (its death kills the namespace), the cgroup members, the run's uid. The
  // cgroups hold every process of the run (joined before anything of it started; leaving needs root), so the
  // uid is looked for in the process table (slow: every process on the machine) only without them.
  // With neither (the service is not root) the namespace's first process, the launcher's child, stands for the
  // run: it ends only once every other process in its namespace is gone, so the run is over when it is.
  let namespaceInit: number | undefined
  const killTree = () => {
    if (uid === undefined && !cgroup.holdsTree) namespaceInit ??= childrenOf(child.pid)[0]
    child.kill('SIGKILL')
    killPids(cgroup.members())
    if (uid !== undefined && !cgroup.holdsTree) killPids(ownedBy(readProcessTable(), uid).map((p) => p.pid))
  }
  let ended = false
  let stopReason: StopReason | undefined
  const stop = (reason: StopReason) => {
    if (stopReason) return
    stopReason = reason
    killTree()
  }

  const timer = setTimeout(() => stop('timeout'), limits.timeoutMs)
  const onAbort = () => stop('cancelled')
  spec.signal?.addEventListener('abort', onAbort, { once: true })
  if (spec.signal?.aborted) stop('cancelled')

  const watchTable = !cgroup.limitsMemory || !cgroup.limitsProcesses
  const monitor = setInterval(() => {
    if (cgroup.oomKills() > 0) return stop('memory_limit')
    if (cgroup.processLimitHits() > 0) return stop('process_limit')
    if (!watchTable) return
    const members = runProcesses(readProcessTable(), uid, child.pid)
    if (!cgroup.limitsMemory && members.reduce((sum, p) => sum + p.privateBytes, 0) > memoryBytes) return stop('memory_limit')
    if (!cgroup.limitsProcesses && members.reduce((sum, p) => sum + p.threads, 0) >= limits.maxProcesses) return stop('process_limit')
  }, env.pollIntervalMs)

  const capture = new OutputCapture(limits.maxOutputBytes)
  const stdout = child.stdout.getReader()
  const reading = (async () => {
    for (;;) {
      const { done, value } = await stdout.read()
      if (done) return
      if (!capture.add(value)) return stop('output_limit')
    }
  })().catch(() => {
    // cancelled below: the pipe was still held open after the tree was killed
  })
  const diagnostics = readAll(child.stderr, 16 * 1024)

  try {
    await child.exited
    ended = true
    const durationMs = Math.round(performance.now() - started)
    // Nothing of the run may outlive its launcher; then the pipes close and reading ends. The program's end took
    // its PID namespace with it, so this is the launcher and the cgroup members; without cgroups the run's uid is
    // swept once it is all over (executeRun).
    child.kill('SIGKILL')
    killPids(cgroup.members())
    await within(reading, 2000, undefined)
    await stdout.cancel().catch(() => {})
    const launcherErrors = await within(diagnostics, 2000, '')
    // The kernel may have acted between the last poll and the exit.
    if (!stopReason && cgroup.oomKills() > 0) stopReason = 'memory_limit'
    if (!stopReason && cgroup.processLimitHits() > 0) stopReason = 'process_limit'
    if (!stopReason && !launcherErrors.includes(READY_MARKER))
      throw new SandboxLaunchError(
        `sandbox launch failed (exit ${child.exitCode ?? child.signalCode}): ${launcherErrors.trim() || capture.text().slice(0, 2000)}`,
      )
    const exitCode = stopReason ? null : child.exitCode
    const verdict = stopReason ?? (exitCode === 0 ? 'passed' : 'failed')
    env.logger.debug('sandbox run finished', { verdict, exitCode, durationMs })
    return { verdict, exitCode, output: capture.text(), truncated: capture.truncated, durationMs }
  } finally {
    clearTimeout(timer)
    clearInterval(monitor)
    spec.signal?.removeEventListener('abort', onAbort)
    if (!ended) killTree()
    if (namespaceInit !== undefined) await waitExited(namespaceInit)
  }
}

/** Waits, about two seconds at most, until `pid` (killed already) has exited. */
async function waitExited(pid: number): Promise<void> {
  for (const wait of drainWaits()) {
    if (hasExited(pid)) return
    await Bun.sleep(wait)
  }
}

/**
 * Kills whatever still runs as the run's uid and waits until it is gone. Processes killed a moment ago
 * may still be releasing their memory; anything else here escaped every other layer.
 */
async function killOwnedBy(uid: number, logger: Logger): Promise<void> {
  for (const wait of drainWaits()) {
    const left = ownedBy(readProcessTable(), uid)
    if (left.length === 0) return
    killPids(left.map((p) => p.pid))
    await Bun.sleep(wait)
  }
  logger.error('sandbox processes survived SIGKILL', { uid })
}
