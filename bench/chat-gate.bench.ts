/**
 * The confidence gate's cost to the first token: POST /api/chat against an upstream sending one token every
 * 100 ms, with a search provider configured, once with the gate on (the default: the answer is measured for
 * confidence as it streams) and once with it off (`options.searchAugmentation: false`), same service, same
 * upstream, alternating rounds. The baseline is the gate-off run; the figure of interest is the added time to the
 * first token, which the issue bounds at 10 ms. Each answer is cancelled once its figures are taken.
 */
import { startFakeOpenAi } from '../test/fakes/openai.ts'
import { startFakeSearxng } from '../test/fakes/search-providers.ts'
import { accessTokenFor, startService, type Running } from './lib/processes.ts'
import { printTable, ratioOf, writeResults, type Row } from './lib/report.ts'

const TOKEN_MS = 100
const TOKENS = 40
/** CHAT_CONFIDENCE_TOKENS, left at its default. */
const WINDOW = 24
const ROUNDS = 11
const WARM_UP = 2
const email = 'bench@example.com'
const password = `bench-${crypto.randomUUID()}`

interface Run {
  firstTokenMs: number
  /** When the data-search-decision chunk arrived; undefined with the gate off. */
  decisionMs?: number
  decision?: { decision: string; tokens: number }
}

/** One answer, read until its first text and (gate on) its decision, then cancelled and drained. */
async function runOnce(url: string, auth: Record<string, string>, gate: boolean, round: number): Promise<Run> {
  const started = performance.now()
  const response = await fetch(`${url}/api/chat`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...auth },
    body: JSON.stringify({ messages: [{ role: 'user', content: `count, round ${round}` }], options: { searchAugmentation: gate } }),
  })
  if (!response.ok) throw new Error(`POST /api/chat answered ${response.status}: ${await response.text()}`)
  const reader = response.body!.getReader()
  const decoder = new TextDecoder()
  const run: Partial<Run> = {}
  let buffered = ''
  let cancelled = false
  for (;;) {
    const { value, done } = await reader.read()
    if (done) break
    buffered += decoder.decode(value, { stream: true })
    let end: number
    while ((end = buffered.indexOf('\n\n')) >= 0) {
      const event = buffered.slice(0, end)
      buffered = buffered.slice(end + 2)
      if (!run.firstTokenMs && event.includes('"text-delta"')) run.firstTokenMs = performance.now() - started
      if (event.includes('"data-search-decision"')) {
        run.decisionMs = performance.now() - started
        run.decision = JSON.parse(event.slice(event.indexOf('data: ') + 6)).data
      }
    }
    if (!cancelled && run.firstTokenMs && (!gate || run.decisionMs)) {
      cancelled = true
      // Nothing more to measure: stop the upstream, and read on to [DONE] so rounds never overlap.
      await fetch(`${url}/api/chat/${response.headers.get('x-chat-id')}/cancel`, { method: 'POST', headers: auth })
    }
  }
  if (!run.firstTokenMs) throw new Error(`a ${gate ? 'gate-on' : 'gate-off'} answer brought no text`)
  if (gate !== (run.decision !== undefined)) throw new Error(`a ${gate ? 'gate-on' : 'gate-off'} answer ${gate ? 'lacked' : 'carried'} a search decision`)
  return run as Run
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!

export async function run(): Promise<Row[]> {
  const model = startFakeOpenAi()
  const words = Array.from({ length: TOKENS }, (_, i) => `w${i} `)
  model.fallback = () => ({ text: words, logprobs: words.map(() => Math.log(0.95)), delayMs: TOKEN_MS })
  const search = startFakeSearxng()
  let service: Running | undefined
  try {
    service = await startService({
      ADMIN_EMAIL: email,
      ADMIN_PASSWORD: password,
      OPENAI_BASE_URL: model.baseUrl,
      SEARXNG_URL: search.url,
      RATE_LIMIT_CHAT_PER_MINUTE: '10000',
      LOG_LEVEL: 'info',
    })
    const accessToken = await accessTokenFor(service.url, { email, password })
    const auth = { authorization: `Bearer ${accessToken}` }
    console.log(`chat-gate: service ${service.url} (${JSON.stringify(service.facts)}), upstream ${model.url} at ${TOKEN_MS} ms a token, search ${search.url}`)

    for (let i = 0; i < WARM_UP; i++) {
      await runOnce(service.url, auth, true, -1)
      await runOnce(service.url, auth, false, -1)
    }
    const on: Run[] = []
    const off: Run[] = []
    for (let round = 0; round < ROUNDS; round++) {
      // Alternate which goes first, so neither always follows a cancelled stream.
      if (round % 2 === 0) {
        on.push(await runOnce(service.url, auth, true, round))
        off.push(await runOnce(service.url, auth, false, round))
      } else {
        off.push(await runOnce(service.url, auth, false, round))
        on.push(await runOnce(service.url, auth, true, round))
      }
    }
    for (const r of on)
      if (r.decision!.decision !== 'answer' || r.decision!.tokens !== WINDOW) throw new Error(`unexpected decision ${JSON.stringify(r.decision)}`)
    if (!model.completions.some((c) => c.logprobs === true)) throw new Error('the gate-on runs never asked the upstream for log-probabilities')

    const offFirst = median(off.map((r) => r.firstTokenMs))
    const onFirst = median(on.map((r) => r.firstTokenMs))
    const addedPerRound = on.map((r, i) => r.firstTokenMs - off[i]!.firstTokenMs)
    const note = `median of ${ROUNDS} alternating rounds; upstream ${TOKEN_MS} ms a token, search provider configured; the baseline is the same service with options.searchAugmentation: false`
    return [
      { figure: 'time to first token, gate on', unit: 'ms', baseline: offFirst, value: onFirst, ratio: ratioOf(onFirst, offFirst), notes: [note] },
      {
        figure: 'added time to first token, gate on',
        unit: 'ms',
        baseline: null,
        value: onFirst - offFirst,
        ratio: null,
        limit: { atMost: 10 },
        notes: [note],
      },
      {
        figure: 'added time to first token, gate on, per-round median',
        unit: 'ms',
        baseline: null,
        value: median(addedPerRound),
        ratio: null,
        limit: { atMost: 10 },
        notes: [note],
      },
      {
        figure: `time to the search decision (${WINDOW} tokens)`,
        unit: 'ms',
        baseline: null,
        value: median(on.map((r) => r.decisionMs!)),
        ratio: null,
        notes: ['when text was held back until the decision, this was also the time to the first token'],
      },
    ]
  } finally {
    await service?.stop()
    await model.close()
    await search.close()
  }
}

if (import.meta.main) {
  const rows = await run()
  printTable(rows)
  console.log(`results: ${writeResults('chat-gate', rows)}`)
}
