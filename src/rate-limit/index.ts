/**
 * Rate limits for the access layer, as GCRA (generic cell rate algorithm).
 *
 * - A policy `{ limit, windowSeconds }` allows `limit` requests per `windowSeconds` with a burst of `limit`:
 *   from a fresh state exactly `limit` requests pass at once, then capacity returns at one request every
 *   `windowSeconds / limit` seconds. Each bucket stores only its theoretical arrival time (TAT).
 * - A bucket is the pair (policy name, key), so one key (`user:42`) can sit under several policies.
 * - `check` is all-or-nothing: when any entry would be refused, no entry consumes anything. Entries naming
 *   the same bucket twice add up.
 * - `remaining` and `resetSeconds` describe each bucket after the decision; when refused, `refusedBy` and
 *   `retryAfterSeconds` name the entry that waits longest, rounded up to whole seconds.
 * - Arithmetic is in integer microseconds, so the Redis script and this module reach identical decisions
 *   (fractional emission intervals would round differently at each addition).
 */

export type StoreFailurePolicy = 'open' | 'closed'

export interface RatePolicy {
  /** Reported in the RateLimit headers, so limited to [a-z0-9_-]. */
  name: string
  limit: number
  windowSeconds: number
  /** What a check involving this policy does when the shared store fails; overrides the limiter's default. */
  onStoreError?: StoreFailurePolicy
}

export interface RateCheck {
  key: string
  policy: RatePolicy
  /** Units consumed; default 1. */
  cost?: number
}

export interface RateResult {
  policy: RatePolicy
  remaining: number
  resetSeconds: number
}

export interface RateDecision {
  allowed: boolean
  /** Empty when `degraded`: the store could not say. */
  results: RateResult[]
  retryAfterSeconds?: number
  refusedBy?: string
  /** The store was unreachable and the check failed open. */
  degraded?: boolean
}

export interface RateLimiter {
  check(entries: RateCheck[]): Promise<RateDecision>
  /** The same decision without waiting, from limiters that keep their buckets in this process. */
  decideNow?(entries: RateCheck[]): RateDecision
  close(): Promise<void>
}

const POLICY_NAME = /^[a-z0-9_-]+$/

// Policies validated and frozen by definePolicy: a check naming one skips validating it again.
const definedPolicies = new WeakSet<RatePolicy>()

/** Validates a policy once, where it is declared, so a typo fails at start-up rather than per request. */
export function definePolicy(policy: RatePolicy): Readonly<RatePolicy> {
  assertPolicy(policy)
  const defined = Object.freeze({ ...policy })
  definedPolicies.add(defined)
  return defined
}

function assertPolicy(policy: RatePolicy): void {
  if (!POLICY_NAME.test(policy.name)) throw new TypeError(`rate policy name ${JSON.stringify(policy.name)} must match [a-z0-9_-]+`)
  // Both appear as sf-integers (q, w) in RateLimit-Policy.
  if (!Number.isSafeInteger(policy.limit) || policy.limit < 1) throw new RangeError(`rate policy ${policy.name}: limit must be a positive integer`)
  if (!Number.isSafeInteger(policy.windowSeconds) || policy.windowSeconds < 1)
    throw new RangeError(`rate policy ${policy.name}: windowSeconds must be a positive integer`)
}

/** One entry ready for the stores: its bucket and integer GCRA parameters. */
export interface PreparedCheck {
  check: RateCheck
  bucket: string
  cost: number
  /** Microseconds between two requests at the sustained rate. */
  intervalUs: number
  /** How far ahead of now a bucket's TAT may run: `limit` intervals. */
  capacityUs: number
}

export function prepareChecks(entries: RateCheck[]): PreparedCheck[] {
  if (entries.length === 0) throw new RangeError('a rate check needs at least one entry')
  return entries.map((check) => {
    if (!definedPolicies.has(check.policy)) assertPolicy(check.policy)
    const cost = check.cost ?? 1
    // A cost above the limit could never pass, so no Retry-After would be true.
    if (!Number.isSafeInteger(cost) || cost < 0 || cost > check.policy.limit)
      throw new RangeError(`rate check cost ${cost} must be an integer between 0 and ${check.policy.limit} (${check.policy.name})`)
    // Rounded down: rounding up would stretch `limit` intervals past the window, and a bucket left alone
    // for a whole window would come back one request short.
    const intervalUs = Math.max(1, Math.floor((check.policy.windowSeconds * 1e6) / check.policy.limit))
    return { check, bucket: `${check.policy.name}:${check.key}`, cost, intervalUs, capacityUs: intervalUs * check.policy.limit }
  })
}

/**
 * The GCRA decision over stored TATs (absent for an unknown bucket). `tats` holds each bucket's TAT after
 * the decision, written back only when allowed. The Redis script repeats exactly this arithmetic.
 */
export function decide(
  nowUs: number,
  prepared: PreparedCheck[],
  stored: (bucket: string) => number | undefined,
): { decision: RateDecision; tats: Map<string, number> } {
  // Most routes spend only the burst ceiling: one entry needs none of the passes for buckets shared by entries.
  if (prepared.length === 1) return decideOne(nowUs, prepared[0]!, stored(prepared[0]!.bucket))
  return decideAll(nowUs, prepared, stored)
}

