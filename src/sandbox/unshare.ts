/**
 * The fallback launcher, where bubblewrap is not installed: `unshare` gives the run its own network, PID,
 * mount, IPC and UTS namespaces; a small shell (running as root inside them) joins the run's cgroups,
 * replaces /tmp with a fresh tmpfs holding a copy of the run's files, hides socket and data directories,
 * then drops to the run's own unprivileged uid and execs the program, which becomes PID 1 of the namespace:
 * when it exits or is killed, the kernel kills every process left in it. The program gets SIGKILL when
 * unshare dies (the uid switch clears the parent-death signal `--kill-child` set, so setpriv sets it again).
 */
import { BIN_DIR, LAUNCHER_PATH, READY_MARKER, RUNTIME_MOUNT, SANDBOX_DIR, visibleCommand, type Launcher, type LaunchOptions } from './launch.ts'

/**
 * Arguments: $1 run dir, $2 uid ('' keeps the current one), $3 /tmp size in KiB, $4 RLIMIT_NPROC ('' none),
 * $5 paths to hide (one per line), $6 cgroup.procs files to join (one per line), $7 a directory to bind at
 * RUNTIME_MOUNT before anything is hidden ('' none), $8 `copy` (the files are copied into the run dir) or
 * `bind` (the directory itself is mounted read-write there), $9 RLIMIT_FSIZE in bytes ('' none), $10 the Bun
 * binary as seen inside, linked as `bun` in BIN_DIR ('' none), then the command. Without a uid (the service is
 * not root) the program stays root of the user namespace, but with an empty bounding set it starts with no
 * capabilities: it cannot unmount what hides a path.
 * The shell starts in the service-side directory (its cwd), which stays reachable after /tmp is replaced.
 * Its own tools are looked up on LAUNCHER_PATH: the run's PATH names BIN_DIR, which is the host's /tmp until
 * /tmp is replaced. The ownership change never follows a link (a symlink a run left behind cannot hand it a
 * file elsewhere; -execdir works from each directory find reached, so a directory swapped for a link by a
 * command running beside this one cannot redirect it), and in a bound directory skips files with other hard
 * links, which may be the same file as one outside it, and those the uid owns already (a directory's
 * commands reuse their uid when they can).
 */
const INIT_SCRIPT = `set -eu
work=$1 uid=$2 tmp_kb=$3 nproc=$4 hidden=$5 cgroups=$6 runtime=$7 mode=$8 fsize=$9 bun=\${10}
shift 10
run_path=$PATH
PATH=${LAUNCHER_PATH}
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
  if [ "$mode" = bind ]; then find "$work" \\( ! -user "$uid" -o ! -group "$uid" \\) \\( -type d -o -links 1 \\) -execdir chown -h "$uid:$uid" {} +
  else chown -R -P -h "$uid:$uid" "$work"; fi
fi
cd "$work"
unset OLDPWD
PATH=$run_path
echo ${READY_MARKER} >&2
exec 2>&1
if [ -n "$uid" ]; then
  exec prlimit --core=0 \${nproc:+--nproc=$nproc} \${fsize:+--fsize=$fsize} -- setpriv --reuid="$uid" --regid="$uid" --clear-groups --no-new-privs --bounding-set=-all --inh-caps=-all --pdeathsig KILL -- "$@"
fi
exec prlimit --core=0 \${fsize:+--fsize=$fsize} -- setpriv --no-new-privs --bounding-set=-all --inh-caps=-all --pdeathsig KILL -- "$@"
`

export interface UnshareTools {
  readonly unshare: string
  readonly setpriv: string
  readonly prlimit: string
  readonly sh: string
}

export function unshareLauncher(tools: UnshareTools): Launcher {
  return {
    kind: 'unshare',
    command(options: LaunchOptions): string[] {
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
    },
  }
}
