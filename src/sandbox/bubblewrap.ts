/**
 * The launcher where bubblewrap is installed: `bwrap` builds the run's namespaces (network, PID, mount, IPC,
 * UTS) and its file system: the host's root read-only, a fresh /dev and /proc, a private /tmp holding the run's
 * directory, /var/tmp, /run and /dev/shm emptied, hidden paths replaced by empty unreadable directories.
 *
 * Around it, two short shell steps: one before it, as the service on the host, joins the run's cgroups and
 * hands a bound directory over to the run's uid; one inside it, as the run, copies the run's files in and
 * prints READY_MARKER. The program is PID 1 of its namespace (`--as-pid-1`): when it ends, the kernel kills
 * every process left in it; it dies with bwrap (`--die-with-parent`) and bwrap with the service (setpriv's
 * parent-death signal, set before anything else starts).
 *
 * As root, bwrap runs as root with no user namespace, and setpriv inside drops the program to the run's own
 * uid, so on the host every process of the run has that uid. (bwrap run by the uid itself, in a user
 * namespace, would resolve each bind source as the uid, `--bind-fd` included, and could not reach a workspace
 * inside the service's DATA_DIR, mode 0700.) Not as root, bwrap makes a user namespace mapping the service's uid
 * to root, with no capabilities.
 */
import { lstatSync, realpathSync, statSync } from 'node:fs'
import { relative } from 'node:path'
import { isWithin } from '../paths.ts'
import { BIN_DIR, LAUNCHER_PATH, MASKED_DIRS, READY_MARKER, RUNTIME_MOUNT, SANDBOX_DIR, visibleCommand, type Launcher, type LaunchOptions } from './launch.ts'

/**
 * Run by the service before bwrap, on the host, in the service-side directory. Arguments: $1 cgroup.procs
 * files to join (one per line), $2 the run's uid ('' none), $3 `copy` or `bind`, then the command (prlimit,
 * then bwrap). The ownership hand-over of a bound directory never follows a link (a symlink a run left behind
 * cannot hand it a file elsewhere; -execdir works from each directory find reached, so a directory swapped for
 * a link by a command running beside this one cannot redirect it), and skips files with other hard links, which
 * may be the same file as one outside it, and those the uid owns already (a directory's commands reuse their
 * uid when they can). In copy mode the directory stays open as fd 3 for the step inside. Its tools are looked up
 * on LAUNCHER_PATH: the run's PATH names BIN_DIR, which on the host is in the world-writable /tmp.
 */
const HOST_SCRIPT = `set -eu
cgroups=$1 uid=$2 mode=$3
shift 3
run_path=$PATH
PATH=${LAUNCHER_PATH}
set -f
IFS='
'
for f in $cgroups; do echo 0 > "$f"; done
unset IFS
set +f
if [ -n "$uid" ] && [ "$mode" = bind ]; then
  find . \\( ! -user "$uid" -o ! -group "$uid" \\) \\( -type d -o -links 1 \\) -execdir chown -h "$uid:$uid" {} +
fi
if [ "$mode" = copy ]; then exec 3<.; fi
PATH=$run_path
exec "$@"
`

/**
 * Run inside, as the run, before the program, in SANDBOX_DIR when it is bound (bwrap's --chdir). Arguments: $1
 * `copy` or `bind`, then the program. The copy reads the service-side directory through fd 3 (owned by the run's
 * uid, it is reachable although its host path is not), which is closed before the program starts: the program
 * holds nothing of the host's file system.
 */
const RUN_SCRIPT = `set -eu
mode=$1
shift
run_path=$PATH
PATH=${LAUNCHER_PATH}
if [ "$mode" = copy ]; then
  mkdir -m 700 ${SANDBOX_DIR}
  cp -R /proc/self/fd/3/. ${SANDBOX_DIR}/
  cd ${SANDBOX_DIR}
fi
exec 3<&-
unset OLDPWD
PATH=$run_path
echo ${READY_MARKER} >&2
exec 2>&1
exec "$@"
`

export interface BubblewrapTools {
  readonly bwrap: string
  readonly setpriv: string
  readonly prlimit: string
  readonly sh: string
}

/** What bwrap keeps as root: CAP_DAC_READ_SEARCH for --chdir, the rest for setpriv. */
const ROOT_CAPS = ['CAP_DAC_READ_SEARCH', 'CAP_SETUID', 'CAP_SETGID', 'CAP_SETPCAP']

/** Whether `path` is a directory itself, not a link to one. */
function isDirectory(path: string): boolean {
  try {
    return lstatSync(path).isDirectory()
  } catch {
    return false
  }
}

/** An empty tmpfs of `bytes` with mode `perms`, read-only: nothing can be written there, not even by its owner. */
const emptyTmpfs = (path: string, bytes: number, perms: string) => ['--size', String(bytes), '--perms', perms, '--tmpfs', path, '--remount-ro', path]

