import { afterAll, describe, expect, test } from 'bun:test'
import { RedisClient } from 'bun'
import { createHttpClient } from '../../src/http.ts'
import { createMemorySearchCache, createRedisSearchCache } from '../../plugins/web-search/cache.ts'
import { createSearxngProvider } from '../../plugins/web-search/providers/searxng.ts'
import { createWebSearchService } from '../../plugins/web-search/service.ts'
import { startFakeSearxng } from '../fakes/search-providers.ts'
import { announceSkip, redisUrl } from '../helpers.ts'

describe('memory cache', () => {
  test('an entry lives for its TTL on the injected clock, and reports what is left', async () => {
    let clock = 0
    const cache = createMemorySearchCache({ now: () => clock })
    await cache.set('k', 'v', 1000)
    clock = 400
    expect(await cache.get('k')).toEqual({ value: 'v', ttlLeftMs: 600 })
    clock = 1000
    expect(await cache.get('k')).toBeUndefined()
  })

  test('when full, expired entries go first, then the least recently used', async () => {
    let clock = 0
    const cache = createMemorySearchCache({ maxEntries: 3, now: () => clock })
    await cache.set('old', '2', 1000)
    await cache.set('short', '1', 10)
    await cache.set('used', '3', 1000)
    clock = 20
    await cache.set('new', '4', 1000)
    // "short" had expired, so it made room rather than the older "old"; reading "old" makes it recent.
    expect(await cache.get('old')).toMatchObject({ value: '2' })
    await cache.set('newest', '5', 1000)
    // Full again with nothing expired: "used" is now the least recently used.
    expect(await cache.get('used')).toBeUndefined()
    expect(await cache.get('short')).toBeUndefined()
    expect(await cache.get('old')).toMatchObject({ value: '2' })
    expect(await cache.get('new')).toMatchObject({ value: '4' })
    expect(await cache.get('newest')).toMatchObject({ value: '5' })
  })
})

describe('Redis cache', () => {
  if (!redisUrl) {
    announceSkip('web search cache in Redis', 'REDIS_URL')
    return
  }
  const url = redisUrl
  const prefix = `websearch-test-${crypto.randomUUID()}:`
  const searxng = startFakeSearxng()
  const redis = new RedisClient(url)
  const caches = [createRedisSearchCache({ url, keyPrefix: prefix }), createRedisSearchCache({ url, keyPrefix: prefix })]
  afterAll(async () => {
    for (const cache of caches) await cache.close()
    redis.close()
    await searxng.close()
  })

  test('two service instances with separate memory share answers through Redis', async () => {
    // Like two server processes: each has its own adapter, client and in-flight table; only Redis is shared.
    const [first, second] = caches.map((cache) =>
      createWebSearchService({ provider: createSearxngProvider({ baseUrl: searxng.url, http: createHttpClient() }), cache }),
    )
    const miss = await first!.search('Bun Redis')
    expect(miss.cached).toBe(false)
    const hit = await second!.search('  bun   redis')
    expect(hit.cached).toBe(true)
    expect(hit.results).toEqual(miss.results)
    expect(hit.maxAgeSeconds).toBeGreaterThan(0)
    expect(hit.maxAgeSeconds).toBeLessThanOrEqual(300)
    expect(searxng.calls).toBe(1)
  })

  test('entries are JSON under the websearch prefix with a PX expiry that Redis enforces', async () => {
    await caches[0]!.set('probe', JSON.stringify({ ok: true }), 60_000)
    expect(JSON.parse((await redis.get(`${prefix}probe`))!)).toEqual({ ok: true })
    const ttl = await redis.pttl(`${prefix}probe`)
    expect(ttl).toBeGreaterThan(0)
    expect(ttl).toBeLessThanOrEqual(60_000)
    await redis.del(`${prefix}probe`)
    expect(await caches[1]!.get('probe')).toBeUndefined()
  })

  test('the default prefix is websearch:', async () => {
    const cache = createRedisSearchCache({ url })
    const key = `probe-${crypto.randomUUID()}`
    try {
      await cache.set(key, '"x"', 5_000)
      expect(await redis.get(`websearch:${key}`)).toBe('"x"')
    } finally {
      await redis.del(`websearch:${key}`)
      await cache.close()
    }
  })
})

describe('a Redis cache that cannot be reached', () => {
  test('reads as a miss and a write is dropped, so searches go on without it', async () => {
    const cache = createRedisSearchCache({ url: 'redis://127.0.0.1:1', timeoutMs: 200 })
    try {
      await cache.set('k', 'v', 1000)
      expect(await cache.get('k')).toBeUndefined()
    } finally {
      await cache.close()
    }
  })
})