/** `decide` for any number of entries, some of which may share a bucket. */
export function decideAll(
  nowUs: number,
  prepared: PreparedCheck[],
  stored: (bucket: string) => number | undefined,
): { decision: RateDecision; tats: Map<string, number> } {
  const tats = new Map<string, number>()
  let longestWaitUs = 0
  let refusedBy: string | undefined
  for (const entry of prepared) {
    const tat = tats.get(entry.bucket) ?? Math.max(stored(entry.bucket) ?? nowUs, nowUs)
    const next = tat + entry.cost * entry.intervalUs
    const waitUs = next - nowUs - entry.capacityUs
    if (waitUs > 0) {
      if (waitUs > longestWaitUs) [longestWaitUs, refusedBy] = [waitUs, entry.check.policy.name]
      tats.set(entry.bucket, tat)
    } else tats.set(entry.bucket, next)
  }
  const allowed = refusedBy === undefined
  if (!allowed) for (const entry of prepared) tats.set(entry.bucket, Math.max(stored(entry.bucket) ?? nowUs, nowUs))
  const results = prepared.map((entry) => resultOf(entry, tats.get(entry.bucket)!, nowUs))
  const decision: RateDecision = allowed ? { allowed, results } : { allowed, results, retryAfterSeconds: Math.ceil(longestWaitUs / 1e6), refusedBy }
  return { decision, tats }
}

/** What a bucket's TAT after the decision tells the caller about that entry's policy. */
function resultOf(entry: PreparedCheck, tatUs: number, nowUs: number): RateResult {
  const aheadUs = tatUs - nowUs
  return {
    policy: entry.check.policy,
    // Clamped because a TAT stored under a since-lowered limit can run past the new capacity.
    remaining: Math.max(0, Math.floor((entry.capacityUs - aheadUs) / entry.intervalUs)),
    resetSeconds: Math.ceil(aheadUs / 1e6),
  }
}

/** One entry: the same arithmetic as decideAll, without its map and passes. */
function decideOne(nowUs: number, entry: PreparedCheck, storedTat: number | undefined): { decision: RateDecision; tats: Map<string, number> } {
  const tat = Math.max(storedTat ?? nowUs, nowUs)
  const next = tat + entry.cost * entry.intervalUs
  const waitUs = next - nowUs - entry.capacityUs
  const allowed = waitUs <= 0
  const after = allowed ? next : tat
  const results = [resultOf(entry, after, nowUs)]
  const decision: RateDecision = allowed
    ? { allowed, results }
    : { allowed, results, retryAfterSeconds: Math.ceil(waitUs / 1e6), refusedBy: entry.check.policy.name }
  return { decision, tats: new Map([[entry.bucket, after]]) }
}

// The same few policy sets recur on every request; their header text is built once per set.
const policyHeaders = new Map<string, string>()

// A single policy defined once (frozen) cannot change, so its header is kept on the policy itself.
const singlePolicyHeaders = new WeakMap<RatePolicy, string>()

function policyHeader(results: RateResult[]): string {
  if (results.length === 1 && definedPolicies.has(results[0]!.policy)) {
    const policy = results[0]!.policy
    let header = singlePolicyHeaders.get(policy)
    if (header === undefined) singlePolicyHeaders.set(policy, (header = `"${policy.name}";q=${policy.limit};w=${policy.windowSeconds}`))
    return header
  }
  let key = ''
  for (const r of results) key += `${r.policy.name}/${r.policy.limit}/${r.policy.windowSeconds};`
  let header = policyHeaders.get(key)
  if (header === undefined) {
    const policies = new Map(results.map((r) => [r.policy.name, r.policy]))
    header = [...policies.values()].map((p) => `"${p.name}";q=${p.limit};w=${p.windowSeconds}`).join(', ')
    if (policyHeaders.size < 1000) policyHeaders.set(key, header)
  }
  return header
}

/**
 * Headers of draft-ietf-httpapi-ratelimit-headers: every policy in RateLimit-Policy, and in RateLimit the
 * one closest to refusing. Lower-case names, like the rest of the service's headers.
 */
export function rateLimitHeaders(decision: RateDecision): Record<string, string> {
  if (decision.results.length === 0) return {}
  const closest =
    decision.results.length === 1
      ? decision.results[0]!
      : decision.results.reduce((a, b) => {
          if (b.policy.name === decision.refusedBy && a.policy.name !== decision.refusedBy) return b
          if (a.policy.name === decision.refusedBy) return a
          if (b.remaining !== a.remaining) return b.remaining < a.remaining ? b : a
          return b.resetSeconds > a.resetSeconds ? b : a
        })
  const headers: Record<string, string> = {
    'ratelimit-policy': policyHeader(decision.results),
    ratelimit: `"${closest.policy.name}";r=${closest.remaining};t=${closest.resetSeconds}`,
  }
  if (!decision.allowed && decision.retryAfterSeconds !== undefined) headers['retry-after'] = String(decision.retryAfterSeconds)
  return headers
}
