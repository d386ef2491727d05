/**
 * Generations run apart from the connections that follow them: a dropped client leaves its
 * generation running (so it can be resumed and its answer is stored); only an explicit cancel,
 * a newer message in the same chat, the time cap or shutdown stops one.
 */
import { RedisClient } from 'bun'
import type { Logger } from '../../src/log.ts'
import { serializeChunk, type UiChunk } from '../../src/llm/ui-stream.ts'
import { StreamError } from '../../src/llm/provider.ts'
import type { GenerationMeta, StreamLog } from './stream-log.ts'

export type Emit = (chunk: UiChunk) => void

export interface GenerationHubOptions {
  log: StreamLog
  logger: Logger
  /** Cap on one generation; it is aborted with `generation_timeout` when reached. */
  maxGenerationMs: number
  /** With Redis, cancels reach the process running the generation through this channel. */
  redisUrl?: string
  channel?: string
}

export interface StartedGeneration {
  generationId: string
  /** Settles when the generation has ended and its log is complete. */
  done: Promise<void>
}

export function newGenerationId(): string {
  return `gen_${Bun.randomUUIDv7('hex').replaceAll('-', '')}`
}

export function createGenerationHub(options: GenerationHubOptions) {
  const { log, logger } = options
  const channel = options.channel ?? 'chat:cancel'
  const running = new Map<string, { controller: AbortController; done: Promise<void> }>()
  let subscriber: RedisClient | undefined
  let publisher: RedisClient | undefined
  let subscribed: Promise<unknown> | undefined

  const abortLocal = (generationId: string, reason: StreamError): boolean => {
    const run = running.get(generationId)
    if (!run) return false
    run.controller.abort(reason)
    return true
  }

  const cancelled = () => new StreamError('generation_cancelled', 'The generation was cancelled')

  function listen() {
    if (!options.redisUrl || subscribed) return
    subscriber = new RedisClient(options.redisUrl, { autoReconnect: true })
    subscribed = subscriber
      .subscribe(channel, (generationId) => void abortLocal(generationId, cancelled()))
      .catch((err) => logger.warn('chat cancel channel: subscribe failed', { err }))
  }

  async function cancelGeneration(meta: GenerationMeta, reason = cancelled()): Promise<void> {
    if (abortLocal(meta.generationId, reason)) return
    if (!options.redisUrl) return
    publisher ??= new RedisClient(options.redisUrl, { autoReconnect: true })
    await publisher.send('PUBLISH', [channel, meta.generationId])
  }

  return {
    /**
     * Starts `run` as the chat's generation, superseding (cancelling) one still running for the chat.
     * `run` reports failures in-band; anything it throws becomes an error chunk.
     */
    async start(meta: Omit<GenerationMeta, 'generationId' | 'startedAt'>, run: (emit: Emit, signal: AbortSignal) => Promise<void>): Promise<StartedGeneration> {
      listen()
      const previous = await log.active(meta.chatId)
      if (previous) await cancelGeneration(previous, new StreamError('generation_cancelled', 'A newer message in this chat replaced the generation'))
      const full: GenerationMeta = { ...meta, generationId: newGenerationId(), startedAt: Date.now() }
      const producer = log.open(full)
      const controller = new AbortController()
      const cap = setTimeout(
        () => controller.abort(new StreamError('generation_timeout', `The generation reached its ${Math.round(options.maxGenerationMs / 1000)} s cap`)),
        options.maxGenerationMs,
      )
      const emit: Emit = (chunk) => void producer.append(serializeChunk(chunk))
      const done = (async () => {
        try {
          await run(emit, controller.signal)
        } catch (err) {
          logger.error('chat generation failed', { err, generationId: full.generationId })
          emit({ type: 'error', errorText: 'internal_error: the generation failed unexpectedly' })
        } finally {
          clearTimeout(cap)
          running.delete(full.generationId)
          await producer.end().catch((err) => logger.warn('chat stream log: end failed', { err }))
        }
      })()
      running.set(full.generationId, { controller, done })
      return { generationId: full.generationId, done }
    },

    active: (chatId: string) => log.active(chatId),
    meta: (generationId: string) => log.meta(generationId),

    /** Cancels the chat's running generation, wherever it runs. */
    async cancel(chatId: string): Promise<GenerationMeta | undefined> {
      const meta = await log.active(chatId)
      if (meta) await cancelGeneration(meta)
      return meta
    },

    /** Generations running in this process. */
    get runningCount() {
      return running.size
    },

    /** Resolves once nothing runs here: a draining process lets its answers finish before stopping them. */
    async idle() {
      while (running.size > 0) await Promise.allSettled([...running.values()].map((r) => r.done))
    },

    /** Stops what runs here (each stores what it has) and waits for them, up to `waitMs`. */
    async close(waitMs = 5000) {
      const pending = [...running.values()]
      for (const r of pending) r.controller.abort(new StreamError('generation_interrupted', 'The server is shutting down'))
      await Promise.race([Promise.allSettled(pending.map((r) => r.done)), Bun.sleep(waitMs)])
      subscriber?.close()
      publisher?.close()
    },
  }
}

export type GenerationHub = ReturnType<typeof createGenerationHub>
