/**
 * The progress events of imports: numbered per import, stored in order (so any process can replay them and a
 * client can resume after `Last-Event-ID`), with in-process wake-ups for the followers of a running import.
 */
import type { ImportStore } from './import-store.ts'

export class ProgressLog {
  private readonly waiters = new Map<string, Set<() => void>>()

  constructor(private readonly store: ImportStore) {}

  async append(importId: string, seq: number, event: string, data: unknown): Promise<void> {
    await this.store.appendEvent(importId, seq, event, data)
    for (const wake of this.waiters.get(importId) ?? []) wake()
  }

  /** Resolves at the next event of `importId` appended in this process, after `timeoutMs`, or on abort. */
  wait(importId: string, timeoutMs: number, signal?: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      let set = this.waiters.get(importId)
      if (!set) this.waiters.set(importId, (set = new Set()))
      const done = () => {
        clearTimeout(timer)
        signal?.removeEventListener('abort', done)
        set.delete(done)
        if (set.size === 0) this.waiters.delete(importId)
        resolve()
      }
      const timer = setTimeout(done, timeoutMs)
      signal?.addEventListener('abort', done, { once: true })
      set.add(done)
    })
  }
}

const THROTTLE_MS = 250

/** One import's writer: numbers its events and thins out the frequent ones. */
export class ProgressReporter {
  private readonly lastAt = new Map<string, number>()

  constructor(
    private readonly log: ProgressLog,
    readonly importId: string,
    private seq = 0,
  ) {}

  async emit(event: string, data: unknown): Promise<void> {
    this.lastAt.set(event, performance.now())
    await this.log.append(this.importId, ++this.seq, event, data)
  }

  /** Emits at most one `event` per 250 ms, unless `force` (a phase change, a phase's last step). */
  async throttled(event: string, data: unknown, force = false): Promise<void> {
    const last = this.lastAt.get(event)
    if (!force && last !== undefined && performance.now() - last < THROTTLE_MS) return
    await this.emit(event, data)
  }
}
