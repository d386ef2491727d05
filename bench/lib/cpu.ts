/**
 * CPU time a process has used, for figures per request or per event: only the measured server's share counts,
 * not the load generator's or a neighbour's.
 */
import { readdirSync, readFileSync } from 'node:fs'

const clockTicks = (() => {
  const out = Bun.spawnSync(['getconf', 'CLK_TCK']).stdout.toString().trim()
  return Number(out) || 100
})()

/**
 * Seconds of CPU (user and system) used so far by every thread of `pid`: the nanosecond run times of
 * /proc/<pid>/task/<tid>/schedstat, summed, since utime and stime move in whole ticks (10 ms) and a relay of
 * 10,000 events uses a few of them. A thread that ended in between is not counted; undefined where /proc is not
 * available.
 */
export function processCpuSeconds(pid: number): number | undefined {
  let threads: string[]
  try {
    threads = readdirSync(`/proc/${pid}/task`)
  } catch {
    return undefined
  }
  let nanos = 0
  for (const tid of threads) {
    try {
      nanos += Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0])
    } catch {
      // The thread ended between the listing and the read.
    }
  }
  if (Number.isFinite(nanos) && nanos > 0) return nanos / 1e9
  // No schedstat (a kernel without it): whole ticks.
  const ticks = cpuTicks(pid)
  return ticks === undefined ? undefined : ticks / clockTicks
}

/** What a process had used at one moment: each thread's nanoseconds where /proc has them, else the whole process's seconds. */
export interface CpuReading {
  threads?: Map<string, number>
  seconds?: number
}

export function cpuReading(pid: number): CpuReading {
  let threads: string[]
  try {
    threads = readdirSync(`/proc/${pid}/task`)
  } catch {
    return {}
  }
  const byThread = new Map<string, number>()
  for (const tid of threads) {
    try {
      byThread.set(tid, Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]))
    } catch {
      // The thread ended between the listing and the read.
    }
  }
  const total = [...byThread.values()].reduce((sum, n) => sum + n, 0)
  return Number.isFinite(total) && total > 0 ? { threads: byThread } : { seconds: processCpuSeconds(pid) }
}

/**
 * Seconds of CPU `pid` used since `before`, thread by thread: a thread that ended in between takes its whole run
 * time away from a plain difference of totals, which can leave a short window below zero.
 */
export function cpuSecondsSince(pid: number, before: CpuReading): number | undefined {
  const after = cpuReading(pid)
  if (before.threads && after.threads) {
    let nanos = 0
    for (const [tid, used] of after.threads) nanos += used - (before.threads.get(tid) ?? 0)
    return nanos / 1e9
  }
  return before.seconds !== undefined && after.seconds !== undefined ? after.seconds - before.seconds : undefined
}

/** utime + stime of a process, from /proc/<pid>/stat (fields 14 and 15, after the parenthesised name). */
export function cpuTicks(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    return Number(fields[11]) + Number(fields[12])
  } catch {
    return undefined
  }
}

/** Busy plus stolen seconds of the whole machine, from the first line of /proc/stat. */
export function machineCpuSeconds(): number | undefined {
  try {
    const [user, nice, system, , , irq, softirq, steal] = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number)
    return [user, nice, system, irq, softirq, steal].reduce((sum: number, n) => sum + (n ?? 0), 0) / clockTicks
  } catch {
    return undefined
  }
}
