/**
 * One resumable event log, for everything that streams to clients who may reconnect elsewhere: chat answers,
 * agent tasks, import progress. A log is a sequence of events (strings the domain frames), numbered from 1,
 * written by one producer and ended by a final event; followers replay from any sequence number, then get live
 * events, in order, until the end. It is kept for the retention time after its end.
 *
 * The producer holds a lease. A follower that finds the lease gone before the end appends the interruption
 * (events the domain supplies, the last of them final) and the end, atomically, so only one is ever written.
 * A follower never receives an event that is not yet in the shared log, so after a producer dies every
 * follower, wherever it runs, ends with the whole answer or the same explicit interruption.
 */
export interface LoggedEvent {
  seq: number
  data: string
  /** Set on the last event of the log. */
  final: boolean
}

/** Receives events in order, in batches; after the batch holding the final event it is never called again. */
export type EventListener = (events: LoggedEvent[]) => void

export interface Producer {
  /** Appends an event; answers its sequence number. Throws once the producer has ended the log. */
  append(data: string): number
  /** Appends the final event and resolves once the log is complete in the shared store (never rejects). */
  end(data: string): Promise<void>
  /** Resolves once every event appended so far is in the shared log; rejects if it never will be. */
  written(): Promise<void>
  /** Resolves once the log exists in the shared store (its lease and info written); rejects within the store's deadline. */
  readonly opened: Promise<void>
  /** Aborted when the producer lost its log: its events could not be stored in time, or a follower ended it. */
  readonly lost: AbortSignal
  /** Stops without ending the log, as a process that dies would: the lease lapses and a follower interrupts the log. */
  abandon(): void
}

export interface EventLog {
  /** Starts a log with `info` (domain details readable by any process while the log exists). */
  open(logId: string, info: string): Producer
  info(logId: string): Promise<string | undefined>
  /** The last sequence number written, or undefined when the log is unknown or expired. */
  lastSeq(logId: string): Promise<number | undefined>
  /**
   * Delivers the events after `afterSeq` (the replay, synchronously when this process holds them), then each
   * new one, until the end or until the returned function is called. Undefined when the log is unknown.
   */
  follow(logId: string, afterSeq: number, listener: EventListener): Promise<(() => void) | undefined>
  /**
   * Calls `handler` with a log's info and all its events in each process that reads the log's interruption (the
   * one that wrote it first), before its followers there see the end; and in a producing process that ends its
   * log by itself because the shared store is unreachable or lost the log (`cause` says which). What it records
   * must be idempotent.
   */
  onInterrupted(handler: InterruptionHandler): void
  /**
   * Deletes the log and its info from the store now, rather than at the end of its retention (an account's
   * deletion). Its followers here get nothing more; a producer still writing it should be stopped first.
   */
  remove(logId: string): Promise<void>
  /** Stops this instance: producers stop without ending their logs, followers get nothing more. */
  close(): Promise<void>
}

/**
 * `producer_gone`: the producer stopped renewing its lease (its process died) and a follower ended the log.
 * `unreachable`: the shared store could not be written or read in time, or lost the log; the process holding the
 * producer or follower ended it by itself, so its clients are not left waiting.
 */
export type InterruptionCause = 'producer_gone' | 'unreachable'

export type InterruptionHandler = (logId: string, info: string, events: LoggedEvent[], cause: InterruptionCause) => Promise<void> | void

export interface EventLogOptions {
  /** The events ending a log whose producer is gone, built from its info; the last one is final. */
  interruption: (info: string) => string[]
  /**
   * The events a process ends a log with by itself when the shared store cannot be reached for a lease's time, or
   * lost the log; the last one is final. Default: `interruption`.
   */
  unavailable?: (info: string) => string[]
  /** How long a log is kept after its end. */
  retentionMs: number
  /** Longest a log may run; bounds how long a running log's keys live. */
  maxLifeMs: number
  /** How long the producer's lease lives without renewal (renewed every third of it). Default 6000 ms. */
  leaseMs?: number
  /** How often an idle follower checks the lease. Default 1000 ms. */
  pollMs?: number
}

/** Follows a log as an async iterable of event batches, ending at the final event or on abort. */
export function followEvents(log: Pick<EventLog, 'follow'>, logId: string, afterSeq: number, signal: AbortSignal): AsyncGenerator<LoggedEvent[]> {
  return followMapped(log, logId, afterSeq, signal, (batch) => batch)
}

/**
 * The same, each batch as `map` makes it (the SSE text of its events, say): one generator, not a generator
 * over followEvents, so a batch reaches the client a few promise turns sooner.
 */
export async function* followMapped<T>(
  log: Pick<EventLog, 'follow'>,
  logId: string,
  afterSeq: number,
  signal: AbortSignal,
  map: (batch: LoggedEvent[]) => T,
): AsyncGenerator<T> {
  const queue: LoggedEvent[][] = []
  let wake: (() => void) | undefined
  let ended = false
  const stop = await log.follow(logId, afterSeq, (events) => {
    queue.push(events)
    if (events.at(-1)?.final) ended = true
    wake?.()
  })
  if (!stop) return
  const onAbort = () => wake?.()
  signal.addEventListener('abort', onAbort, { once: true })
  try {
    while (!signal.aborted) {
      if (queue.length > 0) {
        const batch = queue.length === 1 ? queue.pop()! : queue.splice(0).flat()
        yield map(batch)
        if (batch.at(-1)?.final) return
        continue
      }
      if (ended) return
      await new Promise<void>((resolve) => (wake = resolve))
      wake = undefined
    }
  } finally {
    signal.removeEventListener('abort', onAbort)
    stop()
  }
}

export { createMemoryEventLog } from './memory.ts'
export { createRedisEventLog, type RedisEventLogOptions } from './redis.ts'
export { createCancelChannel, type CancelChannel } from './cancel.ts'
export { createStoredEventLog, type EventStore, type StoredEventLog, type StoredProducer } from './stored.ts'
