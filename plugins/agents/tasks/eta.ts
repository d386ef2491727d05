/**
 * Progress of a task made of steps: the percentage done and the time left, estimated from the steps left and
 * how long the finished steps took. Before any step has finished there is nothing to go on, so no ETA. A command
 * whose number of steps is not known ahead (the develop loop) reports a total from its own history (StepPace and
 * loopStepsAhead below), never from its budget, so a short task reports a short ETA.
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

/**
 * How many more steps a loop of unknown length (a model calling tools until it is done) is expected to take,
 * judged from its own history rather than its budget: half as many again as it has made, at least 2, never
 * more than the budget leaves. A loop that has made 4 steps is expected to make 2 more, not to use up 50.
 */
export const LOOP_OUTLOOK = { share: 0.5, min: 2 } as const

export function loopStepsAhead(done: number, budgetLeft: number): number {
  return Math.max(0, Math.min(budgetLeft, Math.max(LOOP_OUTLOOK.min, Math.ceil(done * LOOP_OUTLOOK.share))))
}

/** Virtual steps a total may hold beyond the current one, so a tiny mean step cannot make it absurd. */
const MAX_STEPS_AHEAD = 1000

/**
 * The pace of a task's steps as the task itself sees it, for commands whose work ahead is better known in time
 * than in steps (a check that took 40 s last time is one step, but a long one). StepProgress, which reports the
 * ETA, knows only steps: the ETA it reports is the mean finished step times the steps after the current one.
 * `totalFor` turns the time a command expects after the current step into the total that makes that ETA come out,
 * measuring the same steps (a step starts when the command reports it) with the same clock.
 */
export class StepPace {
  private readonly durations: number[] = []
  private startedAt: number | undefined

  constructor(private readonly clock: StepClock = performance) {}

  /** A step starts now; the one before, if any, ends. */
  start(): void {
    const now = this.clock.now()
    if (this.startedAt !== undefined) this.durations.push(now - this.startedAt)
    this.startedAt = now
  }

  /** Mean milliseconds of the finished steps; undefined before one has finished. */
  meanMs(): number | undefined {
    return this.durations.length ? this.durations.reduce((sum, d) => sum + d, 0) / this.durations.length : undefined
  }

  /**
   * The median step: what one more model step is expected to take. A long command run once (a test suite) does
   * not make every step ahead as long, as the mean would.
   */
  typicalMs(): number | undefined {
    if (this.durations.length === 0) return undefined
    const sorted = [...this.durations].sort((a, b) => a - b)
    const middle = Math.floor(sorted.length / 2)
    return sorted.length % 2 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2
  }

  /**
   * The total number of steps to report with step `index` when the work after it is expected to take `msAfter`
   * milliseconds; before any step has finished there is no mean, so `stepsAfter` steps are counted instead.
   */
  totalFor(index: number, msAfter: number | undefined, stepsAfter: number): number {
    const mean = this.meanMs()
    const ahead = mean && msAfter !== undefined ? Math.round(msAfter / mean) : stepsAfter
    return index + 1 + Math.max(0, Math.min(MAX_STEPS_AHEAD, ahead))
  }
}
