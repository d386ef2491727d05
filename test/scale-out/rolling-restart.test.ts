/**
 * A rolling restart: one of two processes gets SIGTERM while a chat answer and an agent task run on
 * it. Its clients are handed over (SSE `retry:` hint, WebSocket close 1001), follow the work from the
 * other process, and the stopping process finishes that work before it exits.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createParser, type EventSourceMessage } from 'eventsource-parser'
import { connectAgent, expectContiguous, isFinal } from '../agents/helpers.ts'
import { expectWholeAnswer, readEvents, type StreamEvent } from '../chat/helpers.ts'
import { asking, startFakeOpenAi, type FakeOpenAi } from '../fakes/openai.ts'
import { announceSkip, postgresUrl, redisUrl } from '../helpers.ts'
import { createCluster, json, signIn, type Cluster, type ServiceProcess } from './cluster.ts'

const ready = Boolean(postgresUrl && redisUrl)
if (!ready) announceSkip('rolling restart suite', postgresUrl ? 'REDIS_URL' : 'DATABASE_URL')

/** Reads a stream to its end, keeping its events and any `retry:` field, as an EventSource client does. */
async function readToEnd(response: Response): Promise<{ events: StreamEvent[]; retry?: number }> {
  const events: StreamEvent[] = []
  let retry: number | undefined
  const parser = createParser({
    onEvent: (e: EventSourceMessage) => events.push({ ...e, chunk: e.data === '[DONE]' ? '[DONE]' : JSON.parse(e.data) }),
    onRetry: (ms) => (retry = ms),
  })
  const decoder = new TextDecoder()
  for await (const bytes of response.body!) parser.feed(decoder.decode(bytes, { stream: true }))
  return { events, retry }
}

describe.skipIf(!ready)('rolling restart of one of two processes', () => {
  let cluster: Cluster
  let model: FakeOpenAi
  let stopping: ServiceProcess
  let staying: ServiceProcess
  let token: string

  beforeAll(async () => {
    model = startFakeOpenAi()
    cluster = await createCluster(redisUrl!, {
      OPENAI_BASE_URL: model.baseUrl,
      CHAT_MODEL: 'fake-model',
      CHAT_SEARCH_AUGMENTATION: 'off',
      SHUTDOWN_TIMEOUT_MS: '15000',
    })
    ;[stopping, staying] = await Promise.all([cluster.start('stopping'), cluster.start('staying')])
    token = (await signIn(staying)).accessToken
  })

  afterAll(async () => {
    await cluster?.close()
    await model?.close()
  })

  test('SSE and WebSocket clients are handed over and the stopping process finishes their work before it exits', async () => {
    const words = Array.from({ length: 120 }, (_, i) => `r${i} `)
    // Each answer is scripted for its own asker: the chat's and the agent's model requests may arrive in any order.
    model.queue = [{ text: words, delayMs: 20, when: asking('a long one') }]
    const chatId = crypto.randomUUID()
    const chat = await stopping.request('/api/chat', json({ id: chatId, messages: [{ role: 'user', content: 'a long one' }] }, token))
    expect(chat.status).toBe(200)
    const chatRead = readToEnd(chat)
    const debugging = asking('RangeError: index out of range')
    model.queue.push(
      { text: '{"steps": ["Trace", "Fix"]}', when: debugging },
      { text: 'one two three four five six', delayMs: 60, when: debugging },
      { text: 'seven eight nine', delayMs: 60, when: debugging },
    )
    const agent = await connectAgent(`${stopping.url.replace('http', 'ws')}/ws/agent`, token)
    agent.send({ type: 'agent_command', id: 'go', command: 'debug', params: { error: 'RangeError: index out of range' } })
    const taskId = (await agent.next((m) => m.id === 'go')).taskId as string
    await agent.next((m) => m.taskId === taskId && m.type === 'progress' && m.status === 'running')

    const exited = stopping.stop()

    // The chat stream ends early with a reconnect hint and no [DONE]...
    const cut = await chatRead
    expect(cut.retry).toBe(1000)
    expect(cut.events.length).toBeGreaterThan(0)
    expect(cut.events.at(-1)!.chunk).not.toBe('[DONE]')
    // ...and the other process carries it on from the last event seen.
    const resumed = await staying.request(`/api/chat/${chatId}/stream`, {
      headers: { authorization: `Bearer ${token}`, 'last-event-id': cut.events.at(-1)!.id! },
    })
    expect(resumed.status).toBe(200)
    expectWholeAnswer([...cut.events, ...(await readEvents(resumed))], words.join(''))

    // The agent client is told to reconnect, and follows its task on the other process to the result.
    expect((await agent.closed).code).toBe(1001)
    const seen = agent.taskMessages(taskId)
    const follower = await connectAgent(`${staying.url.replace('http', 'ws')}/ws/agent`, token)
    follower.send({ type: 'subscribe', id: 'again', taskId, afterSeq: seen.at(-1)!.seq })
    expect(await follower.next((m) => m.id === 'again')).toMatchObject({ type: 'subscribed', taskId })
    expect((await follower.next(isFinal(taskId), 20_000)).type).toBe('result')
    expectContiguous([...seen, ...follower.taskMessages(taskId)])
    follower.close()
    // Every scripted answer went to the request it was written for.
    expect(model.queue).toEqual([])

    // The stopping process let both finish, then exited cleanly.
    expect(await exited).toBe(0)
    expect(stopping.logs.some((line) => line.level === 'warn' && /shutdown timeout/.test(line.msg))).toBe(false)
    const stored = await (await staying.request(`/api/chat/${chatId}`, { headers: { authorization: `Bearer ${token}` } })).json()
    expect(stored.messages.at(-1).parts.find((p: { type: string }) => p.type === 'text').text).toBe(words.join(''))
  })
})
