/**
 * How long the event loop goes between two turns, in CPU time of its own thread: a timer due every millisecond
 * notes the thread's CPU time each time it runs, and a gap is the work done between two runs, in one go or in
 * several tasks of one turn, which is what a request arriving at the worst moment waits for on a free core. Unlike
 * a wall-clock wait, it does not grow when the host is busy with other processes.
 */
// Not from stall-poller.ts: importing that Worker's script sets this thread's onmessage, which keeps the process alive.
import { epochNow } from './clock.ts'

export interface Turn {
  /** When the turn began, in ms since the epoch (as the client's samples). */
  at: number
  /** CPU time of the event loop's thread from the previous timer run to this one. */
  cpuMs: number
  wallMs: number
}

/** Starts metering; `stop` answers every turn that took at least `atLeastMs` of CPU. */
export function meterLoop(atLeastMs = 2): { stop(): Turn[] } {
  const cpuNow = () => {
    const { user, system } = process.threadCpuUsage()
    return (user + system) / 1000
  }
  const turns: Turn[] = []
  let lastCpu = cpuNow()
  let lastAt = epochNow()
  const timer = setInterval(() => {
    const cpu = cpuNow()
    const at = epochNow()
    if (cpu - lastCpu >= atLeastMs) turns.push({ at: lastAt, cpuMs: cpu - lastCpu, wallMs: at - lastAt })
    lastCpu = cpu
    lastAt = at
  }, 1)
  return {
    stop() {
      clearInterval(timer)
      return turns
    },
  }
}
