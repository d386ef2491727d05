/**
 * The agent channel (GET /ws/agent) against a bare Elysia `.ws` echo (bench/baseline/ws-elysia-echo.ts) and
 * bare Bun.serve WebSockets (bench/baseline/ws-bare-bun.ts), each in its own process, same machine, same run.
 *
 * 1. Idle connections: 10,000 authenticated sockets opened in batches; the server's VmRSS before (after one
 *    connection opened and closed, and a pause for the collector) and 2 s after they are all open, divided by
 *    the connections opened. A sample of them answers a ping before they are closed.
 * 2. Round trips: 50 connections, each sending the next message as soon as the previous answer arrives, counted
 *    over 5 s after 1 s of warm-up. Ping to pong on both (3 alternating rounds). Then the `status` command until
 *    its `result`, without taskId and for one task, against the echo answering one message with as many copies,
 *    of the same average size, as the command sends. These run last: every command leaves a task retained.
 * 3. Progress fan-out, at 1,000 and at 10,000 connections: one of them starts a `debug` task and the others
 *    subscribe to it. The model provider is an OpenAI-compatible server in this process, answering the plan
 *    request with five steps and each step request with plain text (no code, so nothing runs in the sandbox),
 *    each after 200 ms; a step's answer waits first until every client has that step's progress, as the
 *    baseline publishes its next message 200 ms after every subscriber has the previous one (at 10,000 the
 *    clients take longer than 200 ms to read a step, and the next would otherwise queue behind it in this
 *    process). The enhanced turn is sequential: the progress "Step i+1: ..." is written right after the model's answer to
 *    step i ends (to the plan, for step 1), and no other model call is in flight then. So the provider records
 *    when it hands back each answer (the plan request's, and step i's, keyed by the step they lead to), and
 *    each client's arrival time of that step's progress is measured against it: one clock, this process's
 *    performance.now(). The plan is held back until every follower has its `subscribed`, so every client sees
 *    every step live. Baseline: bare Bun server.publish of a message of the same size to as many subscribers,
 *    from just before this process's POST /publish to each arrival. The two sides' rounds alternate: at 1,000
 *    with both sets of sockets open, at 10,000 (twice that many would pass the open-file limit) each side
 *    opening its sockets for its round. Each side's p50 and p99 are the medians of its rounds'; the p99 is
 *    bounded at 1.2x bare Bun's.
 *
 * Bun raises its own open-file limit to the hard limit at start, and the spawned servers inherit that hard
 * limit; 10,000 client sockets live in this process.
 */
import { readFileSync } from 'node:fs'
import os from 'node:os'
import { accessTokenFor, startBareBaseline, startService, type Running } from './lib/processes.ts'
import { QUICK, quickOr } from './lib/mode.ts'
import { printTable, ratioOf, spreadOf, writeResults, type Row } from './lib/report.ts'

// Not fewer in a quick run: with fewer, the fixed costs of opening them weigh on the figure per connection.
const IDLE_CONNECTIONS = 10_000
const OPEN_BATCH = 200
const PROBE_EVERY = 100
const ROUND_TRIP_CONNECTIONS = 50
const WARM_UP_MS = quickOr(1_000, 500)
const MEASURE_MS = quickOr(5_000, 2_000)
// Subscribers of one task's progress; the service's p99 is bounded against bare Bun's at each.
const FAN_OUT_SIZES = [1_000, 10_000]
const FAN_OUT_P99_RATIO = 1.2
// Both sides' sockets stay open together up to this many each: twice 10,000 passes the open-file limit.
const KEEP_BOTH_OPEN_UP_TO = 5_000
const PLAN_STEPS = 5
const STEP_PAUSE_MS = 200
// Odd, so the median is one round's figure.
const FAN_OUT_ROUNDS = 3
const TRIP_ROUNDS = quickOr(3, 1)
// Per idle authenticated connection, at most.
const IDLE_BYTES_LIMIT = 3_000
const REPLY_TIMEOUT_MS = 30_000
const email = 'bench@example.com'
const password = `bench-${crypto.randomUUID()}`

/** One client socket; every text frame goes to `onText` with the time it was received. */
class Client {
  onText: ((text: string, at: number) => void) | undefined
  /** Set before this side closes, so a close from the server can be told apart. */
  closing = false
  closedEarly = false
  readonly closed: Promise<void>
  private markClosed!: () => void

  constructor(readonly socket: WebSocket) {
    this.closed = new Promise((resolve) => (this.markClosed = resolve))
  }

  onClose() {
    if (!this.closing) this.closedEarly = true
    this.markClosed()
  }
}

