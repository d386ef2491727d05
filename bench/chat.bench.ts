/**
 * The chat relay: a scripted upstream of 10,000 tokens streamed through POST /api/chat and through a bare
 * Bun SSE relay (bench/baseline/sse-relay.ts), same upstream, same machine, same run. Prints time to first
 * byte and to first token, and tokens per second, for both; then the relays' CPU per token when the upstream
 * writes one token at a time and when it writes 50 at a time; then time to first token while 16 streams run.
 */
import { processCpuSeconds } from './lib/cpu.ts'
import { accessTokenFor, startBareBaseline, startService, type Running } from './lib/processes.ts'
import { quickOr } from './lib/mode.ts'
import { printTable, ratioOf, spreadOf, writeResults, type Row } from './lib/report.ts'

const TOKENS = 10_000
const ROUNDS = quickOr(9, 3)
const WARM_UP = quickOr(5, 2)
const email = 'bench@example.com'
const password = `bench-${crypto.randomUUID()}`

/**
 * How the upstream writes: `free` sends bursts of 50 as fast as it can (the relay reads whatever piled up);
 * `paced` sends `burst` tokens in one write and the next only once the client has received them through the
 * relay, so every read of the relay holds exactly one burst and nothing waits on a timer.
 */
type Pace = { mode: 'free'; tokens?: number } | { mode: 'paced'; burst: number }

/** Tokens the client has seen through the relay, and the upstream waiting for them. */
class Delivery {
  seen = 0
  private waiter: { until: number; resolve: () => void } | undefined

  reset() {
    this.seen = 0
    this.waiter = undefined
  }

  saw(count: number) {
    this.seen = count
    if (this.waiter && count >= this.waiter.until) {
      this.waiter.resolve()
      this.waiter = undefined
    }
  }

  /** Resolves once `count` tokens were seen, or after `patienceMs`: a relay that holds tokens back only slows the run. */
  until(count: number, patienceMs: number): Promise<void> {
    if (this.seen >= count) return Promise.resolve()
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, patienceMs)
      this.waiter = {
        until: count,
        resolve: () => {
          clearTimeout(timer)
          resolve()
        },
      }
    })
  }
}

/** An OpenAI-compatible upstream answering every completion with the same 10,000 tokens, paced as `pace` says. */
function startUpstream(delivery: Delivery) {
  const encoder = new TextEncoder()
  const frames = Array.from(
    { length: TOKENS },
    (_, i) =>
      `data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', created: 0, model: 'bench', choices: [{ index: 0, delta: { content: `tok${i} ` }, finish_reason: null }] })}\n\n`,
  )
  const tail = encoder.encode(
    `data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', created: 0, model: 'bench', choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] })}\n\ndata: [DONE]\n\n`,
  )
  const bursts = new Map<number, Uint8Array[]>()
  const burstsOf = (size: number) => {
    let list = bursts.get(size)
    if (!list) {
      list = []
      for (let i = 0; i < TOKENS; i += size) list.push(encoder.encode(frames.slice(i, i + size).join('')))
      bursts.set(size, list)
    }
    return list
  }
  let pace: Pace = { mode: 'free' }
  const server = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    idleTimeout: 0,
    async fetch(request) {
      await request.text()
      const current = pace
      return new Response(
        new ReadableStream({
          async pull(controller) {
            if (current.mode === 'free') {
              // Tokens leave in small bursts, as a provider's do, not as one buffer.
              for (const [i, burst] of burstsOf(1)
                .slice(0, current.tokens ?? TOKENS)
                .entries()) {
                controller.enqueue(burst)
                if (i % 50 === 49) await Bun.sleep(0)
              }
            } else {
              let sent = 0
              for (const burst of burstsOf(current.burst)) {
                controller.enqueue(burst)
                sent = Math.min(TOKENS, sent + current.burst)
                await delivery.until(sent, 50)
              }
            }
            controller.enqueue(tail)
            controller.close()
          },
        }),
        { headers: { 'content-type': 'text/event-stream' } },
      )
    },
  })
  return {
    url: `http://127.0.0.1:${server.port}/v1`,
    pace: (next: Pace) => {
      pace = next
    },
    stop: () => server.stop(true),
  }
}

interface Relay {
  ttfbMs: number
  firstTokenMs: number
  totalMs: number
  events: number
  /** Upstream tokens the client received in text deltas: one delta may carry several (the service sends one per upstream read). */
  text: number
}

async function relayOnce(url: string, headers: Record<string, string>, body: unknown, delivery?: Delivery): Promise<Relay> {
  delivery?.reset()
  const started = performance.now()
  const response = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) })
  if (!response.ok) throw new Error(`${url} answered ${response.status}: ${await response.text()}`)
  const reader = response.body!.getReader()
  const decoder = new TextDecoder()
  let ttfbMs = 0
  let firstTokenMs = 0
  let events = 0
  let text = 0
  let buffered = ''
  for (;;) {
    const { value, done } = await reader.read()
    if (done) break
    if (!ttfbMs) ttfbMs = performance.now() - started
    buffered += decoder.decode(value, { stream: true })
    let end: number
    while ((end = buffered.indexOf('\n\n')) >= 0) {
      const event = buffered.slice(0, end)
      buffered = buffered.slice(end + 2)
      if (!event.includes('data: ')) continue
      events++
      if (event.includes('"text-delta"')) {
        // Every upstream token reads `tok<n> `; the event's id line (a generation id) is left out of the count.
        text += event.slice(event.indexOf('data: ')).split('tok').length - 1
        if (!firstTokenMs) firstTokenMs = performance.now() - started
      }
    }
    delivery?.saw(text)
  }
  return { ttfbMs, firstTokenMs, totalMs: performance.now() - started, events, text }
}

