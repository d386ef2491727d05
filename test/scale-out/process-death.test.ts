/**
 * One of two processes is killed with SIGKILL (no drain, nothing written on the way out) in the middle
 * of a chat answer, an import and a burst of payment webhooks; the survivor and a restarted process
 * carry on, and nothing is silently lost or applied twice.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { SQL } from 'bun'
import { EventSourceParserStream } from 'eventsource-parser/stream'
import { chunks, readEvents, readSome, textOf, type StreamEvent } from '../chat/helpers.ts'
import { startFakeOpenAi, type FakeOpenAi } from '../fakes/openai.ts'
import { startGitServer, type GitServer } from '../fakes/git-server.ts'
import { announceSkip, postgresUrl, redisUrl } from '../helpers.ts'
import { checkoutSession, event, ids, subscription } from '../payments/events.ts'
import { paymentEnv, payloadOf, PRICES, signature } from '../payments/harness.ts'
import { connectAgent, isFinal } from '../agents/helpers.ts'
import { createCluster, json, signIn, type Cluster, type ServiceProcess } from './cluster.ts'

const ready = Boolean(postgresUrl && redisUrl)
if (!ready) announceSkip('scale-out process death suite', postgresUrl ? 'REDIS_URL' : 'DATABASE_URL')

describe.skipIf(!ready)('a process killed mid-work', () => {
  let cluster: Cluster
  let model: FakeOpenAi
  let git: GitServer
  let survivor: ServiceProcess
  let token: string
  let orgId: string
  const auth = () => ({ authorization: `Bearer ${token}` })

  beforeAll(async () => {
    model = startFakeOpenAi()
    git = startGitServer()
    cluster = await createCluster(redisUrl!, {
      OPENAI_BASE_URL: model.baseUrl,
      CHAT_MODEL: 'fake-model',
      CHAT_SEARCH_AUGMENTATION: 'off',
      IMPORT_CODEHOST_URL: git.url,
      IMPORT_ALLOW_HOSTS: `127.0.0.1:${git.port}`,
      IMPORT_HEARTBEAT_MS: '300',
      CODE_INDEX_SNAPSHOT_DELAY_MS: '100',
      CODE_INDEX_REFRESH_MS: '200',
      RATE_LIMIT_BURST: '10000',
      ...paymentEnv({ url: 'http://127.0.0.1:9' }),
    })
    survivor = await cluster.start('survivor')
    const pair = await signIn(survivor)
    token = pair.accessToken
    orgId = pair.user.organizationId
  })

  afterAll(async () => {
    await cluster?.close()
    await Promise.all([model?.close(), git?.close()])
  })

  test('a chat answer: the client resumes on the survivor and gets the missed events, then an interruption error, never a silent cut', async () => {
    const doomed = await cluster.start('doomed-chat')
    const words = Array.from({ length: 400 }, (_, i) => `w${i} `)
    model.queue = [{ text: words, delayMs: 20 }]
    const chatId = crypto.randomUUID()
    const abort = new AbortController()
    const first = await doomed.request('/api/chat', {
      ...json({ id: chatId, messages: [{ role: 'user', content: 'long answer' }] }, token),
      signal: abort.signal,
    })
    const seen = await readSome(first, 8, abort)
    await doomed.kill()

    const resumed = await survivor.request(`/api/chat/${chatId}/stream`, { headers: { ...auth(), 'last-event-id': seen.at(-1)!.id! } })
    expect(resumed.status).toBe(200)
    const rest = await readEvents(resumed)
    const all = [...seen, ...rest]
    expect(all.map((e) => Number(e.id!.split(':')[1]))).toEqual(all.map((_, i) => i + 1))
    // What was streamed is a true prefix of the answer, and the stream says it was interrupted.
    const text = textOf(all)
    expect(words.join('').startsWith(text)).toBe(true)
    expect(text.length).toBeLessThan(words.join('').length)
    const last = chunks(all).at(-1)!
    expect(last).toMatchObject({ type: 'error' })
    expect(last.errorText).toStartWith('generation_interrupted')
    expect(all.at(-1)!.chunk).toBe('[DONE]')

    // The chat is no longer busy: a new message goes through, on a restarted process.
    const restarted = await cluster.start('restarted-chat')
    expect((await restarted.request(`/api/chat/${chatId}`, { headers: auth() }).then((r) => r.json())).active).toBe(false)
    model.queue = [{ text: 'fresh answer' }]
    const again = await restarted.request('/api/chat', json({ id: chatId, messages: [{ role: 'user', content: 'again' }] }, token))
    expect(textOf(await readEvents(again))).toBe('fresh answer')
    await restarted.stop()
  })

  test('two clients, on the dying process and on the survivor, see the same events to one interruption, and the chat keeps the answer so far', async () => {
    const doomed = await cluster.start('doomed-pair')
    const words = Array.from({ length: 400 }, (_, i) => `p${i} `)
    model.queue = [{ text: words, delayMs: 20 }]
    const chatId = crypto.randomUUID()
    const here = await doomed.request('/api/chat', json({ id: chatId, messages: [{ role: 'user', content: 'long answer' }] }, token))
    // The client of the producing process reads as fast as it can until the process dies under it.
    const seenHere: StreamEvent[] = []
    const reading = (async () => {
      const reader = here.body!.pipeThrough(new TextDecoderStream()).pipeThrough(new EventSourceParserStream()).getReader()
      for (;;) {
        const { value, done } = await reader.read()
        if (done) return
        seenHere.push({ ...value, chunk: value.data === '[DONE]' ? '[DONE]' : JSON.parse(value.data) })
      }
    })().catch(() => undefined)
    await until(async () => seenHere.length >= 20, 'the first events on the producing process')
    const there = await survivor.request(`/api/chat/${chatId}/stream`, { headers: auth() })
    expect(there.status).toBe(200)
    const readingThere = readEvents(there)
    await until(async () => seenHere.length >= 60, 'more events on the producing process')
    await doomed.kill()
    await reading

    const resumed = await survivor.request(`/api/chat/${chatId}/stream`, { headers: { ...auth(), 'last-event-id': seenHere.at(-1)!.id! } })
    const hereAll = [...seenHere, ...(await readEvents(resumed))]
    const thereAll = await readingThere
    for (const events of [hereAll, thereAll]) {
      expect(events.map((e) => Number(e.id!.split(':')[1]))).toEqual(events.map((_, i) => i + 1))
      expect(chunks(events).at(-1)!.errorText).toStartWith('generation_interrupted')
      expect(events.at(-1)!.chunk).toBe('[DONE]')
    }
    // Every sequence number means the same event to both clients: nothing was reused after the death.
    expect(hereAll.map((e) => `${e.id} ${e.data}`)).toEqual(thereAll.map((e) => `${e.id} ${e.data}`))
    const chat = await survivor.request(`/api/chat/${chatId}`, { headers: auth() }).then((r) => r.json())
    const answer = chat.messages.at(-1)
    expect(answer).toMatchObject({ role: 'assistant', metadata: { status: 'interrupted' } })
    expect(answer.parts.find((p: { type: string }) => p.type === 'text').text).toBe(textOf(hereAll))
  })

  test('an import: marked failed with import_interrupted by the survivor, then imported again to success and searchable', async () => {
    const files: Record<string, string> = {}
    for (let i = 0; i < 60; i++)
      files[`src/module${i}.ts`] = `export function settleInvoice${i}(amount: number) {\n  return amount * ${i + 1} // ${'x'.repeat(400)}\n}\n`
    git.createRepository('acme/slow', files)
    // The pack trickles in, so the import is still cloning when its process dies.
    git.behaviour = { kind: 'trickle', chunkBytes: 256, delayMs: 20 }
    const doomed = await cluster.start('doomed-import')
    try {
      const started = await doomed.request('/api/codehost/import', json({ repository: 'acme/slow' }, token))
      expect(started.status).toBe(202)
      const { importId } = await started.json()
      await until(async () => (await importView(doomed, importId)).status === 'cloning', 'the import to be cloning')
      await doomed.kill()

      let view: Record<string, any> = {}
      await until(async () => (view = await importView(survivor, importId)).status === 'failed', 'the survivor to notice the dead import')
      expect(view.error.code).toBe('import_interrupted')
    } finally {
      git.behaviour = { kind: 'normal' }
    }

    const restarted = await cluster.start('restarted-import')
    const again = await restarted.request('/api/codehost/import', json({ repository: 'acme/slow' }, token))
    expect(again.status).toBe(202)
    const { importId: secondId } = await again.json()
    let view: any
    await until(async () => ['succeeded', 'failed'].includes((view = await importView(survivor, secondId)).status), 'the second import to finish')
    expect(view.status).toBe('succeeded')
    const search = await survivor.request('/api/search', json({ query: 'settle invoice 42', mode: 'text' }, token))
    expect((await search.json()).results.map((r: { path: string }) => r.path)).toContain('src/module41.ts')
    await restarted.stop()
  })

  test('payment webhooks: a burst cut by SIGKILL, redelivered to the survivor and a restarted process, is applied once per event', async () => {
    const customer = ids.customer()
    const subscriptionId = ids.subscription()
    const periodEnd = Math.floor(Date.now() / 1000) + 30 * 86_400
    const base = Math.floor(Date.now() / 1000) - 100
    const events = [
      event('checkout.session.completed', checkoutSession({ customer, subscription: subscriptionId, orgId, plan: 'pro', paymentStatus: 'paid' }), base),
      ...Array.from({ length: 30 }, (_, i) =>
        event(
          'customer.subscription.updated',
          subscription({ id: subscriptionId, customer, orgId, plan: 'pro', priceId: PRICES.pro, status: 'active', seats: i + 1, periodEnd }),
          base + 1 + i,
        ),
      ),
    ]
    const deliver = async (via: ServiceProcess, e: (typeof events)[number]) => {
      const payload = payloadOf(e)
      return via.request('/api/payment/webhook', {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'stripe-signature': await signature(payload) },
        body: payload,
      })
    }

    const doomed = await cluster.start('doomed-webhooks')
    const inFlight = events.map((e) =>
      deliver(doomed, e).then(
        (r) => r.status,
        () => 'cut' as const,
      ),
    )
    // Kill as soon as the first deliveries are answered, with the rest still being worked on.
    await Promise.race(inFlight.map((p) => p.then((status) => (status === 'cut' ? new Promise(() => {}) : status))))
    await doomed.kill()
    const firstRound = await Promise.all(inFlight)
    expect(firstRound).toContain(200)
    expect(firstRound).toContain('cut')

    // The provider retries every delivery it got no 2xx for; here it retries them all, on both processes.
    const restarted = await cluster.start('restarted-webhooks')
    const retries = await Promise.all(events.flatMap((e) => [deliver(survivor, e), deliver(restarted, e)]))
    expect(retries.map((r) => r.status)).toEqual(Array(retries.length).fill(200))

    const db = new SQL(cluster.env.DATABASE_URL!, { max: 1 })
    try {
      const stored = await db`SELECT id, processed_at FROM payment_events WHERE id IN ${db(events.map((e) => e.id))}`
      expect(stored).toHaveLength(events.length)
      expect(stored.every((row: { processed_at: unknown }) => row.processed_at !== null)).toBe(true)
      for (const e of events) {
        const audit = await db`SELECT action FROM audit_log WHERE details LIKE ${`%${e.id}%`}`
        const actions = audit.map((row: { action: string }) => row.action)
        expect(new Set(actions).size).toBe(actions.length)
      }
      const [record] = await db`SELECT seats, status, plan FROM billing_subscriptions WHERE id = ${subscriptionId}`
      expect(record).toMatchObject({ seats: 30, status: 'active', plan: 'pro' })
      // The audit chain is still whole after the kill.
      const verify = Bun.spawnSync([process.execPath, 'src/main/index.ts', 'admin', 'audit', 'verify'], {
        cwd: `${import.meta.dir}/../..`,
        env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', ...cluster.env },
      })
      expect(verify.exitCode).toBe(0)
    } finally {
      await db.close()
    }
    await restarted.stop()
  })

  test('a develop task: the process dies mid-task, and it goes on by itself on the survivor from its last completed step', async () => {
    const doomed = await cluster.start('doomed-develop')
    const call = (name: string, args: Record<string, unknown>) => ({
      toolCalls: [{ name, arguments: JSON.stringify(args) }],
      finishReason: 'tool_calls' as const,
    })
    const asked = model.completions.length
    model.queue = [
      call('write_file', { path: 'a.txt', content: 'first\n' }),
      call('write_file', { path: 'b.txt', content: 'second\n' }),
      // The third turn streams slowly: the process dies during it.
      { text: Array.from({ length: 400 }, (_, i) => `t${i} `), delayMs: 20 },
    ]
    const wsUrl = (via: ServiceProcess) => `${via.url.replace('http', 'ws')}/ws/agent`
    const here = await connectAgent(wsUrl(doomed), token)
    here.send({ type: 'agent_command', id: 'd1', command: 'develop', params: { instruction: 'Write a and b' } })
    const { taskId } = await here.next((m) => m.id === 'd1' && m.type === 'ack')
    await until(async () => model.completions.length >= asked + 3, 'the third model turn')
    await doomed.kill()

    // The client reconnects to the survivor: the task ends interrupted, naming the task that goes on from it.
    model.queue = [call('finish', { summary: 'Both written.' })]
    const there = await connectAgent(wsUrl(survivor), token)
    there.send({ type: 'subscribe', id: 's1', taskId, afterSeq: 0 })
    const interrupted = await there.next(isFinal(taskId), 30_000)
    expect(interrupted).toMatchObject({ type: 'error', code: 'task_interrupted' })
    expect(interrupted.resumedAs).toMatch(/^task_[0-9a-f]{32}$/)
    expect(interrupted.message).toContain(interrupted.resumedAs)
    there.send({ type: 'subscribe', id: 's2', taskId: interrupted.resumedAs, afterSeq: 0 })
    expect(await there.next((m) => m.id === 's2')).toMatchObject({ type: 'subscribed', command: 'continue' })
    const final = await there.next(isFinal(interrupted.resumedAs), 30_000)
    expect(final).toMatchObject({ type: 'result', output: { finished: true } })
    expect(final.output.files).toEqual([
      { path: 'a.txt', status: 'added' },
      { path: 'b.txt', status: 'added' },
    ])
    // The model went on from the two completed steps: their calls and answers, then word of the restart.
    const resumed = model.completions.at(-1)!.messages as { role: string; content: string | null }[]
    expect(resumed.filter((m) => m.role === 'tool').map((m) => m.content)).toEqual([expect.stringContaining('a.txt'), expect.stringContaining('b.txt')])
    expect(resumed.at(-1)!.content).toContain('stopped')
    // A second client following the same interrupted task is sent to the same resumed task: it went on once.
    const again = await connectAgent(wsUrl(survivor), token)
    again.send({ type: 'subscribe', id: 's3', taskId, afterSeq: 0 })
    expect((await again.next(isFinal(taskId), 30_000)).resumedAs).toBe(interrupted.resumedAs)
    here.close()
    there.close()
    again.close()
  })

  test('a develop task still running when its process stops (SIGTERM) past the shutdown timeout is handed over: it goes on in the survivor', async () => {
    const stopping = await cluster.start('stopping-develop', { SHUTDOWN_TIMEOUT_MS: '500', SHUTDOWN_DRAIN_DELAY_MS: '0' })
    const call = (name: string, args: Record<string, unknown>) => ({
      toolCalls: [{ name, arguments: JSON.stringify(args) }],
      finishReason: 'tool_calls' as const,
    })
    const asked = model.completions.length
    model.queue = [
      call('write_file', { path: 'c.txt', content: 'third\n' }),
      // The second turn streams slowly: the process is stopped during it and cannot wait for it.
      { text: Array.from({ length: 400 }, (_, i) => `s${i} `), delayMs: 20 },
    ]
    const wsUrl = (via: ServiceProcess) => `${via.url.replace('http', 'ws')}/ws/agent`
    const here = await connectAgent(wsUrl(stopping), token)
    here.send({ type: 'agent_command', id: 'h1', command: 'develop', params: { instruction: 'Write c' } })
    const { taskId } = await here.next((m) => m.id === 'h1' && m.type === 'ack')
    await until(async () => model.completions.length >= asked + 2, 'the second model turn')
    model.queue = [call('finish', { summary: 'c written.' })]
    expect(await stopping.stop()).toBe(0)
    // The client is told to go away (1001), not that the task failed.
    expect((await here.closed).code).toBe(1001)
    expect(here.taskMessages(taskId).filter((m) => m.type === 'error')).toEqual([])

    const there = await connectAgent(wsUrl(survivor), token)
    there.send({ type: 'subscribe', id: 's1', taskId, afterSeq: here.taskMessages(taskId).at(-1)!.seq })
    const interrupted = await there.next(isFinal(taskId), 30_000)
    expect(interrupted).toMatchObject({ type: 'error', code: 'task_interrupted' })
    expect(interrupted.resumedAs).toMatch(/^task_[0-9a-f]{32}$/)
    there.send({ type: 'subscribe', id: 's2', taskId: interrupted.resumedAs, afterSeq: 0 })
    const final = await there.next(isFinal(interrupted.resumedAs), 30_000)
    expect(final).toMatchObject({ type: 'result', output: { finished: true } })
    expect(final.output.files).toEqual([{ path: 'c.txt', status: 'added' }])
    there.close()
  })

  async function importView(via: ServiceProcess, importId: string) {
    return (await via.request(`/api/codehost/imports/${importId}`, { headers: auth() })).json() as Promise<Record<string, any>>
  }
})

async function until(check: () => Promise<boolean>, what: string, timeoutMs = 20_000) {
  const deadline = Date.now() + timeoutMs
  while (Date.now() < deadline) {
    if (await check()) return
    await Bun.sleep(50)
  }
  throw new Error(`timed out waiting for ${what}`)
}