/**
 * Mounts hiding each existing hidden path, also where it appears inside a bound directory. Paths under the
 * emptied directories are hidden already.
 */
function hideArgs(hiddenPaths: readonly string[], boundDir: string | undefined): string[] {
  const args: string[] = []
  for (const path of hiddenPaths) {
    let real: string
    let isDirectory: boolean
    try {
      real = realpathSync(path)
      isDirectory = statSync(real).isDirectory()
    } catch {
      continue // absent: nothing to hide
    }
    const seenAt = [real]
    // A hidden path that is the bound directory itself was handed to the run on purpose.
    if (boundDir && real !== boundDir && isWithin(real, boundDir)) seenAt.push(`${SANDBOX_DIR}/${relative(boundDir, real)}`.replace(/\/$/, ''))
    for (const at of seenAt) {
      if (at === real && MASKED_DIRS.some((dir) => isWithin(real, dir))) continue
      args.push(...(isDirectory ? emptyTmpfs(at, 4096, '0000') : ['--ro-bind', '/dev/null', at]))
    }
  }
  return args
}

export function bubblewrapLauncher(tools: BubblewrapTools): Launcher {
  return {
    kind: 'bubblewrap',
    command(options: LaunchOptions): string[] {
      const asRoot = process.getuid?.() === 0
      const mode = options.directory ?? 'copy'
      const visible = visibleCommand(options.command, options.hiddenPaths)
      const runtime = options.runtimeDir ?? visible.runtime
      const boundDir = mode === 'bind' ? realpathSync(options.workDir) : undefined
      const uid = options.uid === undefined ? '' : String(options.uid)
      const bwrap = [
        tools.bwrap,
        ...(asRoot ? [] : ['--unshare-user', '--uid', '0', '--gid', '0']),
        '--unshare-net',
        '--unshare-pid',
        '--unshare-ipc',
        '--unshare-uts',
        '--die-with-parent',
        '--as-pid-1',
        // No controlling terminal: a run cannot push keystrokes into the service's terminal (TIOCSTI).
        '--new-session',
        '--ro-bind',
        '/',
        '/',
        ...(runtime ? ['--ro-bind', runtime, RUNTIME_MOUNT] : []),
        '--dev',
        '/dev',
        '--proc',
        '/proc',
        ...['--size', String(options.tmpKb * 1024), '--perms', '1777', '--tmpfs', '/tmp'],
        ...(boundDir ? ['--bind', boundDir, SANDBOX_DIR] : []),
        // /dev/shm is bwrap's own, in its fresh /dev; a link (/var/tmp to /tmp, say) leads to an emptied directory already.
        ...['/var/tmp', '/run', '/dev/shm'].filter((dir) => dir === '/dev/shm' || isDirectory(dir)).flatMap((dir) => emptyTmpfs(dir, 16 * 1024, '0755')),
        ...hideArgs(options.hiddenPaths, boundDir),
        ...(options.bunPath ? ['--dir', BIN_DIR, '--symlink', options.bunPath, `${BIN_DIR}/bun`] : []),
        // Entered before the uid changes: a command running beside this one under another uid may own it by then.
        ...(boundDir ? ['--chdir', SANDBOX_DIR] : []),
        // Not as root, the run owns /dev's tmpfs: read-only, it cannot fill memory there.
        '--remount-ro',
        '/dev',
        // As root, only what --chdir and setpriv need to reach the directory and drop to the run's uid, which clears them.
        ...(asRoot ? ['--cap-drop', 'ALL', ...(uid ? ROOT_CAPS.flatMap((cap) => ['--cap-add', cap]) : [])] : []),
        '--',
      ]
      const dropToUid = uid
        ? [
            tools.setpriv,
            `--reuid=${uid}`,
            `--regid=${uid}`,
            '--clear-groups',
            '--no-new-privs',
            '--bounding-set=-all',
            '--inh-caps=-all',
            '--pdeathsig',
            'KILL',
            '--',
          ]
        : []
      const limits = [
        tools.prlimit,
        '--core=0',
        ...(options.nproc === undefined ? [] : [`--nproc=${options.nproc}`]),
        ...(options.maxFileBytes === undefined ? [] : [`--fsize=${options.maxFileBytes}`]),
        '--',
      ]
      return [
        // The whole run dies with the service, from the first instruction on.
        tools.setpriv,
        '--pdeathsig',
        'KILL',
        '--',
        tools.sh,
        '-c',
        HOST_SCRIPT,
        'sandbox-launch',
        options.cgroupProcs.join('\n'),
        uid,
        mode,
        ...limits,
        ...bwrap,
        ...dropToUid,
        tools.sh,
        '-c',
        RUN_SCRIPT,
        'sandbox-run',
        mode,
        ...visible.command,
      ]
    },
  }
}
