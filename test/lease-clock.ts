import type { LeaseClock } from '../src/refresh-lease.ts'

/**
 * The refresh-lease clock two service instances of a test share: the test moves it forward to make a lease lapse,
 * and learns when an instance waits for a lease it does not hold.
 */
export function steerableLeaseClock() {
  let offset = 0
  let waited = Promise.withResolvers<void>()
  return {
    now: () => Date.now() + offset,
    async wait() {
      waited.resolve()
      await Bun.sleep(5)
    },
    advance: (ms: number) => {
      offset += ms
    },
    reset() {
      offset = 0
      waited = Promise.withResolvers<void>()
    },
    /** Resolves once an instance has waited for a lease it does not hold. */
    waited: () => waited.promise,
  } satisfies LeaseClock & Record<string, unknown>
}
