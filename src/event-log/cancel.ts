/**
 * One cancel channel for whatever runs in one process and is followed from others (chat generations, agent
 * tasks): a cancel reaches the process running the work, here directly, elsewhere through Redis pub/sub
 * (re-subscribed after a reconnect by the connection manager).
 */
import type { Logger } from '../log.ts'
import type { RedisManager } from '../redis.ts'

export interface CancelChannel {
  /** Calls `onCancel` when `id` is cancelled from any process, until the returned function is called. */
  register(id: string, onCancel: () => void): () => void
  /** Cancels `id` where it runs; rejects (503 `unavailable`) when another process must be told and Redis is unreachable. */
  cancel(id: string): Promise<void>
  close(): Promise<void>
}

export function createCancelChannel(options: { redis?: RedisManager; channel?: string; logger?: Logger } = {}): CancelChannel {
  const channel = options.channel ?? 'cancel'
  const running = new Map<string, () => void>()
  const cancelHere = (id: string) => {
    const onCancel = running.get(id)
    if (!onCancel) return false
    onCancel()
    return true
  }
  // The manager keeps the subscription across outages; a failure here only means it is made later.
  const subscription = options.redis?.subscribe(channel, (id) => void cancelHere(id))
  subscription?.subscribed.catch((err) => options.logger?.warn('cancel channel: not subscribed yet; the connection manager retries', { err }))

  return {
    register(id, onCancel) {
      running.set(id, onCancel)
      return () => {
        if (running.get(id) === onCancel) running.delete(id)
      }
    },
    async cancel(id) {
      if (cancelHere(id) || !options.redis) return
      await options.redis.send('PUBLISH', [channel, id])
    },
    async close() {
      subscription?.unsubscribe()
      running.clear()
    },
  }
}
