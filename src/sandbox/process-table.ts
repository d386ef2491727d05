/**
 * A snapshot of the host's processes from /proc: how the sandbox finds a run's processes when no
 * cgroup holds them (to measure memory and count tasks) and kills stragglers by owner.
 */
import { readdirSync, readFileSync } from 'node:fs'

export interface ProcessEntry {
  readonly pid: number
  readonly ppid: number
  /** Real user id. */
  readonly uid: number
  /** Exited but not yet reaped: holds no memory and cannot be killed again. */
  readonly zombie: boolean
  readonly threads: number
  /**
   * Resident anonymous and shared-memory pages: what the process itself allocated. File pages (the
   * Bun binary, mapped by every Bun process) are left out, or a few processes would count it many times.
   */
  readonly privateBytes: number
}

function field(status: string, name: string): string | undefined {
  const at = status.indexOf(`\n${name}:`)
  if (at < 0) return undefined
  const end = status.indexOf('\n', at + 1)
  return status.slice(at + name.length + 2, end < 0 ? undefined : end).trim()
}

function readEntry(pid: number): ProcessEntry | undefined {
  let status: string
  try {
    status = readFileSync(`/proc/${pid}/status`, 'latin1')
  } catch {
    return undefined // exited between listing and reading
  }
  const uid = field(status, 'Uid')
  const ppid = field(status, 'PPid')
  if (uid === undefined || ppid === undefined) return undefined
  // Zombies have no Rss* lines: they hold no memory but still count as tasks.
  const kb = (name: string) => Number.parseInt(field(status, name) ?? '0', 10) || 0
  const state = field(status, 'State') ?? ''
  return {
    pid,
    zombie: state.startsWith('Z') || state.startsWith('X'),
    ppid: Number(ppid),
    uid: Number(uid.split(/\s+/)[0]),
    threads: Number(field(status, 'Threads') ?? 1),
    privateBytes: (kb('RssAnon') + kb('RssShmem')) * 1024,
  }
}

export function readProcessTable(): ProcessEntry[] {
  const entries: ProcessEntry[] = []
  for (const name of readdirSync('/proc')) {
    if (name.charCodeAt(0) < 48 || name.charCodeAt(0) > 57) continue
    const entry = readEntry(Number(name))
    if (entry) entries.push(entry)
  }
  return entries
}

/** Live processes running as `uid`. */
export function ownedBy(table: readonly ProcessEntry[], uid: number): ProcessEntry[] {
  return table.filter((p) => p.uid === uid && !p.zombie)
}

/** `root` and every process below it. */
export function treeOf(table: readonly ProcessEntry[], root: number): ProcessEntry[] {
  const children = new Map<number, ProcessEntry[]>()
  for (const p of table) {
    const siblings = children.get(p.ppid)
    if (siblings) siblings.push(p)
    else children.set(p.ppid, [p])
  }
  const tree: ProcessEntry[] = []
  const self = table.find((p) => p.pid === root)
  const queue = self ? [self] : []
  while (queue.length > 0) {
    const p = queue.pop()!
    tree.push(p)
    queue.push(...(children.get(p.pid) ?? []))
  }
  return tree
}

/** Sends SIGKILL to each pid; ones already gone are skipped. */
export function killPids(pids: Iterable<number>): void {
  for (const pid of pids) {
    try {
      process.kill(pid, 'SIGKILL')
    } catch {
      // already exited
    }
  }
}

/**
 * Pauses, in ms, between checks that killed processes are gone: short at first (most are gone within a
 * millisecond or two), then 20 ms, about two seconds in all.
 */
export function* drainWaits(): Generator<number> {
  for (const ms of [1, 2, 4, 8, 16]) yield ms
  for (let i = 0; i < 98; i++) yield 20
}

/** The children of `pid`, from the kernel's own list (no scan of the process table); empty when it is gone. */
export function childrenOf(pid: number): number[] {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'latin1').split(' ').filter(Boolean).map(Number)
  } catch {
    return []
  }
}

/** Whether `pid` has exited (or is a zombie: exited, not yet reaped). */
export function hasExited(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'latin1')
    const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3)
    return state === 'Z' || state === 'X'
  } catch {
    return true
  }
}
