/**
 * The event log over a durable store of the domain's own (a database table), for events that must outlive any
 * cache and exist without Redis: import progress. Same numbering, batching and guarantee as the other logs (a
 * follower in the producing process is woken only once the store has the event); followers elsewhere read the
 * store every `pollMs`. There is no lease: the domain knows whether its producer lives (a heartbeat on its own
 * record) and, when it does not, ends the log once with `endAbandoned`, guarded by its own compare-and-set.
 */
import type { Logger } from '../log.ts'
import type { EventListener, LoggedEvent } from './index.ts'
import { LocalLog, deliver, newFollower, stopper, type Follower } from './local.ts'

export interface EventStore {
  /** Writes `events` (the log's next sequence numbers, in order); rejects when one is taken. */
  append(logId: string, events: LoggedEvent[]): Promise<void>
  /** Up to `limit` events after `afterSeq`, in order. */
  read(logId: string, afterSeq: number, limit: number): Promise<LoggedEvent[]>
  /** The last sequence number written (0 when none). */
  lastSeq(logId: string): Promise<number>
}

export interface StoredEventLogOptions {
  store: EventStore
  /** How often a follower of a log produced elsewhere reads the store. Default 1000 ms. */
  pollMs?: number
  /** Run by an idle follower of a log produced elsewhere: the domain checks its producer lives and ends the log if not. */
  checkProducer?: (logId: string) => Promise<void>
  /** How long the producing process keeps a finished log's events for its late followers. Default 60000 ms. */
  keepMs?: number
  logger?: Logger
}

/** What a producer of a stored log does; `written` rejects when the store refused the events. */
export interface StoredProducer {
  append(data: string, final?: boolean): number
  written(): Promise<void>
}

export interface StoredEventLog {
  open(logId: string): StoredProducer
  /** Appends the final event after whatever the log holds, for a producer that is gone. */
  endAbandoned(logId: string, data: string): Promise<void>
  follow(logId: string, afterSeq: number, listener: EventListener): Promise<() => void>
  close(): Promise<void>
}

export function createStoredEventLog(options: StoredEventLogOptions): StoredEventLog {
  const { store } = options
  const pollMs = options.pollMs ?? 1000
  const produced = new Map<string, LocalLog>()
  const pollers = new Map<string, Set<() => void>>()
  const timers = new Set<ReturnType<typeof setTimeout>>()
  let closed = false

  const wakePollers = (logId: string) => {
    for (const wake of pollers.get(logId) ?? []) wake()
  }

  function open(logId: string): StoredProducer {
    const log = new LocalLog(logId, '')
    produced.set(logId, log)
    let assigned = 0
    let pending: LoggedEvent[] = []
    let writing: Promise<void> = Promise.resolve()
    let failure: Error | undefined
    let scheduled = false

    const flush = () => {
      scheduled = false
      const batch = pending
      pending = []
      if (batch.length === 0 || failure) return
      // One write per tick, in order; followers here see the events once the store has them.
      writing = writing.then(async () => {
        if (failure) return
        try {
          await store.append(logId, batch)
        } catch (err) {
          failure = err instanceof Error ? err : new Error(String(err))
          options.logger?.warn('stored event log: append failed', { err, logId })
          return
        }
        log.commit(batch)
        if (batch.at(-1)!.final) {
          const timer = setTimeout(() => {
            timers.delete(timer)
            if (produced.get(logId) === log) produced.delete(logId)
          }, options.keepMs ?? 60_000)
          timers.add(timer)
        }
      })
    }

    return {
      append(data, final = false) {
        if (log.ended || pending.at(-1)?.final) throw new Error(`log ${logId} has already ended`)
        pending.push({ seq: ++assigned, data, final })
        if (!scheduled) {
          scheduled = true
          queueMicrotask(flush)
        }
        return assigned
      },
      async written() {
        if (scheduled) flush()
        await writing
        if (failure) throw failure
      },
    }
  }

  async function poll(logId: string, follower: Follower) {
    let wake: (() => void) | undefined
    const waiters = pollers.get(logId) ?? new Set()
    pollers.set(logId, waiters)
    const waker = () => wake?.()
    waiters.add(waker)
    let ended = false
    try {
      while (!follower.stopped && !closed && !ended) {
        const events = await store.read(logId, follower.seq, 500)
        if (events.length > 0) {
          ended = events.some((e) => e.final)
          const upToEnd = ended ? events.slice(0, events.findIndex((e) => e.final) + 1) : events
          deliver(follower, upToEnd)
          continue
        }
        await options.checkProducer?.(logId)
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, pollMs)
          wake = () => {
            clearTimeout(timer)
            resolve()
          }
        })
        wake = undefined
      }
    } catch (err) {
      options.logger?.warn('stored event log: reading failed', { err, logId })
    } finally {
      waiters.delete(waker)
      if (waiters.size === 0) pollers.delete(logId)
    }
  }

  return {
    open,
    async endAbandoned(logId, data) {
      const seq = (await store.lastSeq(logId)) + 1
      await store.append(logId, [{ seq, data, final: true }])
      wakePollers(logId)
    },
    async follow(logId, afterSeq, listener) {
      const follower = newFollower(afterSeq, listener)
      const mine = produced.get(logId)
      if (mine) mine.attach(follower)
      else void poll(logId, follower)
      return stopper(follower, () => wakePollers(logId))
    },
    async close() {
      closed = true
      for (const t of timers) clearTimeout(t)
      timers.clear()
      for (const waiters of pollers.values()) for (const wake of waiters) wake()
    },
  }
}
