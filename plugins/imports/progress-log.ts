/**
 * The progress events of imports: a core stored event log (src/event-log/stored.ts) whose store is the import
 * events table, so they are numbered per import, kept as long as the import is, and any process replays them (a
 * client resumes after `Last-Event-ID`). An import's log ends with its `summary` or its `error`.
 */
import { createStoredEventLog, type EventStore, type StoredEventLog, type StoredProducer } from '../../src/event-log/index.ts'
import type { Logger } from '../../src/log.ts'
import type { ImportStore } from './import-store.ts'

export const TERMINAL_EVENTS = new Set(['summary', 'error'])

export interface ProgressEvent {
  event: string
  data: unknown
}

/** The logged text of a progress event. */
export const progressText = (event: string, data: unknown) => JSON.stringify({ event, data })

/** The import events table as the log's store. */
function importEventStore(store: ImportStore): EventStore {
  return {
    async append(importId, events) {
      for (const e of events) {
        const { event, data } = JSON.parse(e.data) as ProgressEvent
        await store.appendEvent(importId, e.seq, event, data)
      }
    },
    async read(importId, afterSeq, limit) {
      const rows = await store.eventsAfter(importId, afterSeq, limit)
      return rows.map((r) => ({ seq: r.seq, data: progressText(r.event, r.data), final: TERMINAL_EVENTS.has(r.event) }))
    },
    lastSeq: (importId) => store.lastEventSeq(importId),
  }
}

export function createProgressLog(
  store: ImportStore,
  options: { pollMs: number; checkProducer(importId: string): Promise<void>; logger: Logger },
): StoredEventLog {
  return createStoredEventLog({ store: importEventStore(store), ...options })
}

const THROTTLE_MS = 250

/** One import's writer: thins out the frequent events; each emit resolves once the event is stored. */
export class ProgressReporter {
  private readonly lastAt = new Map<string, number>()
  private readonly producer: StoredProducer

  constructor(
    log: StoredEventLog,
    readonly importId: string,
  ) {
    this.producer = log.open(importId)
  }

  async emit(event: string, data: unknown): Promise<void> {
    this.lastAt.set(event, performance.now())
    this.producer.append(progressText(event, data), TERMINAL_EVENTS.has(event))
    await this.producer.written()
  }

  /** Emits at most one `event` per 250 ms, unless `force` (a phase change, a phase's last step). */
  async throttled(event: string, data: unknown, force = false): Promise<void> {
    const last = this.lastAt.get(event)
    if (!force && last !== undefined && performance.now() - last < THROTTLE_MS) return
    await this.emit(event, data)
  }
}