/** Every socket still open, closed whatever happens. */
const live = new Set<Client>()

function connect(url: string, headers: Record<string, string>): Promise<Client> {
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(url, { headers })
    const client = new Client(socket)
    let opened = false
    socket.onopen = () => {
      opened = true
      live.add(client)
      resolve(client)
    }
    socket.onmessage = (event) => client.onText?.(event.data as string, performance.now())
    socket.onerror = () => {
      if (!opened) reject(new Error('upgrade refused or failed'))
    }
    socket.onclose = (event) => {
      live.delete(client)
      client.onClose()
      if (!opened) reject(new Error(`upgrade refused or failed (close ${event.code})`))
    }
  })
}

async function connectMany(url: string, headers: Record<string, string>, count: number): Promise<{ clients: Client[]; failed: number; firstError?: string }> {
  const clients: Client[] = []
  let failed = 0
  let firstError: string | undefined
  for (let opened = 0; opened < count; opened += OPEN_BATCH) {
    const batch = await Promise.allSettled(Array.from({ length: Math.min(OPEN_BATCH, count - opened) }, () => connect(url, headers)))
    for (const outcome of batch)
      if (outcome.status === 'fulfilled') clients.push(outcome.value)
      else {
        failed++
        firstError ??= String(outcome.reason)
      }
  }
  return { clients, failed, firstError }
}

/** Closes the clients and waits for each close handshake; answers how many did not finish in time. */
async function closeAll(clients: Iterable<Client>): Promise<number> {
  const list = [...clients]
  for (const client of list) {
    client.closing = true
    client.onText = undefined
    client.socket.close(1000)
  }
  let pending = list.length
  // A handshake that never finishes is counted, not thrown: the figures already taken still stand.
  await within(Promise.all(list.map((c) => c.closed.then(() => pending--))), REPLY_TIMEOUT_MS, () => 'close timed out').catch(() => {})
  return pending
}

/** `work`, or an error after `ms`; the timer is cleared either way so it cannot hold the process open. */
async function within<T>(work: Promise<T>, ms: number, failure: () => string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined
  try {
    return await Promise.race([work, new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(failure())), ms)))])
  } finally {
    clearTimeout(timer)
  }
}

/** Sends `text` and resolves with the first answer `matches` accepts. */
function exchange(client: Client, text: string, matches: (answer: string) => boolean): Promise<string> {
  const answer = new Promise<string>((resolve) => {
    client.onText = (reply) => {
      if (!matches(reply)) return
      client.onText = undefined
      resolve(reply)
    }
  })
  client.socket.send(text)
  return within(answer, REPLY_TIMEOUT_MS, () => `no answer to ${text} within ${REPLY_TIMEOUT_MS} ms`)
}

function rssBytes(pid: number): number {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8')
    .split('\n')
    .find((l) => l.startsWith('VmRSS:'))
  if (!line) throw new Error(`no VmRSS in /proc/${pid}/status`)
  return Number(/(\d+)/.exec(line)![1]) * 1024
}

const pingFrame = (id: string) => JSON.stringify({ type: 'ping', id })
// The echo servers answer with the ping itself, the others with a pong: both carry the id.
const answersTo = (id: string) => (text: string) => text.includes(`"id":"${id}"`)

interface IdleMemory {
  perConnection: number
  beforeBytes: number
  afterBytes: number
  opened: number
  failed: number
  firstError?: string
  probed: number
  answered: number
  closedEarly: number
  notClosed: number
  openSeconds: number
}

async function idleMemory(name: string, server: Running, headers: Record<string, string>): Promise<IdleMemory> {
  const url = `${server.url.replace(/^http/, 'ws')}/ws/agent`
  // Warm-up: the upgrade path, the socket handlers and their first allocations, then a pause for the collector.
  const first = await connect(url, headers)
  await exchange(first, pingFrame('warm-up'), answersTo('warm-up'))
  await closeAll([first])
  await Bun.sleep(2_000)
  const beforeBytes = rssBytes(server.pid)
  const started = performance.now()
  const { clients, failed, firstError } = await connectMany(url, headers, IDLE_CONNECTIONS)
  const openSeconds = (performance.now() - started) / 1000
  await Bun.sleep(2_000)
  const afterBytes = rssBytes(server.pid)
  // Open on this side is not enough: a sample across the whole range must still be answered.
  const probes = clients.filter((_, i) => i % PROBE_EVERY === PROBE_EVERY - 1)
  const answers = await Promise.allSettled(probes.map((c, i) => exchange(c, pingFrame(`probe-${i}`), answersTo(`probe-${i}`))))
  const answered = answers.filter((a) => a.status === 'fulfilled').length
  const closedEarly = clients.filter((c) => c.closedEarly).length
  const notClosed = await closeAll(clients)
  const result = {
    perConnection: clients.length ? (afterBytes - beforeBytes) / clients.length : 0,
    beforeBytes,
    afterBytes,
    opened: clients.length,
    failed,
    firstError,
    probed: probes.length,
    answered,
    closedEarly,
    notClosed,
    openSeconds,
  }
  const mb = (n: number) => `${(n / 2 ** 20).toFixed(1)} MiB`
  console.log(
    `agents: idle ${name}: ${result.opened} open in ${openSeconds.toFixed(1)} s (${failed} failed), VmRSS ${mb(beforeBytes)} -> ${mb(afterBytes)}, ` +
      `${Math.round(result.perConnection)} bytes each; ${answered}/${probes.length} probes answered; ${closedEarly} closed by the server; ${notClosed} not closed cleanly`,
  )
  return result
}

