/**
 * The chat relay: a scripted upstream of 10,000 tokens streamed through POST /api/chat and through a bare
 * Bun SSE relay (bench/baseline/sse-relay.ts), same upstream, same machine, same run. Prints time to first
 * byte and to first token, and events per second, for both.
 */
import { accessTokenFor, startBareBaseline, startService, type Running } from './lib/processes.ts'
import { printTable, ratioOf, writeResults, type Row } from './lib/report.ts'

const TOKENS = 10_000
const ROUNDS = 9
const WARM_UP = 5
const email = 'bench@example.com'
const password = `bench-${crypto.randomUUID()}`

/** An OpenAI-compatible upstream answering every completion with the same 10,000 tokens, as fast as it can. */
function startUpstream() {
  const encoder = new TextEncoder()
  const frames = Array.from({ length: TOKENS }, (_, i) =>
    encoder.encode(`data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', created: 0, model: 'bench', choices: [{ index: 0, delta: { content: `tok${i} ` }, finish_reason: null }] })}\n\n`),
  )
  const tail = encoder.encode(
    `data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', created: 0, model: 'bench', choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] })}\n\ndata: [DONE]\n\n`,
  )
  const server = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    idleTimeout: 0,
    async fetch(request) {
      await request.text()
      return new Response(
        new ReadableStream({
          async pull(controller) {
            // Tokens leave in small bursts, as a provider's do, not as one buffer.
            for (let i = 0; i < frames.length; i++) {
              controller.enqueue(frames[i]!)
              if (i % 50 === 49) await Bun.sleep(0)
            }
            controller.enqueue(tail)
            controller.close()
          },
        }),
        { headers: { 'content-type': 'text/event-stream' } },
      )
    },
  })
  return { url: `http://127.0.0.1:${server.port}/v1`, stop: () => server.stop(true) }
}

interface Relay {
  ttfbMs: number
  firstTokenMs: number
  totalMs: number
  events: number
  text: number
}

async function relayOnce(url: string, headers: Record<string, string>, body: unknown): Promise<Relay> {
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
        text++
        if (!firstTokenMs) firstTokenMs = performance.now() - started
      }
    }
  }
  return { ttfbMs, firstTokenMs, totalMs: performance.now() - started, events, text }
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!

export async function run(): Promise<Row[]> {
  const upstream = startUpstream()
  const running: Running[] = []
  try {
    const service = await startService({ ADMIN_EMAIL: email, ADMIN_PASSWORD: password, OPENAI_BASE_URL: upstream.url, LOG_LEVEL: 'info' })
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
    const rate = (r: Relay) => r.events / (r.totalMs / 1000)
    const note = `median of ${ROUNDS} alternating rounds; the service also stores the chat, the answer and a resumable event log`
    return [
      { figure: 'time to first byte', unit: 'ms', baseline: b((r) => r.ttfbMs), value: s((r) => r.ttfbMs), ratio: null, notes: [note] },
      { figure: 'added time to first byte', unit: 'ms', baseline: null, value: s((r) => r.ttfbMs) - b((r) => r.ttfbMs), ratio: null, limit: { atMost: 5 } },
      { figure: 'time to first token', unit: 'ms', baseline: b((r) => r.firstTokenMs), value: s((r) => r.firstTokenMs), ratio: null },
      { figure: 'added time to first token', unit: 'ms', baseline: null, value: s((r) => r.firstTokenMs) - b((r) => r.firstTokenMs), ratio: null },
      { figure: 'events per second', unit: 'events/s', baseline: b(rate), value: s(rate), ratio: ratioOf(s(rate), b(rate)), target: { atLeast: 0.6 } },
      { figure: `time to relay ${TOKENS} tokens`, unit: 'ms', baseline: b((r) => r.totalMs), value: s((r) => r.totalMs), ratio: ratioOf(s((r) => r.totalMs), b((r) => r.totalMs)) },
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
