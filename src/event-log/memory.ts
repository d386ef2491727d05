/** The event log of a single process: nothing is shared, so every event is in the log by the end of the run that appended it. */
import type { EventLog, EventLogOptions, InterruptionHandler, LoggedEvent, Producer } from './index.ts'
import { LocalLog, interruptionEvents, newFollower, stopper } from './local.ts'

interface MemoryEntry {
  log: LocalLog
  leaseUntil: number
  watchdog?: ReturnType<typeof setInterval>
}

export function createMemoryEventLog(options: EventLogOptions): EventLog {
  const pollMs = options.pollMs ?? 1000
  const entries = new Map<string, MemoryEntry>()
  const timers = new Set<ReturnType<typeof setTimeout>>()
  const handlers: InterruptionHandler[] = []

  function retire(entry: MemoryEntry) {
    clearInterval(entry.watchdog)
    const timer = setTimeout(() => {
      timers.delete(timer)
      if (entries.get(entry.log.id) === entry) entries.delete(entry.log.id)
    }, options.retentionMs)
    timers.add(timer)
  }

  // Followers of a log whose producer stopped renewing its lease end it with the interruption.
  function watch(entry: MemoryEntry) {
    if (entry.watchdog || entry.log.ended || entry.leaseUntil === Infinity) return
    entry.watchdog = setInterval(() => {
      if (entry.log.ended) return clearInterval(entry.watchdog)
      if (entry.log.followers.size === 0 || Date.now() < entry.leaseUntil) return
      clearInterval(entry.watchdog)
      const events = interruptionEvents(options.interruption(entry.log.info), entry.log.lastSeq)
      // Recorded before the followers see the end, as the shared log does.
      void (async () => {
        for (const handler of handlers)
          await Promise.resolve(handler(entry.log.id, entry.log.info, [...entry.log.events, ...events], 'producer_gone')).catch(() => undefined)
        entry.log.commit(events)
        retire(entry)
      })()
    }, pollMs)
    entry.watchdog.unref?.()
  }

  return {
    open(logId, info): Producer {
      const log = new LocalLog(logId, info)
      // One process: the lease only lapses when the producer is abandoned.
      const entry: MemoryEntry = { log, leaseUntil: Infinity }
      entries.set(logId, entry)
      const lost = new AbortController()
      let ended = false
      // What one run of the producer appends reaches the log and its followers together, in a microtask at the
      // end of that run (never a timer): the 50 tokens of one upstream read are one delivery and one SSE write,
      // and a lone token still leaves at once.
      let waiting: LoggedEvent[] = []
      const commitWaiting = () => {
        if (waiting.length === 0) return
        const batch = waiting
        waiting = []
        log.commit(batch)
      }
      const push = (data: string, final: boolean): number => {
        if (ended) throw new Error(`log ${logId} has already ended`)
        if (lost.signal.aborted || log.ended) return log.lastSeq
        const event: LoggedEvent = { seq: log.lastSeq + waiting.length + 1, data, final }
        if (waiting.push(event) === 1) queueMicrotask(commitWaiting)
        return event.seq
      }
      return {
        append: (data) => push(data, false),
        async end(data) {
          if (ended) return
          push(data, true)
          commitWaiting()
          ended = true
          if (log.ended) retire(entry)
        },
        written: async () => {
          commitWaiting()
          if (lost.signal.aborted) throw new Error(`log ${logId} was lost`)
        },
        opened: Promise.resolve(),
        lost: lost.signal,
        abandon() {
          commitWaiting()
          entry.leaseUntil = 0
          lost.abort(new Error('abandoned'))
          watch(entry)
        },
      }
    },
    async info(logId) {
      return entries.get(logId)?.log.info
    },
    async lastSeq(logId) {
      return entries.get(logId)?.log.lastSeq
    },
    async follow(logId, afterSeq, listener) {
      const entry = entries.get(logId)
      if (!entry) return undefined
      const follower = newFollower(afterSeq, listener)
      entry.log.attach(follower)
      watch(entry)
      return stopper(follower)
    },
    onInterrupted(handler) {
      handlers.push(handler)
    },
    async remove(logId) {
      const entry = entries.get(logId)
      if (entry) clearInterval(entry.watchdog)
      entries.delete(logId)
    },
    async close() {
      for (const t of timers) clearTimeout(t)
      timers.clear()
      for (const entry of entries.values()) clearInterval(entry.watchdog)
    },
  }
}