function idleWarning(m: IdleMemory): string | undefined {
  const problems = [
    m.failed && `${m.failed} of ${IDLE_CONNECTIONS} connections were refused or failed (${m.firstError})`,
    m.answered < m.probed && `${m.probed - m.answered} of ${m.probed} probed connections did not answer a ping`,
    m.closedEarly && `${m.closedEarly} connections were closed by the server while idle`,
    m.notClosed && `${m.notClosed} connections did not finish their close handshake`,
  ].filter(Boolean)
  return problems.length ? problems.join('; ') : undefined
}

interface RoundTrips {
  perSecond: number
  /** Exchanges completed in each second of the measured window. */
  bySecond: number[]
  /** Messages received per completed exchange, and their average size, over the measured window. */
  messagesEach: number
  bytesEach: number
  /** Exchanges sent in all, warm-up included. */
  sent: number
  errors: number
}

/**
 * Each client sends `frame(n)` and, once `isLast` accepts an answer, the next one, for the warm-up and the
 * measured window; exchanges completing inside the window are counted.
 */
async function roundTrips(clients: Client[], frame: (n: number) => string, isLast: (text: string, received: number) => boolean): Promise<RoundTrips> {
  const from = performance.now() + WARM_UP_MS
  const until = from + MEASURE_MS
  const bySecond = Array.from({ length: Math.ceil(MEASURE_MS / 1000) }, () => 0)
  let completed = 0
  let messages = 0
  let bytes = 0
  let sent = 0
  let errors = 0
  const loops = clients.map(
    (client, index) =>
      new Promise<void>((resolve) => {
        let own = 0
        let received = 0
        const send = () => {
          received = 0
          sent++
          client.socket.send(frame(index * 1_000_000 + own++))
        }
        client.onText = (text, at) => {
          received++
          const inWindow = at >= from && at < until
          if (text.startsWith('{"type":"error"')) errors++
          if (inWindow) bytes += text.length
          if (!isLast(text, received)) return
          if (inWindow) {
            completed++
            messages += received
            bySecond[Math.floor((at - from) / 1000)]!++
          }
          if (at >= until) {
            client.onText = undefined
            resolve()
          } else send()
        }
        send()
      }),
  )
  await within(Promise.all(loops), WARM_UP_MS + MEASURE_MS + REPLY_TIMEOUT_MS, () => 'round trips stalled: an answer never came')
  return { perSecond: completed / (MEASURE_MS / 1000), bySecond, messagesEach: messages / completed, bytesEach: bytes / messages, sent, errors }
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!

/** The OpenAI-compatible provider of the fan-out: plans five steps and answers each with text, each after a pause. */
function startUpstream() {
  const plan = JSON.stringify({ steps: Array.from({ length: PLAN_STEPS }, (_, i) => `s${i + 1}`) })
  let gate: Promise<void> = Promise.resolve()
  /** Resolves once every follower has step N's progress; the answer leading to step N+1 waits for it. */
  let delivered: (step: number) => Promise<void> = async () => {}
  /** When the answer leading to step N's progress was handed back (the plan's for step 1). */
  let answered = new Map<number, number>()
  const sse = (text: string) =>
    `${[
      { choices: [{ index: 0, delta: { role: 'assistant', content: text }, finish_reason: null }] },
      { choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] },
    ]
      .map((chunk) => `data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', created: 0, model: 'bench', ...chunk })}\n\n`)
      .join('')}data: [DONE]\n\n`
  const server = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    idleTimeout: 0,
    async fetch(request) {
      const { messages } = (await request.json()) as { messages: { content: unknown }[] }
      const last = String(messages.at(-1)?.content ?? '')
      const step = /^Now carry out step (\d+) of/.exec(last)
      let leadsTo: number | undefined
      let text = 'Nothing to add.'
      if (step) {
        leadsTo = Number(step[1]) + 1
        text = `Step ${step[1]} looked at; no change needed.`
        // Paced as the baseline publishes: the pause starts once the previous step reached every client.
        await delivered(Number(step[1]))
      } else if (last.startsWith('Before answering, plan')) {
        await gate
        leadsTo = 1
        text = plan
      }
      await Bun.sleep(STEP_PAUSE_MS)
      const body = sse(text)
      if (leadsTo !== undefined) answered.set(leadsTo, performance.now())
      return new Response(body, { headers: { 'content-type': 'text/event-stream' } })
    },
  })
  return {
    url: `http://127.0.0.1:${server.port}/v1`,
    /** Holds the next plan answer until the returned function is called; starts a fresh record of answer times. */
    hold(stepDelivered: (step: number) => Promise<void>): () => void {
      delivered = stepDelivered
      let release!: () => void
      gate = new Promise((resolve) => (release = resolve))
      answered = new Map()
      return release
    },
    answerTimes: () => answered,
    stop: () => server.stop(true),
  }
}

