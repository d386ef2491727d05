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
