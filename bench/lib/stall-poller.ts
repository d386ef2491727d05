/**
 * A client on its own thread, so a stalled service cannot delay its clock: polls GET /health every 20 ms
 * (each poll on schedule, whether the previous one answered or not) and runs one search at a time with
 * a pause between, until told to stop; answers every latency it saw, each with when it was due, and the CPU
 * time the service's main thread had meanwhile.
 *
 * That CPU time separates the service's own work from the machine's: on a host shared with other processes a
 * thread may wait for a core for far longer than it runs, and the wall-clock wait of a poll then says more about
 * the host than about the service. Read from /proc (Linux); 0 where that is not there.
 */
import { readFileSync } from 'node:fs'
import { epochNow } from './clock.ts'

declare const self: Worker

export interface PollRequest {
  url: string
  queries: string[]
  pollMs: number
  searchPauseMs: number
}

export interface Sample {
  /** When the poll was due or the search sent, in ms since the epoch (performance.timeOrigin + performance.now()). */
  at: number
  /** How long it waited for its answer, from `at`. */
  ms: number
  /** CPU time the service's main thread ran meanwhile, in ms. */
  cpuMs: number
}

export interface PollAnswer {
  health: Sample[]
  search: Sample[]
  failures: number
}

// The process's main thread has the process's id as its thread id; the first field is its time on a CPU, in ns.
const schedstat = `/proc/${process.pid}/task/${process.pid}/schedstat`
function mainThreadCpuMs(): number {
  try {
    return Number(readFileSync(schedstat, 'latin1').split(' ')[0]) / 1e6
  } catch {
    return 0
  }
}

let running = false
const answer: PollAnswer = { health: [], search: [], failures: 0 }

self.onmessage = async ({ data }: MessageEvent<PollRequest | 'stop'>) => {
  if (data === 'stop') {
    running = false
    // Outstanding polls settle first: a stall in progress must be counted, not dropped.
    await Bun.sleep(200)
    self.postMessage(answer)
    return
  }
  running = true
  const { url, queries, pollMs, searchPauseMs } = data
  const started = epochNow()
  void (async () => {
    for (let n = 0; running; n++) {
      const due = started + n * pollMs
      const wait = due - epochNow()
      if (wait > 0) await Bun.sleep(wait)
      const cpuAtStart = mainThreadCpuMs()
      fetch(`${url}/health`)
        .then(async (response) => {
          await response.arrayBuffer()
          if (!response.ok) answer.failures++
          answer.health.push({ at: due, ms: epochNow() - due, cpuMs: mainThreadCpuMs() - cpuAtStart })
        })
        .catch(() => answer.failures++)
    }
  })()
  for (let n = 0; running; n++) {
    const at = epochNow()
    const cpuAtStart = mainThreadCpuMs()
    try {
      const response = await fetch(`${url}/search?q=${encodeURIComponent(queries[n % queries.length]!)}`)
      await response.arrayBuffer()
      if (!response.ok) answer.failures++
      answer.search.push({ at, ms: epochNow() - at, cpuMs: mainThreadCpuMs() - cpuAtStart })
    } catch {
      answer.failures++
    }
    await Bun.sleep(searchPauseMs)
  }
}
