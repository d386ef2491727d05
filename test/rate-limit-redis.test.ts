import { afterAll, describe, expect, test } from 'bun:test'
import { RedisClient, type Socket } from 'bun'
import { AppError } from '../src/errors.ts'
import { memoryLogger } from '../src/log.ts'
import { definePolicy, type RateCheck, type RateLimiter } from '../src/rate-limit/index.ts'
import { createRedisRateLimiter, type RedisRateLimiterOptions } from '../src/rate-limit/redis.ts'
import { announceSkip, redisUrl } from './helpers.ts'

const chat = definePolicy({ name: 'chat', limit: 100, windowSeconds: 60 })

async function countAllowed(limiter: RateLimiter, n: number, entries: RateCheck[]) {
  const decisions = await Promise.all(Array.from({ length: n }, () => limiter.check(entries)))
  return decisions.filter((d) => d.allowed).length
}

const url = redisUrl
if (!url) announceSkip('Redis rate limiter against a live server', 'REDIS_URL')
else
  describe('redis rate limiter', () => {
    // One prefix per run, so runs (and other suites) sharing the server never share a bucket.
    const keyPrefix = `rl-test:${Date.now().toString(36)}${Math.random().toString(36).slice(2, 8)}:`
    const admin = new RedisClient(url)
    const opened: RateLimiter[] = []
    const limiter = (options: Partial<RedisRateLimiterOptions> = {}) => {
      // A generous timeout: under a loaded CI machine a slow answer must not read as an outage.
      const created = createRedisRateLimiter({ url, keyPrefix, onStoreError: 'closed', timeoutMs: 5_000, ...options })
      opened.push(created)
      return created
    }

    afterAll(async () => {
      for (const created of opened) await created.close()
      let cursor = '0'
      do {
        const [next, keys] = (await admin.send('SCAN', [cursor, 'MATCH', `${keyPrefix}*`, 'COUNT', '1000'])) as [string, string[]]
        if (keys.length > 0) await admin.send('DEL', keys)
        cursor = next
      } while (cursor !== '0')
      admin.close()
    })

    test('exactly limit of 250 concurrent checks pass', async () => {
      expect(await countAllowed(limiter(), 250, [{ key: 'concurrent', policy: chat }])).toBe(100)
    })

    test('two limiters on separate connections share one budget exactly', async () => {
      const [a, b] = [limiter(), limiter()]
      const entries = [{ key: 'shared', policy: chat }]
      const [fromA, fromB] = await Promise.all([countAllowed(a, 150, entries), countAllowed(b, 150, entries)])
      expect(fromA + fromB).toBe(100)
    })

    test('a refusal by one policy consumes nothing in the others', async () => {
      const rl = limiter()
      const burst = definePolicy({ name: 'burst', limit: 5, windowSeconds: 60 })
      const tight = definePolicy({ name: 'tight', limit: 3, windowSeconds: 60 })
      const both = [
        { key: 'all-or-nothing', policy: burst },
        { key: 'all-or-nothing', policy: tight },
      ]
      expect(await countAllowed(rl, 10, both)).toBe(3)
      expect(await rl.check(both)).toMatchObject({ allowed: false, refusedBy: 'tight' })
      expect(await countAllowed(rl, 10, [{ key: 'all-or-nothing', policy: burst }])).toBe(2)
    })

    test('one check naming a bucket twice consumes both costs, at an uneven rate', async () => {
      const rl = limiter()
      const odd = definePolicy({ name: 'odd', limit: 7, windowSeconds: 3600 })
      const twice = await rl.check([
        { key: 'twice', policy: odd, cost: 3 },
        { key: 'twice', policy: odd, cost: 2 },
      ])
      expect(twice.results.map((r) => r.remaining)).toEqual([2, 2])
      expect(await countAllowed(rl, 10, [{ key: 'twice', policy: odd }])).toBe(2)
    })

    test('retry-after and reset follow the server clock', async () => {
      const rl = limiter()
      const slow = definePolicy({ name: 'slow', limit: 2, windowSeconds: 60 })
      const entries = [{ key: 'retry', policy: slow }]
      expect(await countAllowed(rl, 2, entries)).toBe(2)
      const refused = await rl.check(entries)
      expect(refused).toMatchObject({ allowed: false, refusedBy: 'slow' })
      // The bucket filled up moments ago: 30 s until a slot frees, 60 s until it is empty.
      expect(refused.retryAfterSeconds).toBeGreaterThanOrEqual(29)
      expect(refused.retryAfterSeconds).toBeLessThanOrEqual(30)
      expect(refused.results[0]!.remaining).toBe(0)
      expect(refused.results[0]!.resetSeconds).toBeGreaterThanOrEqual(59)
      expect(refused.results[0]!.resetSeconds).toBeLessThanOrEqual(60)
    })

    test('buckets expire once they would be full again', async () => {
      await limiter().check([{ key: 'expiry', policy: chat, cost: 100 }])
      const ttl = Number(await admin.send('PTTL', [`${keyPrefix}chat:expiry`]))
      expect(ttl).toBeGreaterThan(0)
      expect(ttl).toBeLessThanOrEqual(60_000)
    })

    test('an emptied script cache is refilled without losing count', async () => {
      const rl = limiter()
      const entries = [{ key: 'noscript', policy: chat }]
      expect(await countAllowed(rl, 60, entries)).toBe(60)
      await admin.send('SCRIPT', ['FLUSH'])
      expect(await countAllowed(rl, 60, entries)).toBe(40)
    })

    test('after an outage the limiter reconnects on its own', async () => {
      const proxy = cuttableProxy(new URL(url))
      const logger = memoryLogger()
      const rl = limiter({ url: `redis://127.0.0.1:${proxy.port}`, onStoreError: 'open', logger, timeoutMs: 1_000 })
      // Hourly, so the pause below refills nothing.
      const entries = [{ key: 'outage', policy: definePolicy({ name: 'hourly', limit: 100, windowSeconds: 3600 }) }]
      expect(await countAllowed(rl, 30, entries)).toBe(30)
      proxy.cut()
      // The first check finds the connection gone, the second tries to connect again and is refused.
      for (let i = 0; i < 2; i++) expect(await rl.check(entries)).toMatchObject({ allowed: true, degraded: true })
      expect(logger.lines.filter((l) => l.level === 'warn')).toHaveLength(1)
      proxy.restore()
      // Connection attempts pause for a second after a failure; this waits that out, it does not time anything.
      await Bun.sleep(1_100)
      expect(await countAllowed(rl, 100, entries)).toBe(70)
      proxy.stop()
    })
  })

