/**
 * Redis that stops answering without closing anything (a hung server, a network that drops packets): every
 * command still ends at its deadline with `unavailable`, and the connection comes back once Redis answers again.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createRedisEventLog } from '../../src/event-log/index.ts'
import { createRedisManager, RedisUnavailableError } from '../../src/redis.ts'
import { follow, logOptions } from './contract.ts'
import { recovery, redisServerInstalled, startPrivateRedis, type PrivateRedis } from './private-redis.ts'

if (!redisServerInstalled) console.warn('[skip] a Redis that stops answering: redis-server is not installed at /usr/bin/redis-server')

describe.skipIf(!redisServerInstalled)('a Redis that stops answering', () => {
  let server: PrivateRedis
  beforeAll(async () => void (server = await startPrivateRedis()))
  afterAll(() => server.stop())

  test('commands end at their deadline with unavailable, and work again once it answers', async () => {
    const redis = createRedisManager({ url: server.url, commandTimeoutMs: 1000, reconnectMaxDelayMs: 500 })
    const log = createRedisEventLog({ ...logOptions, redis, keyPrefix: 'stall:' })
    await redis.ping()
    server.pause()
    const waited: Record<string, number> = {}
    for (const [name, work] of Object.entries({
      ping: () => redis.ping(),
      open: () => log.open(`stalled_${crypto.randomUUID()}`, '').opened,
      info: () => log.info('x'),
    })) {
      const started = performance.now()
      expect(
        await work().then(
          () => undefined,
          (err) => err,
        ),
      ).toBeInstanceOf(RedisUnavailableError)
      waited[name] = Math.round(performance.now() - started)
    }
    server.resume()
    const recoveredMs = await recovery(
      async () => {
        const id = `after_${crypto.randomUUID()}`
        const producer = log.open(id, '')
        await producer.opened
        await producer.end('fin')
        expect((await (await follow(log, id)).ended).map((e) => e.data)).toEqual(['fin'])
      },
      5000,
      'the event log',
    )
    console.log(`redis stalled: failures came after (ms) ${JSON.stringify(waited)}; working again ${Math.round(recoveredMs)} ms after it answered`)
    await log.close()
    redis.close()
  }, 120_000)
})