type Upstream = ReturnType<typeof startUpstream>

interface FanOut {
  latencies: number[]
  /** Per step, the latency of the first client to get it: the server's own part, before the sends queue up. */
  firstArrivals: number[]
  /** Size of the step progress messages, for the baseline's. */
  messageBytes: number
  expected: number
}

const isTaskEnd = (text: string) => text.startsWith('{"type":"result"') || (text.startsWith('{"type":"error"') && text.includes('"status":'))

/** One debug task started on clients[0] and followed by all the others; the latency of every step progress. */
async function fanOutRound(clients: Client[], upstream: Upstream, round: number): Promise<FanOut> {
  // Per step, how many clients have its progress, and the provider's wait for all of them.
  const reached = Array.from({ length: PLAN_STEPS + 1 }, () => 0)
  const everyone = Array.from({ length: PLAN_STEPS + 1 }, () => Promise.withResolvers<void>())
  // A progress that never arrives is reported with the figures; it must not hold the provider forever.
  const stepDelivered = (step: number) => within(everyone[step]!.promise, REPLY_TIMEOUT_MS, () => '').catch(() => {})
  const release = upstream.hold(stepDelivered)
  const arrivals: { step: number; at: number }[] = []
  let bytes = 0
  let ended = 0
  let allEnded!: () => void
  const finished = new Promise<void>((resolve) => (allEnded = resolve))
  const follow = (text: string, at: number) => {
    const step = /"step":"Step (\d+):/.exec(text)
    if (step) {
      const n = Number(step[1])
      arrivals.push({ step: n, at })
      bytes += text.length
      if (++reached[n]! === clients.length) everyone[n]!.resolve()
    } else if (isTaskEnd(text) && ++ended === clients.length) allEnded()
  }
  const [starter, ...followers] = clients as [Client, ...Client[]]
  const ack = await exchange(
    starter,
    JSON.stringify({ type: 'agent_command', id: `debug-${round}`, command: 'debug', params: { error: 'x' } }),
    (t) => t.startsWith('{"type":"ack"') || t.startsWith('{"type":"error"'),
  )
  const { taskId } = JSON.parse(ack) as { taskId?: string }
  if (!taskId) throw new Error(`debug was refused: ${ack}`)
  starter.onText = follow
  await Promise.all(
    followers.map(async (client, i) => {
      const id = `sub-${round}-${i}`
      const answer = await exchange(client, JSON.stringify({ type: 'subscribe', id, taskId }), answersTo(id))
      if (!answer.startsWith('{"type":"subscribed"')) throw new Error(`subscribe was refused: ${answer}`)
      client.onText = follow
    }),
  )
  release()
  await within(finished, (PLAN_STEPS + 1) * (STEP_PAUSE_MS + REPLY_TIMEOUT_MS), () => `the debug task ended on ${ended} of ${clients.length} connections`)
  const answered = upstream.answerTimes()
  const latencies = arrivals.map(({ step, at }) => at - answered.get(step)!)
  if (latencies.some((l) => !Number.isFinite(l))) throw new Error('a step progress arrived for a step the provider never answered')
  const firstArrivals = Array.from({ length: PLAN_STEPS }, (_, i) =>
    Math.min(...arrivals.filter((a) => a.step === i + 1).map((a) => a.at - answered.get(i + 1)!)),
  )
  return { latencies, firstArrivals, messageBytes: bytes / arrivals.length, expected: clients.length * PLAN_STEPS }
}