// The upstream's write sizes for the CPU figures, with the bound on the ratio to the bare relay.
const PACED = [
  { burst: 1, target: { atMost: 1.15 } },
  { burst: 50, target: { atMost: 1.3 } },
] as const
const PACED_ROUNDS = quickOr(11, 3)
const cpuNote = `server CPU time (every thread, from /proc) over the tokens the client received (the bare relay writes one event per token, the service one per upstream read), median of ${PACED_ROUNDS} alternating rounds after one discarded; each upstream write waits until the client has received the previous one through the relay, so each read of the relay holds one write`

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!
const percentile = (values: number[], p: number) => [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor((values.length * p) / 100))]!

// First token under load: STREAMS clients, each starting a chat as soon as its last one ended, for LOAD_SECONDS
// per relay; every answer is SHORT_ANSWER tokens long, so most of the time some stream is starting while the
// others relay.
const STREAMS = 16
const SHORT_ANSWER = 500
const LOAD_SECONDS = quickOr(6, 2)
// The service's p99 first token under that load, against the bare relay's.
const FIRST_TOKEN_P99_RATIO = 1.5

async function firstTokensUnderLoad(start: (client: number, round: number) => Promise<Relay>): Promise<number[]> {
  const firstTokens: number[] = []
  const until = performance.now() + LOAD_SECONDS * 1000
  await Promise.all(
    Array.from({ length: STREAMS }, async (_, client) => {
      for (let round = 0; performance.now() < until; round++) {
        const relay = await start(client, round)
        if (relay.text !== SHORT_ANSWER) throw new Error(`a relay under load delivered ${relay.text} of ${SHORT_ANSWER} tokens`)
        firstTokens.push(relay.firstTokenMs)
      }
    }),
  )
  return firstTokens
}

