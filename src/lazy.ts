/**
 * Something loaded on first use and kept: a large module (`lazily(() => import('stripe'))`) that start-up should
 * not pay for when the first requests do not need it. A failed load is not kept, so the next call tries again.
 */
export interface Lazy<T> {
  (): Promise<T>
  /** The value once a load has succeeded, without starting one. */
  readonly loaded: T | undefined
}

export function lazily<T>(load: () => Promise<T>): Lazy<T> {
  let pending: Promise<T> | undefined
  let value: T | undefined
  const get = () =>
    (pending ??= load().then(
      (loaded) => (value = loaded),
      (error: unknown) => {
        pending = undefined
        throw error
      },
    ))
  return Object.defineProperty(get, 'loaded', { get: () => value }) as Lazy<T>
}
