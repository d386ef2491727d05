/** Two service instances sharing Redis: a task running on one is followed and cancelled through the other. */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createApp } from '../../src/main/app.ts'
import { loadConfig } from '../../src/main/config.ts'
import { buildDependencies, type Dependencies } from '../../src/main/dependencies.ts'
import { memoryLogger } from '../../src/log.ts'
import { startFakeOpenAi, type FakeOpenAi } from '../fakes/openai.ts'
import { ADMIN, announceSkip, redisUrl, tempDir } from '../helpers.ts'
import { connectAgent, expectContiguous, isFinal } from './helpers.ts'

if (!redisUrl) announceSkip('Redis-backed agent task suites', 'REDIS_URL')

describe.skipIf(!redisUrl)('agent tasks shared through Redis', () => {
  const dir = tempDir()
  let model: FakeOpenAi
  const nodes: { deps: Dependencies; ws: string; stop(): Promise<void> }[] = []
  let token: string

  beforeAll(async () => {
    model = startFakeOpenAi()
    for (let i = 0; i < 2; i++) {
      const config = loadConfig({
        DATA_DIR: dir.path,
        REDIS_URL: redisUrl!,
        OPENAI_BASE_URL: model.baseUrl,
        ADMIN_EMAIL: ADMIN.email,
        ADMIN_PASSWORD: ADMIN.password,
        RATE_LIMIT_CHAT_PER_MINUTE: '10000',
      })
      const deps = await buildDependencies(config, { logger: memoryLogger('error') })
      const app = createApp(deps)
      app.listen({ hostname: '127.0.0.1', port: 0 })
      nodes.push({ deps, ws: `ws://127.0.0.1:${app.server!.port}/ws/agent`, stop: async () => void (await app.stop(true)) })
    }
    const login = await nodes[0]!.deps.access.login(ADMIN.email, ADMIN.password, '127.0.0.1')
    token = login.accessToken
  })

  afterAll(async () => {
    for (const n of nodes) {
      await n.stop()
      await n.deps.close()
    }
    await model.close()
    dir.remove()
  })

  test('a client on the other instance subscribes mid-task and gets the missed messages, then live ones, to the result', async () => {
    model.queue = [{ text: '{"steps": ["Look", "Explain"]}' }, { text: 'a b c d e f g h', delayMs: 40 }, { text: 'the end of it', delayMs: 40 }]
    const a = await connectAgent(nodes[0]!.ws, token)
    a.send({ type: 'agent_command', id: 'go', command: 'debug', params: { error: 'shared' } })
    const taskId = (await a.next((m) => m.id === 'go')).taskId as string
    await a.next((m) => m.taskId === taskId && m.step === 'Step 1: Look')
    const b = await connectAgent(nodes[1]!.ws, token)
    b.send({ type: 'subscribe', id: 'follow', taskId, afterSeq: 2 })
    expect(await b.next((m) => m.id === 'follow')).toMatchObject({ type: 'subscribed', status: 'running' })
    const final = await b.next(isFinal(taskId), 20_000)
    expect(final.type).toBe('result')
    await a.next(isFinal(taskId))
    expectContiguous(b.taskMessages(taskId), 3)
    // The follower on B saw exactly what the producer's own client saw after seq 2.
    expect(b.taskMessages(taskId)).toEqual(a.taskMessages(taskId).slice(2))
    a.close()
    b.close()
  })

  test('the ack means any instance finds the task: a subscribe on the other one right after it never misses', async () => {
    const a = await connectAgent(nodes[0]!.ws, token)
    const b = await connectAgent(nodes[1]!.ws, token)
    for (let i = 0; i < 20; i++) {
      a.send({ type: 'agent_command', id: `s${i}`, command: 'status' })
      const taskId = (await a.next((m) => m.id === `s${i}`)).taskId as string
      b.send({ type: 'subscribe', id: `f${i}`, taskId, afterSeq: 0 })
      expect(await b.next((m) => m.id === `f${i}`)).toMatchObject({ type: 'subscribed', taskId })
    }
    a.close()
    b.close()
  })

  test('cancel sent to the other instance stops the task where it runs', async () => {
    model.queue = [{ text: '{"steps": ["Wait"]}' }, { text: 'slow '.repeat(300), delayMs: 20 }]
    const a = await connectAgent(nodes[0]!.ws, token)
    a.send({ type: 'agent_command', id: 'long', command: 'debug', params: { error: 'long' } })
    const taskId = (await a.next((m) => m.id === 'long')).taskId as string
    await a.next((m) => m.taskId === taskId && m.step === 'Step 1: Wait')
    const b = await connectAgent(nodes[1]!.ws, token)
    b.send({ type: 'cancel', id: 'stop', taskId })
    expect(await b.next((m) => m.id === 'stop')).toMatchObject({ type: 'cancelling' })
    expect(await a.next(isFinal(taskId), 10_000)).toMatchObject({ type: 'error', status: 'cancelled', code: 'task_cancelled' })
    expect(nodes[0]!.deps.agents.runningCount).toBe(0)
    // status on B reads the task's state from Redis.
    b.send({ type: 'agent_command', id: 'st', command: 'status', params: { taskId } })
    const statusTask = (await b.next((m) => m.id === 'st')).taskId as string
    expect((await b.next(isFinal(statusTask))).output.task).toMatchObject({ taskId, status: 'cancelled' })
    a.close()
    b.close()
  })
})
