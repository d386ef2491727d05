/**
 * Each generation's chunks in the core event log (src/event-log), so a client that lost its connection gets
 * exactly what it missed, from any process. What is chat's own: the SSE framing (`id: <generationId>:<seq>`,
 * seq from 1, closed by `data: [DONE]`), the generation's details kept as the log's info, the pointer from a chat
 * to its running generation, and the interruption (a `generation_interrupted` error chunk, then `[DONE]`; an
 * `unavailable` one when the process holding the client ends the stream itself because Redis is unreachable).
 */
import { createMemoryEventLog, createRedisEventLog, followMapped, type EventLog, type LoggedEvent } from '../../src/event-log/index.ts'
import type { Logger } from '../../src/log.ts'
import { closingOwnConnection, createRedisManager, type RedisManager } from '../../src/redis.ts'

export interface GenerationMeta {
  generationId: string
  chatId: string
  userId: string
  startedAt: number
  /** The assistant message the generation writes, and where it goes in the chat: an interrupted one is stored there. */
  messageId?: string
  position?: number
}

export interface ProducerLog {
  /** Appends one chunk (its JSON text); returns its sequence number. */
  append(data: string): number
  /** Writes the closing `[DONE]` and marks the log complete. */
  end(): Promise<void>
  /** Resolves once the generation can be followed from any process; rejects (503) when the log cannot be reached. */
  readonly opened: Promise<void>
  /** Aborted when the log was taken from this process (its chunks could not be stored in time, or a follower ended it). */
  readonly lost: AbortSignal
  /** Stops without ending the log, as a dying process would: a follower then ends it with the interruption. */
  abandon(): void
}

/** Told of a generation's interruption, with the chunks that reached the log, in each process that reads it: it must be idempotent. */
export type InterruptedGeneration = (meta: GenerationMeta, chunks: string[]) => Promise<void>

export interface StreamLog {
  open(meta: GenerationMeta): ProducerLog
  /** The chat's running generation, if any. */
  active(chatId: string): Promise<GenerationMeta | undefined>
  /** The generation's details while its log (running or finished, not expired) exists. */
  meta(generationId: string): Promise<GenerationMeta | undefined>
  /** Frames after `afterSeq`, batched, until the end; live frames as they come. */
  follow(generationId: string, afterSeq: number, signal: AbortSignal): AsyncIterable<string>
  onInterrupted(handler: InterruptedGeneration): void
  /** Deletes every stored stream of the chat (an account's deletion); its generations should be cancelled first. */
  forget(chatId: string): Promise<void>
  close(): Promise<void>
}

export const DONE = '[DONE]'

/** The wire text of one logged event. `data` is JSON text or `[DONE]`, always one line (JSON escapes CR and LF). */
export function frame(generationId: string, seq: number, data: string): string {
  return `id: ${generationId}:${seq}\ndata: ${data}\n\n`
}

/** `<generationId>:<seq>` from a Last-Event-ID header; undefined when it is not one of ours. */
export function parseEventId(value: string | null | undefined): { generationId: string; seq: number } | undefined {
  const match = value ? /^(gen_[A-Za-z0-9]+):(\d{1,9})$/.exec(value.trim()) : null
  return match ? { generationId: match[1]!, seq: Number(match[2]) } : undefined
}

export const INTERRUPTED_CHUNK = JSON.stringify({
  type: 'error',
  errorText: 'generation_interrupted: the server producing this answer stopped before it finished; send the message again',
})

/** Ends the streams a process holds when the stream store (Redis) cannot be reached, or lost the answer's log. */
export const UNAVAILABLE_CHUNK = JSON.stringify({
  type: 'error',
  errorText:
    'unavailable: the stream store could not be reached, so this answer stopped here; the chat keeps it, marked interrupted; send the message again in a few seconds',
})

/** Where each chat's running generation is named, and every generation of the chat whose log may still be kept. */
interface ActivePointers {
  /** Names the running generation and adds it to the chat's generations. */
  set(chatId: string, generationId: string): Promise<unknown>
  get(chatId: string): Promise<string | undefined>
  /** Clears the pointer if it still names `generationId`. */
  release(chatId: string, generationId: string): Promise<unknown>
  /** The chat's generations whose logs may still be kept. */
  generations(chatId: string): Promise<string[]>
  /** Forgets the chat's pointer and its list of generations. */
  forget(chatId: string): Promise<unknown>
}

