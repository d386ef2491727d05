/**
 * Redis killed under live work on two processes: every open chat stream (on the process producing it and on the
 * other one, following it) and every agent connection gets an explicit end from the process holding its client,
 * with Redis still down; the answer so far is kept in the chat, marked interrupted; once Redis is back (empty),
 * both processes chat again without a restart. The outage lasts 10 s here; REDIS_OUTAGE_SECONDS (say `10,40,120`)
 * runs longer ones as well.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { EventSourceParserStream } from 'eventsource-parser/stream'
import { connectAgent, isFinal, type AgentClient } from '../agents/helpers.ts'
import { chunks, readEvents, textOf, type StreamEvent } from '../chat/helpers.ts'
import { recovery, redisServerInstalled, startPrivateRedis, type PrivateRedis } from '../event-log/private-redis.ts'
import { startFakeOpenAi, type FakeOpenAi } from '../fakes/openai.ts'
import { announceSkip, postgresUrl } from '../helpers.ts'
import { createCluster, json, signIn, type Cluster, type ServiceProcess } from './cluster.ts'

const OUTAGES = (process.env.REDIS_OUTAGE_SECONDS ?? '10').split(',').map(Number)
const ready = Boolean(postgresUrl && redisServerInstalled)
if (!ready) announceSkip('streams open when Redis dies', postgresUrl ? 'redis-server at /usr/bin/redis-server' : 'DATABASE_URL')

/** A client reading one SSE stream to its end, noting when the end came. */
interface Reader {
  events: StreamEvent[]
  endedAt?: number
  done: Promise<void>
}

function read(response: Response): Reader {
  const reader: Reader = { events: [], done: Promise.resolve() }
  reader.done = (async () => {
    const parsed = response.body!.pipeThrough(new TextDecoderStream()).pipeThrough(new EventSourceParserStream()).getReader()
    for (;;) {
      const { value, done } = await parsed.read()
      if (done) break
      reader.events.push({ ...value, chunk: value.data === '[DONE]' ? '[DONE]' : JSON.parse(value.data) })
    }
    reader.endedAt = performance.now()
  })()
  return reader
}

async function until(check: () => boolean, what: string, withinMs = 30_000) {
  const started = performance.now()
  while (!check()) {
    if (performance.now() - started > withinMs) throw new Error(`timed out waiting for ${what}`)
    await Bun.sleep(20)
  }
}