/** The bare Bun baseline: one publish per step of a `bytes`-long progress message to every subscribed client. */
async function publishRound(clients: Client[], publishUrl: string, bytes: number, round: number): Promise<FanOut> {
  const sentAt = new Map<number, number>()
  const latencies: number[] = []
  const firstArrivals: number[] = []
  let waiting = 0
  let allArrived = () => {}
  for (const client of clients)
    client.onText = (text, at) => {
      latencies.push(at - sentAt.get(Number(/"seq":(\d+)/.exec(text)![1]))!)
      if (--waiting === 0) allArrived()
    }
  for (let step = 1; step <= PLAN_STEPS; step++) {
    await Bun.sleep(STEP_PAUSE_MS)
    const seq = round * 100 + step
    const head = JSON.stringify({ type: 'progress', taskId: 'task_baseline', seq, status: 'running', step: `Step ${step}: s${step}`, pad: '' })
    const message = head.replace('"pad":""', `"pad":"${'x'.repeat(Math.max(0, Math.round(bytes) - head.length))}"`)
    waiting = clients.length
    const arrived = new Promise<void>((resolve) => (allArrived = resolve))
    sentAt.set(seq, performance.now())
    const before = latencies.length
    const response = await fetch(publishUrl, { method: 'POST', body: message })
    if (response.status !== 204) throw new Error(`publish answered ${response.status}`)
    await within(arrived, REPLY_TIMEOUT_MS, () => `a publish reached ${clients.length - waiting} of ${clients.length} subscribers`)
    firstArrivals.push(Math.min(...latencies.slice(before)))
  }
  return { latencies, firstArrivals, messageBytes: bytes, expected: clients.length * PLAN_STEPS }
}

const errorsIn = (runs: RoundTrips[], what: string) => {
  const errors = runs.reduce((sum, r) => sum + r.errors, 0)
  return errors ? `${errors} ${what} messages were answered with an error` : undefined
}

const wsOf = (server: Running) => `${server.url.replace(/^http/, 'ws')}/ws/agent`

/**
 * The progress fan-out to `count` connections: debug tasks on the service followed by all of them, and bare Bun
 * publishing a message of the same size to as many subscribers, one warm-up round each, then rounds alternating.
 * Where both sets of sockets fit under the open-file limit they stay open together; at 10,000 each side opens its
 * sockets for its round and closes them after. Each side's figure is the median of its rounds' percentiles.
 */
