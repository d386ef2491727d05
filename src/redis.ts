/**
 * The one Redis connection manager of a process. Work that needs Redis must never hang a request, so:
 * no offline queue (a queued command would run long after its request was answered), every command has a
 * deadline (default 1 s) and fails at once while the connection is down, and the manager reconnects for
 * ever, with a backoff capped at `reconnectMaxDelayMs`. Subscriptions are made again after a reconnect;
 * blocking reads (XREAD BLOCK) get connections of their own, so they never hold up other commands.
 */
import { RedisClient } from 'bun'
import { AppError } from './errors.ts'
import type { Logger } from './log.ts'

export interface RedisManagerOptions {
  url: string
  /** Deadline of one command, connecting included. Default 1000 ms. */
  commandTimeoutMs?: number
  /** Longest pause between two reconnection attempts (the backoff doubles from 50 ms up to it). Default 2000 ms. */
  reconnectMaxDelayMs?: number
  logger?: Logger
}

/** A connection of its own for a blocking read; released when done. */
export interface BlockingConnection {
  send(command: string, args: string[], timeoutMs: number): Promise<unknown>
  /** Gives the connection back; `broken` closes it instead (after an error or a deadline). */
  release(broken?: boolean): void
}

export interface RedisManager {
  readonly connected: boolean
  // biome-ignore lint/suspicious/noExplicitAny: a Redis reply's shape depends on the command; each caller reads its own
  send(command: string, args: string[], timeoutMs?: number): Promise<any>
  /** Runs several commands on the shared connection under one deadline. */
  run<T>(work: (client: RedisClient) => Promise<T>, timeoutMs?: number): Promise<T>
  /** Listens on `channel` from now on, across reconnections; `subscribed` settles at the first subscription or the deadline (listening goes on). */
  subscribe(channel: string, listener: (message: string) => void): { subscribed: Promise<void>; unsubscribe(): void }
  /** Called after each reconnection (not the first connection): messages published meanwhile were missed. */
  onReconnect(listener: () => void): () => void
  blocking(): Promise<BlockingConnection>
  ping(): Promise<void>
  close(): void
}

/** What work that needs Redis fails with while Redis cannot be reached: 503 `unavailable` with a Retry-After. */
export class RedisUnavailableError extends AppError {
  constructor(reason: string, cause?: unknown) {
    super('unavailable', `Redis is unreachable (${reason}); try again in a few seconds`, { headers: { 'retry-after': '2' }, cause })
  }
}

const MIN_DELAY_MS = 50
const IDLE_BLOCKING_KEPT = 16

const newClient = (url: string, timeoutMs: number) => new RedisClient(url, { enableOfflineQueue: false, autoReconnect: false, connectionTimeout: timeoutMs })

/** A connection that comes back by itself: each attempt is a fresh client, the pause doubling up to the cap. */
function createLink(url: string, timeoutMs: number, maxDelayMs: number, hooks: { up(client: RedisClient): Promise<void>; down(err: unknown): void }) {
  let client: RedisClient | undefined
  let connecting: Promise<RedisClient> | undefined
  let retry: ReturnType<typeof setTimeout> | undefined
  let delay = MIN_DELAY_MS
  let closed = false

  function attempt(): Promise<RedisClient> {
    connecting ??= (async () => {
      const candidate = newClient(url, timeoutMs)
      try {
        await candidate.connect()
        candidate.onclose = (err) => {
          if (client !== candidate) return
          client = undefined
          hooks.down(err)
          schedule()
        }
        await hooks.up(candidate)
        if (closed) candidate.close()
        else client = candidate
        delay = MIN_DELAY_MS
        return candidate
      } catch (err) {
        candidate.close()
        schedule()
        throw err
      }
    })().finally(() => (connecting = undefined))
    return connecting
  }

  function schedule() {
    if (closed || retry) return
    const wait = delay
    delay = Math.min(maxDelayMs, delay * 2)
    retry = setTimeout(() => {
      retry = undefined
      if (!client && !closed) void attempt().catch(() => undefined)
    }, wait)
    retry.unref?.()
  }

  return {
    get client() {
      return client
    },
    /** The live client, the connection under way, or a rejection at once while waiting to retry. */
    ready(): Promise<RedisClient> {
      if (client) return Promise.resolve(client)
      if (closed) return Promise.reject(new RedisUnavailableError('the connection is closed'))
      if (connecting) return connecting
      if (retry) return Promise.reject(new RedisUnavailableError('reconnecting'))
      return attempt()
    },
    /** Drops the connection (a reconnection follows). */
    drop() {
      const current = client
      client = undefined
      if (current) {
        current.close()
        hooks.down(new Error('dropped after a deadline'))
        schedule()
      }
    },
    close() {
      closed = true
      clearTimeout(retry)
      client?.close()
      client = undefined
    },
  }
}

function withDeadline<T>(work: Promise<T>, timeoutMs: number, onTimeout?: () => void): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      onTimeout?.()
      reject(new RedisUnavailableError(`no answer within ${timeoutMs} ms`))
    }, timeoutMs)
  })
  return Promise.race([work, deadline]).finally(() => clearTimeout(timer))
}