describe.skipIf(!ready)('streams open when Redis dies', () => {
  let redis: PrivateRedis
  let cluster: Cluster
  let model: FakeOpenAi
  let a: ServiceProcess
  let b: ServiceProcess
  let token: string
  const auth = () => ({ authorization: `Bearer ${token}` })

  beforeAll(async () => {
    redis = await startPrivateRedis()
    model = startFakeOpenAi()
    // Every model call is a long, slow answer: the work is still running when Redis dies.
    model.fallback = () => ({ text: Array.from({ length: 3000 }, (_, i) => `w${i} `), delayMs: 20 })
    cluster = await createCluster(redis.url, {
      OPENAI_BASE_URL: model.baseUrl,
      CHAT_MODEL: 'fake-model',
      CHAT_SEARCH_AUGMENTATION: 'off',
      RATE_LIMIT_BURST: '10000',
      REDIS_RECONNECT_MAX_DELAY_MS: '500',
    })
    a = await cluster.start('a')
    b = await cluster.start('b')
    token = (await signIn(a)).accessToken
  })

  afterAll(async () => {
    await cluster?.close()
    await model?.close()
    await redis?.stop()
  })

  for (const outageSeconds of OUTAGES)
    test(
      `a ${outageSeconds} s outage: every stream and agent connection ends explicitly, the answers so far are kept, and chat works after it`,
      async () => {
        // Three chats produced on each process, each followed from the other one too.
        const chats: { chatId: string; producer: ServiceProcess; here: Reader; there?: Reader }[] = []
        for (const producer of [a, a, a, b, b, b]) {
          const chatId = crypto.randomUUID()
          const response = await producer.request('/api/chat', json({ id: chatId, messages: [{ role: 'user', content: 'a long answer' }] }, token))
          expect(response.status).toBe(200)
          chats.push({ chatId, producer, here: read(response) })
        }
        await until(() => chats.every((c) => c.here.events.length >= 5), 'every chat to stream')
        for (const chat of chats) {
          const other = chat.producer === a ? b : a
          const response = await other.request(`/api/chat/${chat.chatId}/stream`, { headers: auth() })
          expect(response.status).toBe(200)
          chat.there = read(response)
        }
        // One agent task on each process, its client connected there.
        const agents: { client: AgentClient; taskId: string }[] = []
        for (const via of [a, b]) {
          const client = await connectAgent(`${via.url.replace('http', 'ws')}/ws/agent`, token)
          client.send({ type: 'agent_command', id: 'c1', command: 'debug', params: { code: 'const x: number = "one"', error: 'TS2322' } })
          const ack = await client.next((m) => m.type === 'ack')
          await client.next((m) => m.taskId === ack.taskId && m.type === 'progress' && m.status === 'running')
          agents.push({ client, taskId: ack.taskId })
        }
        await until(() => chats.every((c) => (c.there?.events.length ?? 0) >= 1), 'every follower to get events')

        const killedAt = performance.now()
        await redis.kill()
        await Promise.all(chats.flatMap((c) => [c.here.done, c.there!.done]))
        const agentEnds = await Promise.all(
          agents.map(async ({ client, taskId }) => {
            const final = await client.next(isFinal(taskId), 30_000)
            return { final, at: performance.now() }
          }),
        )
        const endedAfter = [...chats.flatMap((c) => [c.here.endedAt!, c.there!.endedAt!]), ...agentEnds.map((e) => e.at)].map((at) => Math.round(at - killedAt))

        for (const chat of chats)
          for (const reader of [chat.here, chat.there!]) {
            const events = reader.events
            // Numbered without a gap, closed by an explicit error and [DONE]: never a silent cut.
            const seqs = events.map((e) => Number(e.id!.split(':')[1]))
            expect(seqs).toEqual(seqs.map((_, i) => seqs[0]! + i))
            expect(chunks(events).at(-1)!).toMatchObject({ type: 'error' })
            expect(chunks(events).at(-1)!.errorText).toStartWith('unavailable')
            expect(events.at(-1)!.chunk).toBe('[DONE]')
          }
        for (const { final } of agentEnds) expect(final).toMatchObject({ type: 'error', status: 'failed', code: 'task_interrupted' })
        // The connections stay open: the clients can still talk to their process.
        for (const { client } of agents) expect(client.socket.readyState).toBe(WebSocket.OPEN)

        const remaining = outageSeconds * 1000 - (performance.now() - killedAt)
        if (remaining > 0) await Bun.sleep(remaining)
        await redis.start()

        // The chats keep what their producing process streamed, marked interrupted, and are no longer busy.
        for (const chat of chats) {
          let view: Record<string, any> = {}
          await recovery(
            async () => {
              const response = await chat.producer.request(`/api/chat/${chat.chatId}`, { headers: auth() })
              if (response.status !== 200) throw new Error(`GET /api/chat/:id answered ${response.status}`)
              view = await response.json()
            },
            10_000,
            'reading the chat',
          )
          expect(view.active).toBe(false)
          const answer = view.messages.at(-1)
          expect(answer).toMatchObject({ role: 'assistant', metadata: { status: 'interrupted' } })
          const text = answer.parts.find((p: { type: string }) => p.type === 'text').text
          expect(text).toBe(textOf(chat.here.events))
          expect(text.startsWith(textOf(chat.there!.events))).toBe(true)
          expect(text.length).toBeGreaterThan(0)
        }

        // Both processes chat again, without a restart.
        const recoveredMs: number[] = []
        for (const via of [a, b]) {
          model.queue = [{ text: 'back again' }]
          recoveredMs.push(
            Math.round(
              await recovery(
                async () => {
                  const response = await via.request('/api/chat', json({ messages: [{ role: 'user', content: 'hello' }] }, token))
                  if (response.status !== 200) throw new Error(`POST /api/chat answered ${response.status}`)
                  expect(textOf(await readEvents(response))).toBe('back again')
                },
                10_000,
                'chat',
              ),
            ),
          )
        }
        for (const { client } of agents) client.close()
        console.log(
          `redis killed for ${outageSeconds} s under ${chats.length * 2} chat streams and ${agents.length} agent tasks: each ended explicitly ${Math.min(...endedAfter)}-${Math.max(...endedAfter)} ms after the kill; chat worked again ${recoveredMs.join(' / ')} ms after Redis restarted`,
        )
      },
      outageSeconds * 1000 + 90_000,
    )
})
