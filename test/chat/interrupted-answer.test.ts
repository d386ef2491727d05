/**
 * A generation whose producer died is kept in the chat's history: the assistant message built from the chunks
 * that reached the log, marked interrupted, stored once however many processes follow it.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { memoryLogger } from '../../src/log.ts'
import { loadConfig } from '../../src/main/config.ts'
import { buildDependencies, type Dependencies } from '../../src/main/dependencies.ts'
import { createChatService, type ChatService } from '../../plugins/chat/service.ts'
import { newGenerationId } from '../../plugins/chat/generations.ts'
import { createMemoryStreamLog, createRedisStreamLog, type GenerationMeta, type StreamLog } from '../../plugins/chat/stream-log.ts'
import { ChatStore } from '../../plugins/chat/store.ts'
import { openDatabase } from '../../src/storage/database.ts'
import { migrate } from '../../src/storage/migrate.ts'
import { migrations } from '../../src/storage/migrations/index.ts'
import { announceSkip, freshPostgres, makeApp, postgresUrl, tempDir } from '../helpers.ts'
import { redisServerInstalled, startPrivateRedis, type PrivateRedis } from '../event-log/private-redis.ts'

const CHUNKS = [
  { type: 'start', messageId: 'msg_cut' },
  { type: 'text-start', id: 't1' },
  { type: 'text-delta', id: 't1', delta: 'half an ' },
  { type: 'text-delta', id: 't1', delta: 'answer' },
]

/** A chat with one user message and a generation answering it, its chunks written, then its producer gone. */
async function dyingGeneration(deps: Pick<Dependencies, 'db'>, log: StreamLog, abandon: (producer: ReturnType<StreamLog['open']>) => Promise<void>) {
  const chatId = `chat_${crypto.randomUUID().replaceAll('-', '')}`
  await new ChatStore(deps.db).save({ id: chatId, orgId: 'o1', userId: 'u1', title: 'cut' }, 0, [
    { id: 'msg_q', role: 'user', parts: [{ type: 'text', text: 'go' }] },
  ])
  const meta: GenerationMeta = { generationId: newGenerationId(), chatId, userId: 'u1', startedAt: Date.now(), messageId: 'msg_cut', position: 1 }
  const producer = log.open(meta)
  await producer.opened
  for (const chunk of CHUNKS) producer.append(JSON.stringify(chunk))
  await abandon(producer)
  return meta
}

async function readToEnd(deps: { chat: Pick<ChatService, 'follow'> }, generationId: string): Promise<string> {
  let text = ''
  for await (const batch of deps.chat.follow(generationId, 0, AbortSignal.timeout(10_000))) text += batch
  return text
}

async function expectOneInterruptedAnswer(deps: Pick<Dependencies, 'db'>, chatId: string) {
  const messages = await new ChatStore(deps.db).messages(chatId)
  expect(messages.map((m) => m.id)).toEqual(['msg_q', 'msg_cut'])
  expect(messages[1]).toMatchObject({ role: 'assistant', parts: [{ type: 'text', text: 'half an answer' }], metadata: { status: 'interrupted' } })
}

test('in memory: the follower that ends an abandoned generation stores its answer as interrupted', async () => {
  const t = await makeApp()
  const log = createMemoryStreamLog({ ttlSeconds: 60 })
  const { db, logger, webSearch, config } = t.deps
  const chat = createChatService({ db, logger, provider: undefined, webSearch, settings: config.chat, log, maxGenerationMs: 60_000 })
  const meta = await dyingGeneration(t.deps, log, async (producer) => producer.abandon())
  const text = await readToEnd({ chat }, meta.generationId)
  expect(text).toContain('generation_interrupted')
  await expectOneInterruptedAnswer(t.deps, meta.chatId)
  await log.close()
  await t.close()
}, 120_000)

if (!redisServerInstalled) console.warn('[skip] interrupted answers through Redis: redis-server is not installed at /usr/bin/redis-server')