async function fanOutAt(count: number, service: Running, bun: Running, upstream: Upstream, headers: Record<string, string>): Promise<Row[]> {
  const size = count.toLocaleString('en-US')
  const together = count <= KEEP_BOTH_OPEN_UP_TO
  const openFollowers = async () => {
    // Slots of the connections closed just before are given back as the server handles their close.
    await Bun.sleep(1_000)
    const followers = await connectMany(wsOf(service), headers, count)
    if (followers.failed) throw new Error(`${followers.failed} of ${size} fan-out connections failed: ${followers.firstError}`)
    return followers.clients
  }
  const openSubscribers = async () => {
    const subscribers = await connectMany(wsOf(bun), headers, count)
    if (subscribers.failed) throw new Error(`${subscribers.failed} of ${size} baseline subscribers failed: ${subscribers.firstError}`)
    await Promise.all(subscribers.clients.map((c) => exchange(c, '{"type":"subscribe"}', (t) => t === '{"type":"subscribed"}')))
    return subscribers.clients
  }
  let followers: Client[] | undefined = await openFollowers()
  // The warm-up task also gives the size of a step progress message, for the baseline's.
  const { messageBytes } = await fanOutRound(followers, upstream, 0)
  if (!together) {
    await closeAll(followers)
    followers = undefined
  }
  let subscribers: Client[] | undefined = await openSubscribers()
  await publishRound(subscribers, `${bun.url}/publish`, messageBytes, 0)
  const rounds: FanOut[] = []
  const published: FanOut[] = []
  for (let round = 1; round <= FAN_OUT_ROUNDS; round++) {
    if (!together) {
      await closeAll(subscribers ?? [])
      subscribers = undefined
    }
    followers ??= await openFollowers()
    rounds.push(await fanOutRound(followers, upstream, round))
    if (!together) {
      await closeAll(followers)
      followers = undefined
    }
    subscribers ??= await openSubscribers()
    published.push(await publishRound(subscribers, `${bun.url}/publish`, messageBytes, round))
  }
  const loadDuringFanOut = os.loadavg()[0]!
  await closeAll([...(followers ?? []), ...(subscribers ?? [])])

  const serviceLatencies = rounds.flatMap((r) => r.latencies)
  const bunLatencies = published.flatMap((r) => r.latencies)
  const expected = rounds.reduce((sum, r) => sum + r.expected, 0)
  const perRound = (runs: FanOut[], p: number) => runs.map((r) => percentile(r.latencies, p))
  const sp50 = median(perRound(rounds, 0.5))
  const sp99 = median(perRound(rounds, 0.99))
  const bp50 = median(perRound(published, 0.5))
  const bp99 = median(perRound(published, 0.99))
  const listed = (values: number[]) => values.map((v) => v.toFixed(1)).join(', ')
  const firsts = (r: FanOut[]) => median(r.flatMap((round) => round.firstArrivals)).toFixed(2)
  console.log(
    `agents: fan-out to ${size} (${together ? 'both sides open together' : 'each side reconnected for its rounds'}): ${serviceLatencies.length}/${expected} step progress messages of ${Math.round(messageBytes)} bytes, ` +
      `p50 by round ${listed(perRound(rounds, 0.5))} ms, p99 by round ${listed(perRound(rounds, 0.99))} ms, max ${Math.max(...serviceLatencies).toFixed(2)} ms, first client of each step ${firsts(rounds)} ms (median); ` +
      `bare Bun publish p50 by round ${listed(perRound(published, 0.5))} ms, p99 by round ${listed(perRound(published, 0.99))} ms, max ${Math.max(...bunLatencies).toFixed(2)} ms, first client ${firsts(published)} ms; ` +
      `load average ${loadDuringFanOut.toFixed(1)} on ${os.cpus().length} cores`,
  )
  const note =
    `${size} connections × ${PLAN_STEPS} steps × ${FAN_OUT_ROUNDS} debug tasks, after one warm-up task, alternating with the baseline${together ? '' : ' (each side opens its connections for its round and closes them after)'}; median of the rounds' percentiles; service: from the model answer's end to each client's arrival of the next step's progress; ` +
    `baseline: bare Bun server.publish of a ${Math.round(messageBytes)}-byte message to ${size} subscribers, from the POST that triggers it; ` +
    `all clients read in this one process, so both include its time to take ${size} messages in turn; 1-minute load average ${loadDuringFanOut.toFixed(1)} on ${os.cpus().length} cores`
  const warning = serviceLatencies.length === expected ? undefined : `${expected - serviceLatencies.length} of ${expected} step progress messages never arrived`
  return [
    {
      figure: `progress fan-out to ${size}, p50`,
      unit: 'ms',
      baseline: bp50,
      value: sp50,
      ratio: ratioOf(sp50, bp50),
      notes: [note],
      spread: spreadOf(perRound(rounds, 0.5)),
      warning,
    },
    {
      figure: `progress fan-out to ${size}, p99`,
      unit: 'ms',
      baseline: bp99,
      value: sp99,
      ratio: ratioOf(sp99, bp99),
      target: { atMost: FAN_OUT_P99_RATIO },
      notes: [note],
      spread: spreadOf(perRound(rounds, 0.99)),
      warning,
    },
  ]
}

/** Runs one status command on a connection of its own and answers its task id, for `status` of one task. */
async function exchangeTaskId(server: Running, url: string, headers: Record<string, string>): Promise<string> {
  const client = await connect(url, headers)
  try {
    const ack = await exchange(
      client,
      JSON.stringify({ type: 'agent_command', id: 'first', command: 'status' }),
      (t) => t.startsWith('{"type":"ack"') || t.startsWith('{"type":"error"'),
    )
    const { taskId } = JSON.parse(ack) as { taskId?: string }
    if (!taskId) throw new Error(`status was refused by ${server.url}: ${ack}`)
    return taskId
  } finally {
    await closeAll([client])
  }
}

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))]!
}

