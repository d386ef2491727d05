/**
 * Per-run cgroups (v1 `memory` and `pids` hierarchies): the kernel holds the whole process tree to a
 * memory ceiling and a task count, counts when either was hit, and lists every member for the final kill.
 * Each run gets `<hierarchy>/<parent>/<service pid>-<n>`, removed when the run ends.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { drainWaits, killPids } from './process-table.ts'

export interface CgroupSupport {
  /** Parent directory of per-run memory cgroups, when the memory controller is usable. */
  readonly memory?: string
  /** Parent directory of per-run pids cgroups, when the pids controller is usable. */
  readonly pids?: string
  /** Why each controller is or is not used, for the enforcement report. */
  readonly notes: { readonly memory: string; readonly pids: string }
}

const controllerFile = { memory: 'memory.limit_in_bytes', pids: 'pids.max' } as const

function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err)
}

/** Whether a process with this id exists (zombies included). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM'
  }
}

/** Removes per-run cgroups a service that died without cleaning up left behind. */
function removeStale(parent: string): void {
  for (const name of readdirSync(parent)) {
    const owner = Number(name.split('-')[0])
    if (!Number.isInteger(owner) || owner === process.pid || alive(owner)) continue
    const dir = join(parent, name)
    try {
      killPids(readPids(join(dir, 'cgroup.procs')))
      rmdirSync(dir)
    } catch {
      // still draining or not ours to remove: the next start-up tries again
    }
  }
}

/**
 * Finds which controllers can be used: the hierarchy must be mounted, the parent creatable, and a
 * probe cgroup must accept a limit. `root` false turns cgroups off (the fallbacks then apply).
 */
export function detectCgroups(root: string | false, parentName: string): CgroupSupport {
  if (root === false) return { notes: { memory: 'cgroups turned off by configuration', pids: 'cgroups turned off by configuration' } }
  const found: { memory?: string; pids?: string } = {}
  const notes = { memory: '', pids: '' }
  for (const controller of ['memory', 'pids'] as const) {
    const hierarchy = join(root, controller)
    if (!existsSync(join(hierarchy, 'cgroup.procs'))) {
      notes[controller] = `no cgroup v1 ${controller} hierarchy at ${hierarchy}`
      continue
    }
    const parent = join(hierarchy, parentName)
    const probe = join(parent, `${process.pid}-probe`)
    try {
      mkdirSync(probe, { recursive: true })
      const limitFile = join(probe, controllerFile[controller])
      if (!existsSync(limitFile)) throw new Error(`${controllerFile[controller]} is missing`)
      writeFileSync(limitFile, controller === 'memory' ? String(64 * 1024 * 1024) : '64')
      rmdirSync(probe)
      removeStale(parent)
      found[controller] = parent
      notes[controller] = `cgroup v1 ${hierarchy}`
    } catch (err) {
      try {
        rmdirSync(probe)
      } catch {
        // never created
      }
      notes[controller] = `cgroup ${hierarchy} not usable (${errorText(err)})`
    }
  }
  return { ...found, notes }
}

function readPids(file: string): number[] {
  try {
    return readFileSync(file, 'utf8').split('\n').filter(Boolean).map(Number)
  } catch {
    return []
  }
}

/** A counter line (`name value`) of a cgroup flat-keyed file such as memory.oom_control or pids.events. */
function readCounter(file: string, key: string): number {
  try {
    const line = readFileSync(file, 'utf8')
      .split('\n')
      .find((l) => l.startsWith(`${key} `))
    return line ? Number(line.slice(key.length + 1)) : 0
  } catch {
    return 0
  }
}

export interface RunCgroup {
  /** `cgroup.procs` files the launcher joins (by writing 0) before anything of the run starts. */
  readonly procsFiles: readonly string[]
  readonly limitsMemory: boolean
  readonly limitsProcesses: boolean
  /** True when the run is in at least one cgroup: then members() lists every process of it. */
  readonly holdsTree: boolean
  /** Processes the kernel killed for exceeding the memory ceiling. */
  oomKills(): number
  /** Forks refused because the task ceiling was reached. */
  processLimitHits(): number
  /** Pids of the processes in the run's cgroups now. */
  members(): number[]
  /** Kills every member, waits until the cgroups are empty and removes them. */
  remove(): Promise<void>
}

let runCounter = 0

export function createRunCgroup(support: CgroupSupport, limits: { memoryBytes: number; maxProcesses: number }): RunCgroup {
  const name = `${process.pid}-${++runCounter}`
  const dirs: string[] = []
  const memory = support.memory && join(support.memory, name)
  const pids = support.pids && join(support.pids, name)
  try {
    if (memory) {
      mkdirSync(memory, { recursive: true })
      dirs.push(memory)
      writeFileSync(join(memory, 'memory.limit_in_bytes'), String(limits.memoryBytes))
      // Same ceiling for memory plus swap, so a run cannot spill into swap; absent without swap accounting.
      const memsw = join(memory, 'memory.memsw.limit_in_bytes')
      if (existsSync(memsw)) writeFileSync(memsw, String(limits.memoryBytes))
    }
    if (pids) {
      mkdirSync(pids, { recursive: true })
      dirs.push(pids)
      writeFileSync(join(pids, 'pids.max'), String(limits.maxProcesses))
    }
  } catch (err) {
    for (const dir of dirs.reverse()) rmdirSync(dir)
    throw err
  }

  return {
    procsFiles: dirs.map((dir) => join(dir, 'cgroup.procs')),
    limitsMemory: Boolean(memory),
    limitsProcesses: Boolean(pids),
    holdsTree: dirs.length > 0,
    oomKills: () => (memory ? readCounter(join(memory, 'memory.oom_control'), 'oom_kill') : 0),
    processLimitHits: () => (pids ? readCounter(join(pids, 'pids.events'), 'max') : 0),
    members: () => [...new Set(dirs.flatMap((dir) => readPids(join(dir, 'cgroup.procs'))))],
    async remove() {
      for (const dir of dirs) {
        const procs = join(dir, 'cgroup.procs')
        // Killed tasks leave the cgroup as they exit; give them about two seconds.
        const waits = drainWaits()
        for (;;) {
          const members = readPids(procs)
          if (members.length === 0) break
          const wait = waits.next()
          if (wait.done) throw new Error(`${dir} still holds ${members.length} processes`)
          killPids(members)
          await Bun.sleep(wait.value)
        }
        // An exiting task may keep the cgroup busy a moment after it left cgroup.procs.
        const busyWaits = drainWaits()
        for (;;) {
          try {
            rmdirSync(dir)
            break
          } catch (err) {
            if ((err as NodeJS.ErrnoException).code === 'ENOENT') break
            const wait = busyWaits.next()
            if (wait.done) throw err
            await Bun.sleep(wait.value)
          }
        }
      }
    },
  }
}
