/**
 * The repeat guard of the develop loop: a model that makes the same call (same tool, same arguments) over and over
 * is stuck, since the answer will not change. The third such call in a row gets a warning appended to its answer;
 * the fifth is not run and ends the loop as `stuck`, a budget-like stop: the task still succeeds with what it has.
 */

/** The call in a row that gets a warning, and the one that ends the loop. */
export const REPEAT_WARN_AT = 3
export const REPEAT_STOP_AT = 5

/** Arguments as canonical JSON (keys sorted), so `{a, b}` and `{b, a}` are the same call; unparseable text as it is. */
function canonical(argumentsText: string): string {
  const sort = (value: unknown): unknown =>
    Array.isArray(value)
      ? value.map(sort)
      : value && typeof value === 'object'
        ? Object.fromEntries(
            Object.entries(value as Record<string, unknown>)
              .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
              .map(([k, v]) => [k, sort(v)]),
          )
        : value
  try {
    return JSON.stringify(sort(JSON.parse(argumentsText || '{}')))
  } catch {
    return argumentsText.trim()
  }
}

const ordinal = (n: number) =>
  `${n}${n % 10 === 1 && n % 100 !== 11 ? 'st' : n % 10 === 2 && n % 100 !== 12 ? 'nd' : n % 10 === 3 && n % 100 !== 13 ? 'rd' : 'th'}`

export class RepeatGuard {
  private last: string | undefined
  private times = 0

  /** Counts a call; answers how many times in a row this exact call has now come (1 for a new one). */
  see(name: string, argumentsText: string): number {
    const key = `${name}\u0000${canonical(argumentsText)}`
    this.times = key === this.last ? this.times + 1 : 1
    this.last = key
    return this.times
  }
}

/** Appended to the answer of a repeated call from REPEAT_WARN_AT on. */
export const repeatWarning = (name: string, times: number) =>
  `\n\n[Warning: this is the ${ordinal(times)} ${name} call in a row with exactly these arguments, and its answer does not change. ` +
  `Do something else (other arguments, another tool, or finish); at ${REPEAT_STOP_AT} in a row the task stops as stuck.]`

/** The answer to the call that ends the loop, which is not run. */
export const stuckAnswer = (name: string) =>
  `Not run: this is the ${ordinal(REPEAT_STOP_AT)} ${name} call in a row with exactly these arguments; the task stops here as stuck.`
