import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createApp } from '../../src/main/app.ts'
import { loadConfig } from '../../src/main/config.ts'
import { buildDependencies, type Dependencies } from '../../src/main/dependencies.ts'
import { memoryLogger } from '../../src/log.ts'
import { createRedisStreamLog } from '../../plugins/chat/stream-log.ts'
import { newGenerationId } from '../../plugins/chat/generations.ts'
import { startFakeOpenAi, type FakeOpenAi } from '../fakes/openai.ts'
import { ADMIN, announceSkip, redisUrl, tempDir } from '../helpers.ts'
import { chunks, eventually, expectWholeAnswer, readEvents, readSome, textOf } from './helpers.ts'

if (!redisUrl) announceSkip('Redis-backed chat stream suites', 'REDIS_URL')

const words = Array.from({ length: 40 }, (_, i) => `r${i} `)

describe.skipIf(!redisUrl)('chat streams shared through Redis', () => {
  const dir = tempDir()
  let model: FakeOpenAi
  const nodes: { deps: Dependencies; url: string; stop(): void }[] = []
  let headers: Record<string, string>

  beforeAll(async () => {
    model = startFakeOpenAi()
    // Two service instances on one database and one Redis: what two processes behind a load balancer share.
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
      const server = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: (r) => app.handle(r) })
      nodes.push({ deps, url: `http://127.0.0.1:${server.port}`, stop: () => server.stop(true) })
    }
    const { accessToken } = await fetch(`${nodes[0]!.url}/auth/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(ADMIN),
    }).then((r) => r.json())
    headers = { authorization: `Bearer ${accessToken}`, 'content-type': 'application/json' }
  })

  afterAll(async () => {
    for (const n of nodes) {
      n.stop()
      await n.deps.close()
    }
    await model.close()
    dir.remove()
  })

  test('a stream produced on one instance is resumed on the other with Last-Event-ID, no gap, no duplicate', async () => {
    const chatId = `shared-${crypto.randomUUID().slice(0, 8)}`
    model.queue = [{ text: words, delayMs: 10 }]
    const abort = new AbortController()
    const response = await fetch(`${nodes[0]!.url}/api/chat`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ id: chatId, messages: [{ role: 'user', content: 'go' }] }),
      signal: abort.signal,
    })
    const before = await readSome(response, 8, abort)
    const resumed = await fetch(`${nodes[1]!.url}/api/chat/${chatId}/stream`, { headers: { ...headers, 'last-event-id': before.at(-1)!.id! } })
    expect(resumed.status).toBe(200)
    expectWholeAnswer([...before, ...(await readEvents(resumed))], words.join(''))
    // Replay from the start on the other instance too, once finished (the log outlives the generation).
    const replay = await fetch(`${nodes[1]!.url}/api/chat/${chatId}/stream`, { headers: { ...headers, 'last-event-id': `${before[0]!.id!.split(':')[0]}:0` } })
    expect(textOf(await readEvents(replay))).toBe(words.join(''))
  })

  test('a cancel sent to the other instance stops the generation where it runs', async () => {
    const chatId = `cancel-${crypto.randomUUID().slice(0, 8)}`
    model.queue = [{ text: words, delayMs: 40 }]
    const response = await fetch(`${nodes[0]!.url}/api/chat`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ id: chatId, messages: [{ role: 'user', content: 'go' }] }),
    })
    const reading = readEvents(response)
    await eventually(() => model.open > 0, 'the upstream stream')
    const abandoned = model.abandoned
    const cancel = await fetch(`${nodes[1]!.url}/api/chat/${chatId}/cancel`, { method: 'POST', headers })
    expect(await cancel.json()).toMatchObject({ cancelled: true })
    expect(chunks(await reading).at(-1)).toMatchObject({ type: 'abort' })
    await eventually(() => model.abandoned === abandoned + 1, 'the upstream abort')
  })

  test('when the producing process dies mid-way, a follower gets what was written, then an interruption error', async () => {
    const generationId = newGenerationId()
    const producer = Bun.spawn([process.execPath, `${import.meta.dir}/fixtures/dying-producer.ts`, redisUrl!, generationId, 'chat-x'], {
      stdout: 'pipe',
      stderr: 'inherit',
    })
    const reader = producer.stdout.getReader()
    const { value } = await reader.read()
    expect(new TextDecoder().decode(value)).toContain('ready')
    producer.kill('SIGKILL')
    await producer.exited
    const log = createRedisStreamLog({ url: redisUrl!, ttlSeconds: 60, maxGenerationSeconds: 60, logger: memoryLogger('error'), pollMs: 200 })
    let text = ''
    for await (const batch of log.follow(generationId, 0, AbortSignal.timeout(10_000))) text += batch
    const response = new Response(text)
    const events = await readEvents(response)
    expect(chunks(events).map((c) => c.type)).toEqual(['start', 'text-start', 'text-delta', 'error'])
    expect(chunks(events).at(-1)!.errorText).toStartWith('generation_interrupted:')
    expect(events.at(-1)!.chunk).toBe('[DONE]')
    expect(events.map((e) => Number(e.id!.split(':')[1]))).toEqual([1, 2, 3, 4, 5])
    expect(await log.active('chat-x')).toBeUndefined()
    await log.close()
  })
})
