/**
 * Generations run apart from the connections that follow them: a dropped client leaves its
 * generation running (so it can be resumed and its answer is stored); only an explicit cancel,
 * a newer message in the same chat, the time cap or shutdown stops one.
 */
import { createCancelChannel, type CancelChannel } from '../../src/event-log/cancel.ts'
import type { Logger } from '../../src/log.ts'
import { serializeChunk, type Emit } from '../../src/llm/ui-stream.ts'
import { StreamError } from '../../src/llm/provider.ts'
import type { GenerationMeta, StreamLog } from './stream-log.ts'

export interface GenerationHubOptions {
  log: StreamLog
  logger: Logger
  /** Cap on one generation; it is aborted with `generation_timeout` when reached. */
  maxGenerationMs: number
  /** Cancels reach the process running the generation through it; in process only when unset. */
  cancels?: CancelChannel
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
  const cancels = options.cancels ?? createCancelChannel()
  const running = new Map<string, { controller: AbortController; done: Promise<void> }>()

  const cancelled = () => new StreamError('generation_cancelled', 'The generation was cancelled')

  async function cancelGeneration(meta: GenerationMeta, reason = cancelled()): Promise<void> {
    const run = running.get(meta.generationId)
    if (run) return void run.controller.abort(reason)
    await cancels.cancel(meta.generationId)
  }

  return {
    /**
     * Starts `run` as the chat's generation, superseding (cancelling) one still running for the chat.
     * `run` reports failures in-band; anything it throws becomes an error chunk.
     */
    async start(
      meta: Omit<GenerationMeta, 'generationId' | 'startedAt'>,
      run: (emit: Emit, signal: AbortSignal, logLost: AbortSignal) => Promise<void>,
      /** The chat's running generation when the caller has read it already. */
      known?: { previous: GenerationMeta | undefined },
    ): Promise<StartedGeneration> {
      const previous = known ? known.previous : await log.active(meta.chatId)
      if (previous) await cancelGeneration(previous, new StreamError('generation_cancelled', 'A newer message in this chat replaced the generation'))
      const full: GenerationMeta = { ...meta, generationId: newGenerationId(), startedAt: Date.now() }
      const producer = log.open(full)
      // Nothing starts before the generation can be followed (and resumed) from any process.
      await producer.opened
      const controller = new AbortController()
      const lost = () => controller.abort(new StreamError('generation_interrupted', 'The stream log of this generation was lost'))
      producer.lost.addEventListener('abort', lost, { once: true })
      const unregister = cancels.register(full.generationId, () => controller.abort(cancelled()))
      const cap = setTimeout(
        () => controller.abort(new StreamError('generation_timeout', `The generation reached its ${Math.round(options.maxGenerationMs / 1000)} s cap`)),
        options.maxGenerationMs,
      )
      const emit: Emit = (chunk) => void producer.append(serializeChunk(chunk))
      const done = (async () => {
        try {
          await run(emit, controller.signal, producer.lost)
        } catch (err) {
          logger.error('chat generation failed', { err, generationId: full.generationId })
          emit({ type: 'error', errorText: 'internal_error: the generation failed unexpectedly' })
        } finally {
          clearTimeout(cap)
          unregister()
          producer.lost.removeEventListener('abort', lost)
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

    /**
     * Cancels the chat's running generation and waits until it has ended (it stores what it has, then ends its
     * log): here by its own promise, in another process until the chat's pointer is released, up to `waitMs`.
     */
    async stop(chatId: string, waitMs = 10_000): Promise<void> {
      const meta = await log.active(chatId)
      if (!meta) return
      const run = running.get(meta.generationId)
      await cancelGeneration(meta)
      if (run) return void (await Promise.race([run.done, Bun.sleep(waitMs)]))
      const until = Date.now() + waitMs
      while (Date.now() < until && (await log.active(chatId))?.generationId === meta.generationId) await Bun.sleep(50)
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
    },
  }
}

export type GenerationHub = ReturnType<typeof createGenerationHub>
