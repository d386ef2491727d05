/**
 * Spending a single-use refresh token once, however many callers and processes need it at the same moment.
 * Callers in one process share one promise per key; across processes the right to refresh is a lease on the
 * stored row, claimed by compare-and-set on the row's version (the store's `lease` step): one process wins and
 * spends the refresh token, the others wait for the lease to end and read the tokens it stored.
 */

/** Longer than a token endpoint's timeout: a lease outliving its holder's call is never taken over mid-call. */
export const REFRESH_LEASE_MS = 30_000
/** The lease for token requests that may take up to `timeoutMs`: a margin beyond it, never under REFRESH_LEASE_MS. */
export const leaseLongerThan = (timeoutMs: number) => Math.max(REFRESH_LEASE_MS, timeoutMs + 10_000)
const LEASE_POLL_MS = 50

/** What a lease is judged by: the wall clock every process shares, and how to wait for another holder. */
export interface LeaseClock {
  now(): number
  /** One pause before reading the row again while another process holds the lease. */
  wait(): Promise<void>
}

export const wallClock: LeaseClock = { now: Date.now, wait: () => Bun.sleep(LEASE_POLL_MS) }

/** A stored row that carries a refresh lease: `version` changes on every token change. */
export interface LeasedRow {
  version: number
  refreshLeaseUntil: number | null
}

/** Returned by `settle` when the row needs its refresh token spent. */
export const SPEND = Symbol('spend the refresh token')

export interface RefreshSteps<Row extends LeasedRow, Result> {
  /** The row as stored now; undefined when there is nothing left to refresh (deleted, broken). */
  read(): Promise<Row | undefined>
  /** With no lease held: the answer without a refresh (not needed, or not possible), or SPEND. */
  settle(row: Row): Promise<Result | undefined | typeof SPEND>
  /** Claims the lease for the version read, until `until`; the leased version, or undefined when another won. */
  lease(row: Row, until: number, now: number): Promise<number | undefined>
  /** Spends the refresh token under the lease of `leased`; `retry` when the row changed meanwhile: read again. */
  spend(row: Row, leased: number): Promise<{ result?: Result; retry?: boolean }>
  /** The error when another holder's lease outlasts twice its length (its process hangs or died holding it). */
  stillHeld(): Error
}

/** Reads, and refreshes under a lease, or waits for another process's lease to end, until there is an answer. */
export async function refreshUnderLease<Row extends LeasedRow, Result>(
  steps: RefreshSteps<Row, Result>,
  clock: LeaseClock = wallClock,
  leaseMs = REFRESH_LEASE_MS,
): Promise<Result | undefined> {
  const giveUpAt = clock.now() + 2 * leaseMs
  for (;;) {
    const row = await steps.read()
    if (!row) return undefined
    if (!isLeased(row, clock)) {
      const settled = await steps.settle(row)
      if (settled !== SPEND) return settled
      const leased = await steps.lease(row, clock.now() + leaseMs, clock.now())
      if (leased !== undefined) {
        const outcome = await steps.spend(row, leased)
        if (!outcome.retry) return outcome.result
      }
      continue
    }
    if (clock.now() > giveUpAt) throw steps.stillHeld()
    await clock.wait()
  }
}

export const isLeased = (row: LeasedRow, clock: LeaseClock = wallClock) => row.refreshLeaseUntil !== null && row.refreshLeaseUntil >= clock.now()

/** One promise per key while it runs: concurrent callers in this process share one refresh. */
export function sharedFlights<Result>() {
  const inFlight = new Map<string, Promise<Result>>()
  return (key: string, work: () => Promise<Result>): Promise<Result> => {
    let flight = inFlight.get(key)
    if (!flight) {
      flight = work().finally(() => inFlight.delete(key))
      inFlight.set(key, flight)
    }
    return flight
  }
}

/**
 * Token endpoint errors (RFC 6749 5.2) that refuse the grant itself: the refresh token is dead (invalid_grant, or
 * GitHub's bad_refresh_token) or the client may not use it (invalid_client, unauthorized_client). Anything else
 * (server_error, temporarily_unavailable, invalid_request, a 5xx or 429, an answer that is no OAuth error) says
 * nothing about the token, which stays for the next try.
 */
const GRANT_REFUSALS = new Set(['invalid_grant', 'bad_refresh_token', 'invalid_client', 'unauthorized_client'])

/** Whether a token endpoint's answer (`status`, OAuth `error`) refuses the grant; only then may a connection go. */
export const refusesGrant = (error: string | undefined, status: number | undefined) =>
  status !== undefined && status < 500 && status !== 429 && error !== undefined && GRANT_REFUSALS.has(error)

/** The AppError code of a refresh that failed without a refusal: both say "try again". */
export const retryableRefreshCode = (error: string | undefined, status: number | undefined): 'unavailable' | 'upstream_error' =>
  status === 429 || status === 503 || error === 'temporarily_unavailable' ? 'unavailable' : 'upstream_error'

/**
 * Whether `row` was read with a lapsed lease, so its spender took over from a holder that may still be waiting for
 * the authorization server: a refusal then may only mean that holder's call was honoured, and its tokens are on
 * their way to the row. Such a refusal keeps the connection; the next refresh, with no lease to take over, decides.
 */
export const tookOverLapsedLease = (row: LeasedRow) => row.refreshLeaseUntil !== null