export async function run(): Promise<Row[]> {
  const delivery = new Delivery()
  const upstream = startUpstream(delivery)
  const running: Running[] = []
  try {
    // The limiter still runs on every request; its budget only has to fit the load phase.
    const service = await startService({
      ADMIN_EMAIL: email,
      ADMIN_PASSWORD: password,
      OPENAI_BASE_URL: upstream.url,
      LOG_LEVEL: 'info',
      RATE_LIMIT_CHAT_PER_MINUTE: '1000000',
      RATE_LIMIT_BURST: '1000000',
    })
    running.push(service)
    const bare = await startBareBaseline('sse-relay.ts', { UPSTREAM_URL: upstream.url })
    running.push(bare)
    const accessToken = await accessTokenFor(service.url, { email, password })
    const auth = { authorization: `Bearer ${accessToken}` }
    console.log(`chat: service ${service.url} (${JSON.stringify(service.facts)}), bare relay ${bare.url}, upstream ${upstream.url}, ${TOKENS} tokens`)

    const body = { model: 'bench', messages: [{ role: 'user', content: 'stream' }], stream: true }
    // Warm-up: JIT, connections, the first SQLite writes.
    for (let i = 0; i < WARM_UP; i++) {
      await relayOnce(`${bare.url}/`, {}, body)
      await relayOnce(`${service.url}/api/chat`, auth, { messages: [{ role: 'user', content: 'warm up' }] })
    }
    const bareRuns: Relay[] = []
    const serviceRuns: Relay[] = []
    for (let round = 0; round < ROUNDS; round++) {
      bareRuns.push(await relayOnce(`${bare.url}/`, {}, body))
      serviceRuns.push(await relayOnce(`${service.url}/api/chat`, auth, { messages: [{ role: 'user', content: `round ${round}` }] }))
    }
    for (const r of [...bareRuns, ...serviceRuns]) if (r.text !== TOKENS) throw new Error(`a relay delivered ${r.text} of ${TOKENS} tokens`)
    const b = (pick: (r: Relay) => number) => median(bareRuns.map(pick))
    const s = (pick: (r: Relay) => number) => median(serviceRuns.map(pick))
    const over = (pick: (r: Relay) => number) => spreadOf(serviceRuns.map(pick))
    const rate = (r: Relay) => r.text / (r.totalMs / 1000)
    const note = `median of ${ROUNDS} alternating rounds; the service also stores the chat, the answer and a resumable event log`

    // CPU per token: each relay's server CPU over the tokens its client received, per round; the median round of
    // each, as a neighbour's burst of work can double one round of the one-token case.
    const cpuRows: Row[] = []
    for (const { burst, target } of PACED) {
      upstream.pace({ mode: 'paced', burst })
      const perEvent = { bare: [] as number[], service: [] as number[] }
      const measured = async (which: 'bare' | 'service', round: number) => {
        const { pid } = which === 'bare' ? bare : service
        const before = processCpuSeconds(pid)
        const relay =
          which === 'bare'
            ? await relayOnce(`${bare.url}/`, {}, body, delivery)
            : await relayOnce(`${service.url}/api/chat`, auth, { messages: [{ role: 'user', content: `paced ${burst} ${round}` }] }, delivery)
        const after = processCpuSeconds(pid)
        if (relay.text !== TOKENS) throw new Error(`a relay delivered ${relay.text} of ${TOKENS} tokens`)
        if (round >= 0 && before !== undefined && after !== undefined) perEvent[which].push(((after - before) * 1e6) / relay.text)
      }
      for (let round = -1; round < PACED_ROUNDS; round++) {
        await measured('bare', round)
        await measured('service', round)
      }
      if (!perEvent.bare.length || !perEvent.service.length) continue
      const [baseline, value] = [median(perEvent.bare), median(perEvent.service)]
      cpuRows.push({
        figure: `server CPU per token, upstream writes ${burst === 1 ? 'one token' : `${burst} tokens`} at a time`,
        unit: 'µs',
        baseline,
        value,
        ratio: ratioOf(value, baseline),
        target,
        notes: [cpuNote],
        spread: spreadOf(perEvent.service),
      })
    }
    upstream.pace({ mode: 'free', tokens: SHORT_ANSWER })
    const loaded = { bare: [] as number[], service: [] as number[] }
    /** The service's first tokens of each half, for the spread of its percentiles. */
    const serviceHalves: number[][] = []
    // Alternating halves, so a neighbour's burst of work falls on both.
    for (let half = 0; half < 2; half++) {
      loaded.bare.push(...(await firstTokensUnderLoad(() => relayOnce(`${bare.url}/`, {}, body))))
      const firstTokens = await firstTokensUnderLoad((client, round) =>
        relayOnce(`${service.url}/api/chat`, auth, { messages: [{ role: 'user', content: `load ${half} ${client} ${round}` }] }),
      )
      serviceHalves.push(firstTokens)
      loaded.service.push(...firstTokens)
    }
    upstream.pace({ mode: 'free' })
    const loadNote = `${STREAMS} clients, each starting a ${SHORT_ANSWER}-token chat as soon as its last ended, ${2 * LOAD_SECONDS} s per relay in two alternating halves; ${loaded.bare.length} bare and ${loaded.service.length} service answers`
    const loadRows: Row[] = [
      {
        figure: `time to first token, ${STREAMS} streams, p50`,
        unit: 'ms',
        baseline: percentile(loaded.bare, 50),
        value: percentile(loaded.service, 50),
        ratio: ratioOf(percentile(loaded.service, 50), percentile(loaded.bare, 50)),
        notes: [loadNote],
        spread: spreadOf(serviceHalves.map((half) => percentile(half, 50))),
      },
      {
        figure: `time to first token, ${STREAMS} streams, p99`,
        unit: 'ms',
        baseline: percentile(loaded.bare, 99),
        value: percentile(loaded.service, 99),
        ratio: ratioOf(percentile(loaded.service, 99), percentile(loaded.bare, 99)),
        target: { atMost: FIRST_TOKEN_P99_RATIO },
        notes: [loadNote],
        spread: spreadOf(serviceHalves.map((half) => percentile(half, 99))),
      },
    ]
    return [
      {
        figure: 'time to first byte',
        unit: 'ms',
        baseline: b((r) => r.ttfbMs),
        value: s((r) => r.ttfbMs),
        ratio: null,
        notes: [note],
        spread: over((r) => r.ttfbMs),
      },
      { figure: 'added time to first byte', unit: 'ms', baseline: null, value: s((r) => r.ttfbMs) - b((r) => r.ttfbMs), ratio: null, limit: { atMost: 5 } },
      {
        figure: 'time to first token',
        unit: 'ms',
        baseline: b((r) => r.firstTokenMs),
        value: s((r) => r.firstTokenMs),
        ratio: null,
        spread: over((r) => r.firstTokenMs),
      },
      { figure: 'added time to first token', unit: 'ms', baseline: null, value: s((r) => r.firstTokenMs) - b((r) => r.firstTokenMs), ratio: null },
      {
        figure: 'tokens per second',
        unit: 'tokens/s',
        baseline: b(rate),
        value: s(rate),
        ratio: ratioOf(s(rate), b(rate)),
        target: { atLeast: 0.6 },
        spread: over(rate),
      },
      {
        figure: `time to relay ${TOKENS} tokens`,
        unit: 'ms',
        baseline: b((r) => r.totalMs),
        value: s((r) => r.totalMs),
        ratio: ratioOf(
          s((r) => r.totalMs),
          b((r) => r.totalMs),
        ),
      },
      ...cpuRows,
      ...loadRows,
    ]
  } finally {
    for (const r of running.reverse()) await r.stop()
    upstream.stop()
  }
}

if (import.meta.main) {
  const rows = await run()
  printTable(rows)
  console.log(`results: ${writeResults('chat', rows)}`)
}