describe.skipIf(!redisServerInstalled)('through Redis', () => {
  let server: PrivateRedis
  const dir = tempDir()
  const instances: Dependencies[] = []
  beforeAll(async () => {
    server = await startPrivateRedis()
    // Two processes following, sharing one database and one Redis.
    for (let i = 0; i < 2; i++)
      instances.push(await buildDependencies(loadConfig({ DATA_DIR: dir.path, REDIS_URL: server.url }), { logger: memoryLogger('error') }))
  })
  afterAll(async () => {
    for (const deps of instances) await deps.close()
    await server.stop()
    dir.remove()
  })

  test('a producer process dropped mid-answer: two processes race to end it, the answer is stored once, interrupted', async () => {
    // The producing process, dropped without ending anything, as SIGKILL would.
    const producing = createRedisStreamLog({ url: server.url, ttlSeconds: 60, maxGenerationSeconds: 60, logger: memoryLogger('error'), leaseMs: 600 })
    const [b, c] = instances as [Dependencies, Dependencies]
    const meta = await dyingGeneration(b, producing, async () => {
      await Bun.sleep(50)
      await producing.close()
    })
    const [onB, onC] = await Promise.all([readToEnd(b, meta.generationId), readToEnd(c, meta.generationId)])
    expect(onB).toBe(onC)
    expect(onB.match(/generation_interrupted/g)?.length).toBe(1)
    await expectOneInterruptedAnswer(b, meta.chatId)
    expect(await b.chat.activeGeneration(meta.chatId)).toBeUndefined()
  }, 120_000)

  test('when the process that wrote the interruption stored nothing, the next process reading the log stores the answer', async () => {
    const producing = createRedisStreamLog({ url: server.url, ttlSeconds: 60, maxGenerationSeconds: 60, logger: memoryLogger('error'), leaseMs: 600 })
    // A process with no chat service: it ends the log and, like one dying right after, records nothing.
    const ending = createRedisStreamLog({ url: server.url, ttlSeconds: 60, maxGenerationSeconds: 60, logger: memoryLogger('error'), pollMs: 200 })
    const [b] = instances as [Dependencies]
    const meta = await dyingGeneration(b, producing, async () => {
      await Bun.sleep(50)
      await producing.close()
    })
    let ended = ''
    for await (const batch of ending.follow(meta.generationId, 0, AbortSignal.timeout(10_000))) ended += batch
    expect(ended).toContain('generation_interrupted')
    expect((await new ChatStore(b.db).messages(meta.chatId)).map((m) => m.id)).toEqual(['msg_q'])
    expect(await readToEnd(b, meta.generationId)).toBe(ended)
    await expectOneInterruptedAnswer(b, meta.chatId)
    await ending.close()
  }, 120_000)
})

if (!postgresUrl) announceSkip('two processes storing one interrupted answer at once (several processes share PostgreSQL)', 'DATABASE_URL')

test.skipIf(!postgresUrl)('two processes storing the same interrupted answer at once leave one message', async () => {
  const pg = (await freshPostgres())!
  const handles = await Promise.all([0, 1].map(() => openDatabase({ databaseUrl: pg.url })))
  await migrate(handles[0]!, migrations)
  const [b, c] = handles.map((db) => new ChatStore(db)) as [ChatStore, ChatStore]
  for (let round = 0; round < 20; round++) {
    const chatId = `chat_race_${round}`
    await b.save({ id: chatId, orgId: 'o1', userId: 'u1', title: 'race' }, 0, [{ id: 'msg_q', role: 'user', parts: [{ type: 'text', text: 'go' }] }])
    const answer = { id: 'msg_cut', role: 'assistant' as const, parts: [{ type: 'text', text: 'half an answer' }], metadata: { status: 'interrupted' } }
    await Promise.all([b.addAnswerOnce(chatId, 1, answer), c.addAnswerOnce(chatId, 1, answer)])
    expect((await c.messages(chatId)).map((m) => m.id)).toEqual(['msg_q', 'msg_cut'])
  }
  for (const db of handles) await db.close()
  await pg.drop()
})
