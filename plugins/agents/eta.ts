/**
 * Progress of a task made of steps: the percentage done and the time left, estimated from the steps left and
 * how long the finished steps took. Before any step has finished there is nothing to go on, so no ETA.
 */

export interface StepClock {
  now(): number
}

export class StepProgress {
  private readonly durations: number[] = []
  private current = -1
  private currentStartedAt = 0
  private reported = 0

  constructor(
    private total: number,
    private readonly clock: StepClock = performance,
  ) {}

  get steps(): number {
    return this.total
  }

  get stepIndex(): number {
    return Math.max(0, this.current)
  }

  /** A plan can add steps once it is known. */
  setTotal(total: number): void {
    this.total = Math.max(total, this.current + 1, 1)
  }

  /** Starts step `index`; the one running before counts as finished. */
  start(index: number): void {
    const now = this.clock.now()
    if (this.current >= 0 && index !== this.current) this.durations.push(now - this.currentStartedAt)
    this.current = index
    this.currentStartedAt = now
    if (index >= this.total) this.total = index + 1
  }

  /** Milliseconds left, or undefined before a step has finished. */
  remainingMs(): number | undefined {
    if (this.durations.length === 0) return undefined
    const mean = this.durations.reduce((sum, d) => sum + d, 0) / this.durations.length
    const inCurrent = this.current >= 0 ? Math.max(0, mean - (this.clock.now() - this.currentStartedAt)) : 0
    const after = Math.max(0, this.total - this.current - 1)
    return inCurrent + after * mean
  }

  /**
   * Whole percent of the steps done; the running step counts by its share of the mean step, at most 90% of it.
   * Never lower than before, even when a plan adds steps.
   */
  percent(): number {
    if (this.current < 0) return 0
    const mean = this.durations.length ? this.durations.reduce((sum, d) => sum + d, 0) / this.durations.length : undefined
    const partial = mean ? Math.min(0.9, (this.clock.now() - this.currentStartedAt) / mean) : 0
    this.reported = Math.max(this.reported, Math.min(99, Math.floor(((this.current + partial) / this.total) * 100)))
    return this.reported
  }

  eta(): string | undefined {
    const ms = this.remainingMs()
    return ms === undefined ? undefined : formatDuration(ms)
  }
}

/** A duration as the protocol writes it: `45s`, `2m`, `1h5m`; rounded up to a whole second. */
export function formatDuration(ms: number): string {
  const seconds = Math.max(1, Math.ceil(ms / 1000))
  if (seconds < 60) return `${seconds}s`
  const minutes = Math.round(seconds / 60)
  if (minutes < 60) return `${minutes}m`
  const hours = Math.floor(minutes / 60)
  const rest = minutes % 60
  return rest ? `${hours}h${rest}m` : `${hours}h`
}
