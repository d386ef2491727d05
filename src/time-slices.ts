/**
 * Long work on the event loop cut into slices, so requests and I/O run in between. setImmediate, not
 * setTimeout(0): a timer waits a millisecond at least, which over many slices costs the work a fifth of its time.
 */
export const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve))

/**
 * `giveWay()` yields to the event loop once the current slice has run `sliceMs`, and otherwise returns at once;
 * `onYield` runs before each yield (progress, an abort check).
 */
export function timeSlices(sliceMs: number, onYield?: () => void | Promise<void>): () => Promise<void> {
  let sliceStart = performance.now()
  return async () => {
    if (performance.now() - sliceStart < sliceMs) return
    await onYield?.()
    await nextTurn()
    sliceStart = performance.now()
  }
}

/** Counts work under way, so other work can wait until none is: `finished` settles when the count is back to 0. */
export class InProgress {
  private count = 0
  private idle = Promise.withResolvers<void>()

  started(): void {
    if (this.count++ === 0) this.idle = Promise.withResolvers<void>()
  }

  ended(): void {
    if (--this.count === 0) this.idle.resolve()
  }

  /** Undefined when nothing is under way; otherwise settles when it has ended, or after `atMostMs`. */
  finished(atMostMs: number): Promise<void> | undefined {
    if (this.count === 0) return undefined
    let timer: Timer | undefined
    return Promise.race([this.idle.promise, new Promise<void>((resolve) => (timer = setTimeout(resolve, atMostMs)))]).finally(() => clearTimeout(timer))
  }
}
