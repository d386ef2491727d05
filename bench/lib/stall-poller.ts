/**
 * A client on its own thread, so a stalled service cannot delay its clock: polls GET /health every 20 ms
 * (each poll on schedule, whether the previous one answered or not) and runs one search at a time with
 * a pause between, until told to stop; answers every latency it saw.
 */
declare const self: Worker

export interface PollRequest {
  url: string
  queries: string[]
  pollMs: number
  searchPauseMs: number
}

export interface PollAnswer {
  /** Milliseconds from when each poll was due to its answer. */
  health: number[]
  search: number[]
  failures: number
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
  const started = performance.now()
  void (async () => {
    for (let n = 0; running; n++) {
      const due = started + n * pollMs
      const wait = due - performance.now()
      if (wait > 0) await Bun.sleep(wait)
      fetch(`${url}/health`)
        .then(async (response) => {
          await response.arrayBuffer()
          if (!response.ok) answer.failures++
          answer.health.push(performance.now() - due)
        })
        .catch(() => answer.failures++)
    }
  })()
  for (let n = 0; running; n++) {
    const at = performance.now()
    try {
      const response = await fetch(`${url}/search?q=${encodeURIComponent(queries[n % queries.length]!)}`)
      await response.arrayBuffer()
      if (!response.ok) answer.failures++
      answer.search.push(performance.now() - at)
    } catch {
      answer.failures++
    }
    await Bun.sleep(searchPauseMs)
  }
}
