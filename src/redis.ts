import { RedisClient } from 'bun'

// After a failed connection attempt, calls fail at once for this long instead of each waiting out a timeout.
const RECONNECT_AFTER_MS = 1_000

export interface RedisConnection {
  readonly client: RedisClient
  /** Connects when needed and runs `work`, rejecting once `timeoutMs` has passed, connecting included. */
  run<T>(work: (client: RedisClient) => Promise<T>): Promise<T>
  close(): void
}

/**
 * A Redis client for work that must never hang a request: no offline queue (a queued command would run
 * long after its request was answered, e.g. spending rate-limit budget), so connecting is done here,
 * with a pause after a failure, and every call has a deadline.
 */
export function createRedisConnection(url: string, options: { timeoutMs: number; name: string }): RedisConnection {
  const client = new RedisClient(url, { enableOfflineQueue: false, autoReconnect: false, connectionTimeout: options.timeoutMs })
  let connecting: Promise<void> | undefined
  let connectAgainAt = 0
  let closed = false

  const connection = (): Promise<void> => {
    if (client.connected) return Promise.resolve()
    if (closed) return Promise.reject(new Error(`${options.name} is closed`))
    if (Date.now() < connectAgainAt) return Promise.reject(new Error('Redis connection failed moments ago'))
    connecting ??= client
      .connect()
      .catch((err) => {
        connectAgainAt = Date.now() + RECONNECT_AFTER_MS
        throw err
      })
      .finally(() => (connecting = undefined))
    return connecting
  }

  return {
    client,
    run(work) {
      let timer: ReturnType<typeof setTimeout> | undefined
      const deadline = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`Redis did not answer within ${options.timeoutMs} ms`)), options.timeoutMs)
      })
      return Promise.race([connection().then(() => work(client)), deadline]).finally(() => clearTimeout(timer))
    },
    close() {
      closed = true
      client.close()
    },
  }
}
