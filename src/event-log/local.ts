/** The in-process copy of a log: its events in order and the followers waiting at its tip. */
import type { EventListener, LoggedEvent } from './index.ts'

export interface Follower {
  /** The last sequence number delivered. */
  seq: number
  listener: EventListener
  stopped: boolean
  /** Detaches from whatever feeds it now (a local log, then perhaps the shared store). */
  detach?: () => void
}

export class LocalLog {
  readonly events: LoggedEvent[] = []
  readonly followers = new Set<Follower>()
  ended = false

  constructor(
    readonly id: string,
    readonly info: string,
  ) {}

  get lastSeq(): number {
    return this.events.length
  }

  /** Adds events that are now in the shared log (the next sequence numbers, in order) and tells the followers. */
  commit(events: LoggedEvent[]) {
    if (this.ended || events.length === 0) return
    for (const e of events) this.events.push(e)
    if (events.at(-1)!.final) this.ended = true
    for (const f of this.followers) deliver(f, events)
    if (this.ended) this.followers.clear()
  }

  /** Replays what `follower` has not seen, then keeps it at the tip until the end. */
  attach(follower: Follower) {
    if (follower.seq < this.events.length) deliver(follower, this.events.slice(Math.max(0, follower.seq)))
    if (this.ended || follower.stopped) return
    this.followers.add(follower)
    follower.detach = () => this.followers.delete(follower)
  }
}

export function deliver(follower: Follower, events: LoggedEvent[]) {
  if (follower.stopped) return
  const fresh = events[0] && events[0].seq <= follower.seq ? events.filter((e) => e.seq > follower.seq) : events
  if (fresh.length === 0) return
  follower.seq = fresh.at(-1)!.seq
  follower.listener(fresh)
}

export function newFollower(afterSeq: number, listener: EventListener): Follower {
  return { seq: Math.max(0, afterSeq), listener, stopped: false }
}

export function stopper(follower: Follower, onStop?: () => void): () => void {
  return () => {
    if (follower.stopped) return
    follower.stopped = true
    follower.detach?.()
    onStop?.()
  }
}

/** The interruption's events, numbered after `seq`, the last one final. */
export function interruptionEvents(payloads: string[], seq: number): LoggedEvent[] {
  return payloads.map((data, i) => ({ seq: seq + i + 1, data, final: i === payloads.length - 1 }))
}