export async function run(): Promise<Row[]> {
  const upstream = startUpstream()
  const running: Running[] = []
  try {
    const service = await startService({
      ADMIN_EMAIL: email,
      ADMIN_PASSWORD: password,
      OPENAI_BASE_URL: upstream.url,
      CHAT_MODEL: 'bench',
      // The most config accepts: exactly the idle connections, all of one user.
      AGENT_MAX_CONNECTIONS_PER_USER: String(IDLE_CONNECTIONS),
      AGENT_MAX_RUNNING_TASKS_PER_USER: '10000',
      // Every status command is a task; the one the status-of-one-task loop asks about must not be dropped.
      AGENT_MAX_TASKS_KEPT_PER_USER: '10000000',
      RATE_LIMIT_CHAT_PER_MINUTE: '1000000',
      RATE_LIMIT_BURST: '1000000',
      LOG_LEVEL: 'info',
    })
    running.push(service)
    const elysia = await startBareBaseline('ws-elysia-echo.ts')
    running.push(elysia)
    const bun = await startBareBaseline('ws-bare-bun.ts')
    running.push(bun)
    const headers = { authorization: `Bearer ${await accessTokenFor(service.url, { email, password })}` }
    console.log(`agents: service ${service.url} (${JSON.stringify(service.facts)}), bare Elysia ${elysia.url}, bare Bun ${bun.url}, upstream ${upstream.url}`)

    // 1. Idle connections. Every server gets the same Authorization header; only the service reads it.
    const idleService = await idleMemory('service', service, headers)
    // The headline compares with bare Bun; a quick run leaves the framework's own figure out.
    const idleElysia = QUICK ? undefined : await idleMemory('bare Elysia', elysia, headers)
    const idleBun = await idleMemory('bare Bun', bun, headers)
    const memoryNote = `${IDLE_CONNECTIONS.toLocaleString('en-US')} idle connections (one user) opened ${OPEN_BATCH} at a time; server VmRSS 2 s after the last opened minus VmRSS after a warm-up connection, per connection`
    const memoryTarget = `memory target ≤ ${IDLE_BYTES_LIMIT.toLocaleString('en-US')} bytes per connection: ${idleService.perConnection <= IDLE_BYTES_LIMIT ? 'met' : 'NOT met'} at ${Math.round(idleService.perConnection).toLocaleString('en-US')}`

    // 2. Round trips, each side on fresh connections.
    const trips = async (server: Running, frame: (n: number) => string, isLast: (text: string, received: number) => boolean) => {
      const { clients, failed, firstError } = await connectMany(wsOf(server), headers, ROUND_TRIP_CONNECTIONS)
      if (failed) throw new Error(`${failed} round-trip connections failed: ${firstError}`)
      try {
        return await roundTrips(clients, frame, isLast)
      } finally {
        await closeAll(clients)
      }
    }
    const show = (name: string, r: RoundTrips) =>
      console.log(
        `agents: ${name}: ${Math.round(r.perSecond)}/s (by second: ${r.bySecond.join(', ')}), ${r.messagesEach.toFixed(2)} messages of ${Math.round(r.bytesEach)} bytes each, ${r.errors} errors`,
      )
    // An error answer ends an exchange too (and is counted), so a refusal cannot stall a loop.
    const isPong = (text: string) => text.startsWith('{"type":"pong"') || text.startsWith('{"type":"error"')
    const endsCommand = (text: string) => text.startsWith('{"type":"result"') || text.startsWith('{"type":"error"')
    // Alternating rounds, each side keeping its median, so a neighbour's burst of work does not decide the ratio.
    const pingElysia: RoundTrips[] = []
    const pingService: RoundTrips[] = []
    for (let round = 0; round < TRIP_ROUNDS; round++) {
      pingElysia.push(await trips(elysia, (n) => pingFrame(`p${n}`), isPong))
      pingService.push(await trips(service, (n) => pingFrame(`p${n}`), isPong))
    }
    for (const [i, r] of pingElysia.entries()) show(`ping, bare Elysia, round ${i + 1}`, r)
    for (const [i, r] of pingService.entries()) show(`ping, service, round ${i + 1}`, r)
    const tripsNote = `${ROUND_TRIP_CONNECTIONS} connections, each one exchange at a time, counted over ${MEASURE_MS / 1000} s after ${WARM_UP_MS / 1000} s of warm-up`
    const pingNote = `median of ${TRIP_ROUNDS} alternating rounds`

    // 3. Progress fan-out, before the status commands fill the service's task log.
    const fanOutRows: Row[] = []
    for (const subscribers of FAN_OUT_SIZES) fanOutRows.push(...(await fanOutAt(subscribers, service, bun, upstream, headers)))

    // 4. A real command, in both forms; last, since every command leaves a task in the log for the retention time.
    const statusAgainstEcho = async (label: string, params: () => Record<string, unknown> | undefined) => {
      const measured = await trips(service, (n) => JSON.stringify({ type: 'agent_command', id: `s${n}`, command: 'status', params: params() }), endsCommand)
      // The echo answers one message with as many copies, of the same average size, as one command sends.
      const copies = Math.round(measured.messagesEach)
      const head = JSON.stringify({ type: 'echo', id: 'e0000000', repeat: copies, pad: '' })
      const pad = 'x'.repeat(Math.max(0, Math.round(measured.bytesEach) - head.length))
      const echo = await trips(
        elysia,
        (n) => JSON.stringify({ type: 'echo', id: `e${n}`, repeat: copies, pad }),
        (_, received) => received === copies,
      )
      show(`${label}, service`, measured)
      show(`${label}, bare Elysia echo of ${copies}`, echo)
      const note = `${label}: ${measured.messagesEach.toFixed(1)} messages per command (ack, progress, result) of ${Math.round(measured.bytesEach)} bytes on average; the echo answers one message with ${copies} copies of that size`
      return { measured, echo, note }
    }
    const statusAll = await statusAgainstEcho('status without taskId', () => undefined)
    const firstTask = await exchangeTaskId(service, wsOf(service), headers)
    const statusOne = await statusAgainstEcho('status of one task', () => ({ taskId: firstTask }))
    const tasksLeft = statusAll.measured.sent + statusOne.measured.sent + 1 + FAN_OUT_SIZES.length * (FAN_OUT_ROUNDS + 1)
    console.log(
      `agents: service VmRSS ${(rssBytes(service.pid) / 2 ** 20).toFixed(1)} MiB with about ${tasksLeft.toLocaleString('en-US')} finished tasks retained`,
    )
    const [firstSecond, lastSecond] = [statusAll.measured.bySecond[0]!, statusAll.measured.bySecond.at(-1)!]
    const growthNote =
      `status without taskId lists the user's most recent tasks: ${firstSecond.toLocaleString('en-US')} commands in the first measured second, ` +
      `${lastSecond.toLocaleString('en-US')} in the last, as the tasks this loop created piled up (${statusAll.measured.sent.toLocaleString('en-US')} in all)`

    const againstElysia: Row[] = idleElysia
      ? [
          {
            figure: 'memory per idle connection',
            unit: 'bytes',
            baseline: idleElysia.perConnection,
            value: idleService.perConnection,
            ratio: ratioOf(idleService.perConnection, idleElysia.perConnection),
            limit: { atMost: IDLE_BYTES_LIMIT },
            notes: [memoryNote, 'baseline: bare Elysia .ws echo', memoryTarget],
            warning: [idleWarning(idleService), idleWarning(idleElysia)].filter(Boolean).join('; ') || undefined,
          },
        ]
      : []
    return [
      ...againstElysia,
      {
        figure: 'memory per idle connection, vs bare Bun.serve',
        unit: 'bytes',
        baseline: idleBun.perConnection,
        value: idleService.perConnection,
        ratio: ratioOf(idleService.perConnection, idleBun.perConnection),
        limit: { atMost: IDLE_BYTES_LIMIT },
        notes: [memoryNote, memoryTarget],
        warning: [idleWarning(idleService), idleWarning(idleBun)].filter(Boolean).join('; ') || undefined,
      },
      {
        figure: 'ping round trips',
        unit: 'round trips/s',
        baseline: median(pingElysia.map((r) => r.perSecond)),
        value: median(pingService.map((r) => r.perSecond)),
        ratio: ratioOf(median(pingService.map((r) => r.perSecond)), median(pingElysia.map((r) => r.perSecond))),
        target: { atLeast: 0.8 },
        notes: [tripsNote, pingNote, 'baseline: bare Elysia .ws echo'],
        spread: spreadOf(pingService.map((r) => r.perSecond)),
        warning: errorsIn([...pingService, ...pingElysia], 'ping'),
      },
      {
        figure: 'status command round trips',
        unit: 'commands/s',
        baseline: statusOne.echo.perSecond,
        value: statusOne.measured.perSecond,
        ratio: ratioOf(statusOne.measured.perSecond, statusOne.echo.perSecond),
        notes: [tripsNote, 'baseline: bare Elysia .ws echo', statusOne.note],
        warning: errorsIn([statusOne.measured], 'status'),
      },
      {
        figure: 'status command round trips, without taskId',
        unit: 'commands/s',
        baseline: statusAll.echo.perSecond,
        value: statusAll.measured.perSecond,
        ratio: ratioOf(statusAll.measured.perSecond, statusAll.echo.perSecond),
        notes: [tripsNote, 'baseline: bare Elysia .ws echo', statusAll.note, growthNote],
        warning: errorsIn([statusAll.measured], 'status'),
      },
      ...fanOutRows,
    ]
  } finally {
    await closeAll(live)
    for (const r of running.reverse()) await r.stop()
    upstream.stop()
  }
}

if (import.meta.main) {
  const rows = await run()
  printTable(rows)
  console.log(`results: ${writeResults('agents', rows)}`)
}