describe('redis rate limiter when the store fails', () => {
  const closedPort = 'redis://127.0.0.1:1'

  test("'open' allows, marks the decision degraded and warns once", async () => {
    const logger = memoryLogger()
    const rl = createRedisRateLimiter({ url: closedPort, onStoreError: 'open', logger, timeoutMs: 200 })
    const decisions = [await rl.check([{ key: 'u1', policy: chat }]), await rl.check([{ key: 'u1', policy: chat }])]
    expect(decisions).toEqual([
      { allowed: true, results: [], degraded: true },
      { allowed: true, results: [], degraded: true },
    ])
    expect(logger.lines.filter((l) => l.level === 'warn')).toHaveLength(1)
    await rl.close()
  })

  test("'closed' refuses with 503 unavailable and a retry-after", async () => {
    const rl = createRedisRateLimiter({ url: closedPort, onStoreError: 'closed', timeoutMs: 200 })
    const error = await rl.check([{ key: 'u1', policy: chat }]).catch((err: unknown) => err)
    expect(error).toBeInstanceOf(AppError)
    expect(error).toMatchObject({ code: 'unavailable', status: 503, options: { headers: { 'retry-after': '5' } } })
    await rl.close()
  })

  test("a policy's own 'closed' overrides the limiter's 'open'", async () => {
    const rl = createRedisRateLimiter({ url: closedPort, onStoreError: 'open', timeoutMs: 200 })
    const strict = definePolicy({ name: 'strict', limit: 10, windowSeconds: 60, onStoreError: 'closed' })
    await expect(
      rl.check([
        { key: 'u1', policy: chat },
        { key: 'u1', policy: strict },
      ]),
    ).rejects.toMatchObject({ code: 'unavailable' })
    await rl.close()
  })

  // Each would wait forever without a bound: one never completes the handshake (connectionTimeout), the
  // other completes it and then ignores the script (the per-check deadline).
  for (const handshake of [false, true]) {
    test(`a server that ${handshake ? 'stalls after the handshake' : 'never answers'} is given up on after timeoutMs`, async () => {
      const stalled = Bun.listen({
        hostname: '127.0.0.1',
        port: 0,
        socket: {
          data(socket, data) {
            if (handshake && data.includes('HELLO')) socket.write('%1\r\n+server\r\n+redis\r\n')
          },
        },
      })
      const rl = createRedisRateLimiter({ url: `redis://127.0.0.1:${stalled.port}`, onStoreError: 'open', timeoutMs: 200 })
      expect(await rl.check([{ key: 'u1', policy: chat }])).toMatchObject({ allowed: true, degraded: true })
      await rl.close()
      stalled.stop(true)
    })
  }
})

/** A TCP relay to Redis whose connections can be cut and refused, standing in for a network outage. */
function cuttableProxy(target: URL) {
  const open = new Set<Socket<unknown>>()
  let refusing = false
  const server = Bun.listen<{ upstream?: Socket<unknown>; early: Buffer[] }>({
    hostname: '127.0.0.1',
    port: 0,
    socket: {
      open(client) {
        client.data = { early: [] }
        if (refusing) return void client.end()
        open.add(client)
        void Bun.connect({
          hostname: target.hostname,
          port: Number(target.port || 6379),
          socket: {
            open(upstream) {
              open.add(upstream)
              client.data.upstream = upstream
              for (const chunk of client.data.early) upstream.write(chunk)
            },
            data: (_, chunk) => void client.write(chunk),
            close: () => void client.end(),
          },
        })
      },
      data(client, chunk) {
        if (client.data.upstream) client.data.upstream.write(chunk)
        else client.data.early.push(chunk)
      },
      close: (client) => void client.data.upstream?.end(),
    },
  })
  const cut = () => {
    refusing = true
    for (const socket of open) socket.end()
    open.clear()
  }
  return {
    port: server.port,
    cut,
    restore: () => {
      refusing = false
    },
    stop: () => {
      cut()
      server.stop(true)
    },
  }
}
