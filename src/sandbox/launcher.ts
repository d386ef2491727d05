/**
 * How a run is launched: `unshare` gives it its own network, PID, mount, IPC and UTS namespaces; a
 * small shell (running as root inside them) joins the run's cgroups, replaces /tmp with a fresh
 * tmpfs holding a copy of the run's files, hides socket and data directories, then drops to the run's
 * own unprivileged uid and execs Bun, which becomes PID 1 of the namespace: when it exits or is
 * killed, the kernel kills every process left in it. Bun gets SIGKILL when unshare dies (the uid
 * switch clears the parent-death signal `--kill-child` set, so setpriv sets it again).
 */
import { existsSync, mkdtempSync, realpathSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { basename, dirname, join } from 'node:path'

/**
 * Where the Bun binary is seen when it lives in a directory the launcher hides (/tmp, say, for a
 * checkout under /tmp): its directory is bound here first. An empty directory on Debian-like systems.
 */
const RUNTIME_MOUNT = '/mnt'

/** Where the run's files are, as the sandboxed code sees them (inside its private /tmp). */
export const SANDBOX_DIR = '/tmp/sandbox'

/** In the private /tmp: holds `bun`, linked to the Bun binary, first on a command's PATH. */
export const BIN_DIR = '/tmp/.sandbox-bin'

/** Written to the launcher's stderr once set-up is done; its absence means the launch itself failed. */
export const READY_MARKER = 'sandbox-ready'

const PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'

/**
 * Arguments: $1 run dir, $2 uid ('' keeps the current one), $3 /tmp size in KiB, $4 RLIMIT_NPROC ('' none),
 * $5 paths to hide (one per line), $6 cgroup.procs files to join (one per line), $7 a directory to bind at
 * RUNTIME_MOUNT before anything is hidden ('' none), $8 `copy` (the files are copied into the run dir) or
 * `bind` (the directory itself is mounted read-write there), $9 RLIMIT_FSIZE in bytes ('' none), $10 the Bun
 * binary as seen inside, linked as `bun` in BIN_DIR ('' none), then the command.
 * The shell starts in the service-side directory (its cwd), which stays reachable after /tmp is replaced.
 * The ownership change never follows a link (a symlink a run left behind cannot hand it a file elsewhere),
 * and in a bound directory skips files with other hard links, which may be the same file as one outside it,
 * and those the uid owns already (a directory's commands reuse their uid when they can).
 */
const INIT_SCRIPT = `set -eu
work=$1 uid=$2 tmp_kb=$3 nproc=$4 hidden=$5 cgroups=$6 runtime=$7 mode=$8 fsize=$9 bun=\${10}
shift 10
set -f
IFS='
'
for f in $cgroups; do echo 0 > "$f"; done
if [ -n "$runtime" ]; then mount --bind "$runtime" ${RUNTIME_MOUNT}; fi
mount -t tmpfs -o "size=\${tmp_kb}k,mode=1777,nosuid,nodev" sandbox-tmp /tmp
if [ "$mode" = bind ]; then mkdir -m 700 "$work"; mount --no-canonicalize --bind . "$work"; fi
if [ -n "$bun" ]; then mkdir -m 755 ${BIN_DIR}; ln -s "$bun" ${BIN_DIR}/bun; fi
for d in /var/tmp /run /dev/shm; do
  if [ -d "$d" ]; then mount -t tmpfs -o size=16k,mode=755,nosuid,nodev,noexec sandbox-empty "$d"; fi
done
for p in $hidden; do
  if [ -d "$p" ]; then mount -t tmpfs -o size=4k,mode=000,ro sandbox-hidden "$p"
  elif [ -e "$p" ]; then mount --bind /dev/null "$p"; fi
done
unset IFS
set +f
if [ "$mode" = copy ]; then mkdir -m 700 "$work"; cp -R ./. "$work"/; fi
if [ -n "$uid" ]; then
  if [ "$mode" = bind ]; then find "$work" \\( ! -user "$uid" -o ! -group "$uid" \\) \\( -type d -o -links 1 \\) -exec chown -h "$uid:$uid" {} +
  else chown -R -P -h "$uid:$uid" "$work"; fi
fi
cd "$work"
unset OLDPWD
echo ${READY_MARKER} >&2
exec 2>&1
if [ -n "$uid" ]; then
  exec prlimit --core=0 \${nproc:+--nproc=$nproc} \${fsize:+--fsize=$fsize} -- setpriv --reuid="$uid" --regid="$uid" --clear-groups --no-new-privs --bounding-set=-all --inh-caps=-all --pdeathsig KILL -- "$@"
fi
exec prlimit --core=0 \${fsize:+--fsize=$fsize} -- setpriv --no-new-privs --pdeathsig KILL -- "$@"
`

export interface LauncherTools {
  readonly unshare: string
  readonly setpriv: string
  readonly prlimit: string
  readonly sh: string
}

export interface LaunchOptions {
  /** Unprivileged uid the code runs as; undefined keeps the service's (only when it is not root). */
  readonly uid: number | undefined
  /** Size of the private /tmp (run files plus anything the code writes), in KiB. */
  readonly tmpKb: number
  /** RLIMIT_NPROC for the run's uid; undefined when a pids cgroup counts tasks instead. */
  readonly nproc: number | undefined
  /** Host paths replaced by an empty, unreadable directory (or /dev/null for a file). */
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

/**
 * Only these reach the sandboxed code: nothing of the service's own environment. `binDir` (where Bun is, as
 * the run sees it) goes first on PATH, so a command line can say `bun`.
 */
export function sandboxEnv(binDir?: string): Record<string, string> {
  // BUN_BE_BUN: in the single executable `bunPath` is the service itself, which this makes act as the Bun CLI.
  return { PATH: binDir ? `${binDir}:${PATH}` : PATH, HOME: SANDBOX_DIR, TMPDIR: '/tmp', NO_COLOR: '1', LANG: 'C.UTF-8', BUN_BE_BUN: '1' }
}

const MASKED = ['/tmp', '/var/tmp', '/run', '/dev/shm']

/** Where `program` (an absolute path) is seen inside, and the directory to bind when it would be hidden. */
export function visibleProgram(program: string, hiddenPaths: readonly string[]): { runtime: string; path: string } {
  const real = realpathSync(program)
  const hidden = [...MASKED, ...hiddenPaths].some((p) => real === p || real.startsWith(`${p.replace(/\/+$/, '')}/`))
  if (!hidden || !existsSync(RUNTIME_MOUNT)) return { runtime: '', path: program }
  return { runtime: dirname(real), path: `${RUNTIME_MOUNT}/${basename(real)}` }
}

/** The program and its arguments as seen inside, and the directory to bind when the program would be hidden. */
function visibleCommand(command: readonly string[], hiddenPaths: readonly string[]): { runtime: string; command: readonly string[] } {
  const [program, ...args] = command
  if (!program || !program.startsWith('/')) return { runtime: '', command }
  const visible = visibleProgram(program, hiddenPaths)
  return { runtime: visible.runtime, command: [visible.path, ...args] }
}

/** The argv to spawn, with the service-side copy of the files as its cwd. */
export function launchCommand(tools: LauncherTools, options: LaunchOptions): string[] {
  const asRoot = process.getuid?.() === 0
  const visible = visibleCommand(options.command, options.hiddenPaths)
  return [
    // The whole run dies with the service: if it crashes, the kernel kills unshare, and unshare's child.
    tools.setpriv,
    '--pdeathsig',
    'KILL',
    '--',
    tools.unshare,
    ...(asRoot ? [] : ['--map-root-user']),
    '--net',
    '--pid',
    '--fork',
    '--kill-child',
    '--mount-proc',
    '--ipc',
    '--uts',
    '--',
    tools.sh,
    '-c',
    INIT_SCRIPT,
    'sandbox-init',
    SANDBOX_DIR,
    options.uid === undefined ? '' : String(options.uid),
    String(options.tmpKb),
    options.nproc === undefined ? '' : String(options.nproc),
    options.hiddenPaths.join('\n'),
    options.cgroupProcs.join('\n'),
    options.runtimeDir ?? visible.runtime,
    options.directory ?? 'copy',
    options.maxFileBytes === undefined ? '' : String(options.maxFileBytes),
    options.bunPath ?? '',
    ...visible.command,
  ]
}

export type IsolationProbe = { available: true; tools: LauncherTools } | { available: false; reason: string }

/**
 * Launches Bun once through the full launcher at start-up: proves the namespaces, the mounts, the uid
 * switch and that the unprivileged uid can execute the Bun binary.
 */
export function probeIsolation(bunPath: string, probeUid: number | undefined): IsolationProbe {
  const found = { unshare: Bun.which('unshare'), setpriv: Bun.which('setpriv'), prlimit: Bun.which('prlimit'), sh: Bun.which('sh') }
  const missing = Object.entries(found)
    .filter(([, path]) => !path)
    .map(([name]) => name)
  if (missing.length > 0) return { available: false, reason: `missing ${missing.join(', ')} (util-linux)` }
  const tools = found as LauncherTools
  const dir = mkdtempSync(join(tmpdir(), 'sandbox-probe-'))
  try {
    const result = Bun.spawnSync({
      cmd: launchCommand(tools, {
        uid: probeUid,
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
    const expected = String(probeUid ?? 0)
    if (result.exitCode === 0 && out === expected && err.includes(READY_MARKER)) return { available: true, tools }
    const detail = [err.replace(READY_MARKER, '').trim(), out].filter(Boolean).join(' | ').slice(0, 500)
    return { available: false, reason: `probe launch failed (exit ${result.exitCode ?? result.signalCode}): ${detail || 'no output'}` }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}
