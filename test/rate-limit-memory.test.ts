import { describe, expect, test } from 'bun:test'
import { decide, decideAll, definePolicy, prepareChecks, rateLimitHeaders, type RateCheck } from '../src/rate-limit/index.ts'
import { createMemoryRateLimiter } from '../src/rate-limit/memory.ts'

const chat = definePolicy({ name: 'chat', limit: 100, windowSeconds: 60 })

function clockedLimiter() {
  const clock = { ms: 1_700_000_000_000 }
  const limiter = createMemoryRateLimiter({ now: () => clock.ms })
  return { clock, limiter }
}

async function countAllowed(limiter: { check(e: RateCheck[]): Promise<{ allowed: boolean }> }, n: number, entries: RateCheck[]) {
  const decisions = await Promise.all(Array.from({ length: n }, () => limiter.check(entries)))
  return decisions.filter((d) => d.allowed).length
}

describe('memory rate limiter', () => {
  test('exactly limit of many concurrent checks pass, then one more per emission interval', async () => {
    const { clock, limiter } = clockedLimiter()
    expect(await countAllowed(limiter, 250, [{ key: 'u1', policy: chat }])).toBe(100)
    clock.ms += (60 * 1000) / 100
    expect(await countAllowed(limiter, 5, [{ key: 'u1', policy: chat }])).toBe(1)
  })

  test('a limit that does not divide the window evenly still allows exactly limit', async () => {
    const { clock, limiter } = clockedLimiter()
    const odd = definePolicy({ name: 'odd', limit: 7, windowSeconds: 60 })
    expect(await countAllowed(limiter, 20, [{ key: 'u1', policy: odd }])).toBe(7)
    clock.ms += 60_000
    expect(await countAllowed(limiter, 20, [{ key: 'u1', policy: odd }])).toBe(7)
  })

  test('remaining and reset count down from a fresh bucket', async () => {
    const { limiter } = clockedLimiter()
    const first = await limiter.check([{ key: 'u1', policy: chat }])
    expect(first.results).toEqual([{ policy: chat, remaining: 99, resetSeconds: 1 }])
    const heavy = await limiter.check([{ key: 'u1', policy: chat, cost: 49 }])
    expect(heavy.results[0]).toMatchObject({ remaining: 50, resetSeconds: 30 })
  })

  test('retry-after says when the refused request would pass', async () => {
    const { clock, limiter } = clockedLimiter()
    const slow = definePolicy({ name: 'slow', limit: 2, windowSeconds: 60 })
    const entries = [{ key: 'u1', policy: slow }]
    expect(await countAllowed(limiter, 2, entries)).toBe(2)
    const refused = await limiter.check(entries)
    expect(refused).toMatchObject({ allowed: false, refusedBy: 'slow', retryAfterSeconds: 30 })
    clock.ms += 29_500
    expect(await limiter.check(entries)).toMatchObject({ allowed: false, retryAfterSeconds: 1 })
    clock.ms += 500
    expect((await limiter.check(entries)).allowed).toBe(true)
  })

  test('a refusal by one policy consumes nothing in the others', async () => {
    const { limiter } = clockedLimiter()
    const burst = definePolicy({ name: 'burst', limit: 5, windowSeconds: 60 })
    const tight = definePolicy({ name: 'tight', limit: 3, windowSeconds: 60 })
    const both = [
      { key: 'u1', policy: burst },
      { key: 'u1', policy: tight },
    ]
    expect(await countAllowed(limiter, 10, both)).toBe(3)
    const refused = await limiter.check(both)
    expect(refused).toMatchObject({ allowed: false, refusedBy: 'tight' })
    expect(refused.results.map((r) => r.remaining)).toEqual([2, 0])
    // Seven refused pairs must have left burst at exactly 5 - 3.
    expect(await countAllowed(limiter, 10, [{ key: 'u1', policy: burst }])).toBe(2)
  })

  test('the same key under two policies is two budgets, and keys do not share one', async () => {
    const { limiter } = clockedLimiter()
    const other = definePolicy({ name: 'other', limit: 100, windowSeconds: 60 })
    expect(await countAllowed(limiter, 150, [{ key: 'u1', policy: chat }])).toBe(100)
    expect(await countAllowed(limiter, 150, [{ key: 'u2', policy: chat }])).toBe(100)
    expect(await countAllowed(limiter, 150, [{ key: 'u1', policy: other }])).toBe(100)
  })

  test('one check naming a bucket twice consumes both costs', async () => {
    const { limiter } = clockedLimiter()
    const twice = await limiter.check([
      { key: 'u1', policy: chat, cost: 60 },
      { key: 'u1', policy: chat, cost: 30 },
    ])
    expect(twice.results.map((r) => r.remaining)).toEqual([10, 10])
    expect(await countAllowed(limiter, 20, [{ key: 'u1', policy: chat }])).toBe(10)
  })

  test('headers follow the IETF draft and report the entry closest to refusing', async () => {
    const { limiter } = clockedLimiter()
    const burst = definePolicy({ name: 'burst', limit: 500, windowSeconds: 60 })
    const entries = [
      { key: 'u1', policy: burst },
      { key: 'u1', policy: chat, cost: 63 },
    ]
    expect(rateLimitHeaders(await limiter.check(entries))).toEqual({
      'ratelimit-policy': '"burst";q=500;w=60, "chat";q=100;w=60',
      ratelimit: '"chat";r=37;t=38',
    })
    const refused = await limiter.check(entries)
    expect(rateLimitHeaders(refused)).toEqual({
      'ratelimit-policy': '"burst";q=500;w=60, "chat";q=100;w=60',
      ratelimit: '"chat";r=37;t=38',
      'retry-after': '16',
    })
  })

  test('buckets that are full again are swept, so many keys do not accumulate', async () => {
    const { clock, limiter } = clockedLimiter()
    for (let i = 0; i < 10_000; i++) await limiter.check([{ key: `user-${i}`, policy: chat }])
    expect(limiter.size).toBe(10_000)
    clock.ms += 60_000
    await limiter.check([{ key: 'late', policy: chat }])
    expect(limiter.size).toBe(1)
  })

  test('policies and costs that could never be honoured are rejected', async () => {
    expect(() => definePolicy({ name: 'Chat Policy', limit: 1, windowSeconds: 60 })).toThrow(/\[a-z0-9_-\]/)
    expect(() => definePolicy({ name: 'chat', limit: 0, windowSeconds: 60 })).toThrow(RangeError)
    const { limiter } = clockedLimiter()
    await expect(limiter.check([{ key: 'u1', policy: chat, cost: 101 }])).rejects.toThrow(RangeError)
  })

  test('a check of one entry is decided exactly as the general decision would: allowed, refused, fresh or past', () => {
    const tight = definePolicy({ name: 'tight', limit: 3, windowSeconds: 7 })
    const nowUs = 1_700_000_000_000_000
    for (const policy of [chat, tight])
      for (const cost of [0, 1, 2, policy.limit])
        for (const storedTat of [undefined, nowUs - 5_000_000, nowUs, nowUs + 1, nowUs + 2_333_333, nowUs + 6_999_999, nowUs + 60_000_000]) {
          const prepared = prepareChecks([{ key: 'u1', policy, cost }])
          const general = decideAll(nowUs, prepared, () => storedTat)
          const one = decide(nowUs, prepared, () => storedTat)
          expect(one.decision).toEqual(general.decision)
          expect(one.tats.get(prepared[0]!.bucket)!).toBe(general.tats.get(prepared[0]!.bucket)!)
        }
  })

  test('the limiter refuses a lone entry once its budget is spent, with the same headers as before', async () => {
    const { clock, limiter } = clockedLimiter()
    const tiny = definePolicy({ name: 'tiny', limit: 2, windowSeconds: 10 })
    expect((await limiter.check([{ key: 'u1', policy: tiny }])).allowed).toBe(true)
    expect((await limiter.check([{ key: 'u1', policy: tiny }])).allowed).toBe(true)
    const refused = await limiter.check([{ key: 'u1', policy: tiny }])
    expect(refused).toMatchObject({ allowed: false, refusedBy: 'tiny', retryAfterSeconds: 5 })
    expect(rateLimitHeaders(refused)).toEqual({ 'ratelimit-policy': '"tiny";q=2;w=10', ratelimit: '"tiny";r=0;t=10', 'retry-after': '5' })
    clock.ms += 5_000
    expect((await limiter.check([{ key: 'u1', policy: tiny }])).allowed).toBe(true)
  })
})