const unavailable = (err: unknown): never => {
  if (err instanceof AppError) throw err
  // A server error (a script refusing, a wrong type) is an answer, not an outage.
  if ((err as { code?: string })?.code === 'ERR_REDIS_SERVER_ERROR') throw err
  throw new RedisUnavailableError((err as Error)?.message ?? String(err), err)
}

export function createRedisManager(options: RedisManagerOptions): RedisManager {
  const timeoutMs = options.commandTimeoutMs ?? 1000
  const maxDelayMs = options.reconnectMaxDelayMs ?? 2000
  const channels = new Map<string, Set<(message: string) => void>>()
  const reconnectListeners = new Set<() => void>()
  const idle: RedisClient[] = []
  const lent = new Set<RedisClient>()
  let everConnected = false
  let closed = false
  let lastWarnAt = -Infinity

  const warn = (msg: string, err: unknown) => {
    if (Date.now() - lastWarnAt < 5000) return
    lastWarnAt = Date.now()
    options.logger?.warn(msg, { err })
  }

  const main = createLink(options.url, timeoutMs, maxDelayMs, {
    async up() {
      if (everConnected) for (const listener of reconnectListeners) listener()
      everConnected = true
      // The subscriber follows the main connection back up.
      if (channels.size > 0) void subscriber.ready().catch(() => undefined)
    },
    down(err) {
      warn('redis connection lost; reconnecting', err)
      for (const c of idle.splice(0)) c.close()
    },
  })

  const dispatch = (message: string, channel: string) => {
    for (const listener of channels.get(channel) ?? []) listener(message)
  }
  // Which channels each subscriber connection listens on, so a channel is never subscribed twice on one.
  const listening = new WeakMap<RedisClient, Set<string>>()
  const listen = async (client: RedisClient, channel: string) => {
    let set = listening.get(client)
    if (!set) listening.set(client, (set = new Set()))
    if (set.has(channel)) return
    set.add(channel)
    await client.subscribe(channel, dispatch)
  }
  const subscriber = createLink(options.url, timeoutMs, maxDelayMs, {
    async up(client) {
      for (const channel of channels.keys()) await listen(client, channel)
    },
    down() {},
  })

  function run<T>(work: (client: RedisClient) => Promise<T>, deadlineMs = timeoutMs): Promise<T> {
    const sentAt = Date.now()
    let replied = false
    return withDeadline(
      main.ready().then(async (client) => {
        const result = await work(client)
        replied = true
        return result
      }),
      deadlineMs,
      // A connection that answered nothing within the deadline is likely dead without having closed.
      () => void (!replied && Date.now() - sentAt >= deadlineMs && main.client && main.drop()),
    ).catch(unavailable)
  }

  // Connected from the start, so the first request does not pay for it and readiness knows at once.
  void main.ready().catch(() => undefined)

  return {
    get connected() {
      return main.client?.connected === true
    },
    send: (command, args, deadlineMs) => run((client) => client.send(command, args), deadlineMs),
    run,
    subscribe(channel, listener) {
      let listeners = channels.get(channel)
      if (!listeners) channels.set(channel, (listeners = new Set()))
      listeners.add(listener)
      const unsubscribe = () => {
        listeners.delete(listener)
        if (listeners.size > 0) return
        channels.delete(channel)
        const client = subscriber.client
        if (!client) return
        listening.get(client)?.delete(channel)
        void client.unsubscribe(channel).catch(() => undefined)
      }
      const subscribed = withDeadline(
        subscriber.ready().then((client) => listen(client, channel)),
        timeoutMs,
      ).catch(unavailable)
      return { subscribed, unsubscribe }
    },
    onReconnect(listener) {
      reconnectListeners.add(listener)
      return () => reconnectListeners.delete(listener)
    },
    async blocking() {
      if (closed) throw new RedisUnavailableError('the connection is closed')
      let client = idle.pop()
      while (client && !client.connected) client = idle.pop()
      if (!client) {
        const fresh = newClient(options.url, timeoutMs)
        await withDeadline(fresh.connect(), timeoutMs, () => fresh.close()).catch((err) => {
          fresh.close()
          return unavailable(err)
        })
        client = fresh
      }
      const held = client
      lent.add(held)
      let released = false
      return {
        send: (command, args, deadlineMs) => withDeadline(held.send(command, args), deadlineMs, () => held.close()).catch(unavailable),
        release(broken = false) {
          if (released) return
          released = true
          lent.delete(held)
          if (!broken && !closed && held.connected && idle.length < IDLE_BLOCKING_KEPT) idle.push(held)
          else held.close()
        },
      }
    },
    async ping() {
      await run((client) => client.send('PING', []))
    },
    close() {
      closed = true
      main.close()
      subscriber.close()
      for (const c of [...idle.splice(0), ...lent]) c.close()
      lent.clear()
    },
  }
}

/** `service` as it is when it was handed its Redis connection; else closing it also closes the one it made (`own`). */
export function closingOwnConnection<T extends { close(): Promise<void> }>(service: T, own: RedisManager | undefined): T {
  if (!own) return service
  return {
    ...service,
    async close() {
      await service.close()
      own.close()
    },
  }
}
