/** In-process rate limiter: one process's budget only, for development and single-instance deployments. */
import { decide, prepareChecks, type RateCheck, type RateDecision, type RateLimiter } from './index.ts'

export interface MemoryRateLimiterOptions {
  /** Clock in milliseconds; tests inject one to move time without waiting. */
  now?: () => number
  /** How often (by that clock) a check also drops buckets that are full again. Default 10 s. */
  sweepIntervalMs?: number
}

export interface MemoryRateLimiter extends RateLimiter {
  /** Buckets currently held. */
  readonly size: number
}

export function createMemoryRateLimiter(options: MemoryRateLimiterOptions = {}): MemoryRateLimiter {
  const now = options.now ?? Date.now
  const sweepIntervalMs = options.sweepIntervalMs ?? 10_000
  // bucket -> theoretical arrival time in microseconds; a bucket whose TAT has passed is full, same as absent.
  const tats = new Map<string, number>()
  let lastSweepMs = now()

  // Piggybacks on checks instead of a timer, so an idle limiter costs nothing and keeps no process alive.
  const sweep = (nowMs: number) => {
    if (nowMs - lastSweepMs < sweepIntervalMs) return
    lastSweepMs = nowMs
    const nowUs = nowMs * 1000
    for (const [bucket, tat] of tats) if (tat <= nowUs) tats.delete(bucket)
  }

  const stored = (bucket: string) => tats.get(bucket)
  const decideNow = (entries: RateCheck[]): RateDecision => {
    const prepared = prepareChecks(entries)
    const nowMs = now()
    sweep(nowMs)
    const nowUs = Math.round(nowMs * 1000)
    const { decision, tats: after } = decide(nowUs, prepared, stored)
    if (decision.allowed) for (const [bucket, tat] of after) if (tat > nowUs) tats.set(bucket, tat)
    return decision
  }

  return {
    async check(entries) {
      return decideNow(entries)
    },
    decideNow,
    async close() {
      tats.clear()
    },
    get size() {
      return tats.size
    },
  }
}