function createStreamLog(events: EventLog, pointers: ActivePointers, logger?: Logger): StreamLog {
  const handlers: InterruptedGeneration[] = []
  const parse = (info: string | undefined) => (info ? (JSON.parse(info) as GenerationMeta) : undefined)
  events.onInterrupted(async (_logId, info, logged) => {
    const meta = parse(info)!
    const chunks = logged.filter((e) => e.data !== DONE && e.data !== INTERRUPTED_CHUNK && e.data !== UNAVAILABLE_CHUNK).map((e) => e.data)
    for (const handler of handlers) await handler(meta, chunks)
    // Stored first: with Redis unreachable the pointer stays until it expires, and the answer is kept regardless.
    await pointers.release(meta.chatId, meta.generationId).catch((err) => logger?.warn('chat stream log: releasing an interrupted generation failed', { err }))
  })
  const meta = async (generationId: string) => parse(await events.info(generationId))

  return {
    open(meta) {
      const producer = events.open(meta.generationId, JSON.stringify(meta))
      const opened = producer.opened.then(() => pointers.set(meta.chatId, meta.generationId)).then(() => undefined)
      // A generation that cannot be followed does not start: its producer stops renewing its lease.
      opened.catch(() => producer.abandon())
      return {
        append: (data) => producer.append(data),
        async end() {
          await producer.end(DONE)
          await pointers
            .release(meta.chatId, meta.generationId)
            .catch((err) => logger?.warn('chat stream log: releasing the active generation failed', { err }))
        },
        opened,
        lost: producer.lost,
        abandon: () => producer.abandon(),
      }
    },
    async active(chatId) {
      const id = await pointers.get(chatId)
      return id ? meta(id) : undefined
    },
    meta,
    follow(generationId, afterSeq, signal) {
      // A batch is what one run of the producer appended (one upstream read): one string, one SSE write.
      return followMapped(events, generationId, afterSeq, signal, (batch: LoggedEvent[]) => {
        let text = ''
        for (const e of batch) text += frame(generationId, e.seq, e.data)
        return text
      })
    },
    onInterrupted(handler) {
      handlers.push(handler)
    },
    async forget(chatId) {
      for (const generationId of await pointers.generations(chatId)) await events.remove(generationId)
      await pointers.forget(chatId)
    },
    close: () => events.close(),
  }
}

const interruption = () => [INTERRUPTED_CHUNK, DONE]
const unavailable = () => [UNAVAILABLE_CHUNK, DONE]

export function createMemoryStreamLog(options: { ttlSeconds: number }): StreamLog {
  const active = new Map<string, string>()
  // A generation's log is kept for the retention time after it ends; its name, here, as long (bounded likewise).
  const generations = new Map<string, Map<string, number>>()
  const retentionMs = options.ttlSeconds * 1000
  const events = createMemoryEventLog({ interruption, retentionMs, maxLifeMs: Infinity })
  return createStreamLog(events, {
    set: async (chatId, id) => {
      active.set(chatId, id)
      const now = Date.now()
      const known = generations.get(chatId) ?? new Map<string, number>()
      for (const [old, at] of known) if (now - at > retentionMs && old !== active.get(chatId)) known.delete(old)
      generations.set(chatId, known.set(id, now))
    },
    get: async (chatId) => active.get(chatId),
    release: async (chatId, id) => {
      generations.get(chatId)?.set(id, Date.now())
      return active.get(chatId) === id && active.delete(chatId)
    },
    generations: async (chatId) => [...(generations.get(chatId)?.keys() ?? [])],
    forget: async (chatId) => {
      active.delete(chatId)
      generations.delete(chatId)
    },
  })
}

export interface RedisStreamLogOptions {
  /** The process's Redis connection manager; or `url` for a connection of the log's own. */
  redis?: RedisManager
  url?: string
  ttlSeconds: number
  /** Longest a generation may run; bounds the active pointer's life. */
  maxGenerationSeconds: number
  logger: Logger
  /** How long the producer's lease lives without renewal. Default 6000 ms (renewed every third of it). */
  leaseMs?: number
  /** How long a follower's blocking read waits before checking the lease. Default 1000 ms. */
  pollMs?: number
  keyPrefix?: string
}

// Names the running generation and adds it to the chat's generations, which live as long as its log may.
const SET_ACTIVE = `redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2]) redis.call('SADD', KEYS[2], ARGV[1]) redis.call('PEXPIRE', KEYS[2], ARGV[2]) return 1`
// Deletes the active pointer only if it still names this generation.
const RELEASE_ACTIVE = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`

export function createRedisStreamLog(options: RedisStreamLogOptions): StreamLog {
  const prefix = options.keyPrefix ?? 'chat:'
  const redis = options.redis ?? createRedisManager({ url: options.url!, logger: options.logger })
  const activeTtlMs = String((options.maxGenerationSeconds + options.ttlSeconds) * 1000)
  const events = createRedisEventLog({
    redis,
    logger: options.logger,
    keyPrefix: prefix,
    interruption,
    unavailable,
    retentionMs: options.ttlSeconds * 1000,
    maxLifeMs: (options.maxGenerationSeconds + options.ttlSeconds) * 1000,
    leaseMs: options.leaseMs,
    pollMs: options.pollMs,
  })
  const log = createStreamLog(
    events,
    {
      set: (chatId, id) => redis.send('EVAL', [SET_ACTIVE, '2', `${prefix}active:${chatId}`, `${prefix}generations:${chatId}`, id, activeTtlMs]),
      get: async (chatId) => (await redis.send('GET', [`${prefix}active:${chatId}`])) ?? undefined,
      release: (chatId, id) => redis.send('EVAL', [RELEASE_ACTIVE, '1', `${prefix}active:${chatId}`, id]),
      generations: async (chatId) => [...(((await redis.send('SMEMBERS', [`${prefix}generations:${chatId}`])) as Iterable<unknown> | null) ?? [])].map(String),
      forget: (chatId) => redis.send('DEL', [`${prefix}active:${chatId}`, `${prefix}generations:${chatId}`]),
    },
    options.logger,
  )
  return closingOwnConnection(log, options.redis ? undefined : redis)
}
