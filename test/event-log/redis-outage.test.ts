/**
 * A Redis outage of more than 40 s: work that needs Redis fails with `unavailable` instead of waiting, the
 * managers keep reconnecting however long it lasts, and once Redis is back every instance works again (logs
 * across instances, the cancel channel's subscription) without a restart. Alone in its file: it takes 45 s.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createCancelChannel, createRedisEventLog } from '../../src/event-log/index.ts'
import { createRedisManager, RedisUnavailableError } from '../../src/redis.ts'
import { follow, logOptions } from './contract.ts'
import { recovery, redisServerInstalled, startPrivateRedis, type PrivateRedis } from './private-redis.ts'

const OUTAGE_MS = 41_000
const RECOVERY_MS = 5000

if (!redisServerInstalled) console.warn('[skip] the Redis outage suite: redis-server is not installed at /usr/bin/redis-server')

describe.skipIf(!redisServerInstalled)('a Redis outage longer than 40 s', () => {
  let server: PrivateRedis
  beforeAll(async () => void (server = await startPrivateRedis()))
  afterAll(() => server.stop())

  test('fails fast during it, and every instance recovers after it, subscriptions included', async () => {
    // Two processes; the backoff cap shortened as REDIS_RECONNECT_MAX_DELAY_MS would.
    const instances = ['a', 'b'].map(() => {
      const redis = createRedisManager({ url: server.url, reconnectMaxDelayMs: 1000 })
      return { redis, log: createRedisEventLog({ ...logOptions, redis, keyPrefix: 'outage:' }), cancels: createCancelChannel({ redis }) }
    })
    const [a, b] = instances as [(typeof instances)[0], (typeof instances)[0]]
    const cancelled: string[] = []
    a.cancels.register('task-on-a', () => cancelled.push('task-on-a'))
    b.cancels.register('task-on-b', () => cancelled.push('task-on-b'))

    /** A log written on one instance and read to its end on the other. */
    const roundTrip = async (from: typeof a, to: typeof a) => {
      const id = `rt_${crypto.randomUUID()}`
      const producer = from.log.open(id, 'x')
      await producer.opened
      producer.append('one')
      await producer.end('fin')
      const followed = await follow(to.log, id)
      const events = await Promise.race([followed.ended, Bun.sleep(2000).then(() => Promise.reject(new Error('no end within 2 s')))])
      expect(events.map((e) => e.data)).toEqual(['one', 'fin'])
    }
    const cancelAcross = async (from: typeof a, id: string) => {
      const before = cancelled.length
      await from.cancels.cancel(id)
      for (let i = 0; i < 20 && cancelled.length === before; i++) await Bun.sleep(10)
      if (cancelled.length === before) throw new Error(`cancel of ${id} did not arrive`)
    }
    await roundTrip(a, b)
    await cancelAcross(b, 'task-on-a')

    await server.kill()
    const failures: Record<string, number[]> = { open: [], info: [], follow: [], cancel: [], ping: [] }
    const probes: Record<string, () => Promise<unknown>> = {
      open: () => a.log.open(`during_${crypto.randomUUID()}`, 'x').opened,
      info: () => b.log.info('anything'),
      follow: () => b.log.follow('anything', 0, () => {}),
      cancel: () => b.cancels.cancel('task-on-a'),
      ping: () => a.redis.ping(),
    }
    const outageStarted = performance.now()
    while (performance.now() - outageStarted < OUTAGE_MS) {
      for (const [name, probe] of Object.entries(probes)) {
        const started = performance.now()
        const error = await probe().then(
          () => undefined,
          (err) => err,
        )
        expect(error).toBeInstanceOf(RedisUnavailableError)
        failures[name]!.push(performance.now() - started)
      }
      await Bun.sleep(2000)
    }
    const slowest = Object.fromEntries(Object.entries(failures).map(([name, ms]) => [name, Math.round(Math.max(...ms))]))

    await server.start()
    const restarted = performance.now()
    const recovered = {
      aToB: await recovery(() => roundTrip(a, b), RECOVERY_MS, 'a log from a to b'),
      bToA: await recovery(() => roundTrip(b, a), RECOVERY_MS, 'a log from b to a'),
      cancelToA: await recovery(() => cancelAcross(b, 'task-on-a'), RECOVERY_MS, "a's cancel subscription"),
      cancelToB: await recovery(() => cancelAcross(a, 'task-on-b'), RECOVERY_MS, "b's cancel subscription"),
    }
    const allBackMs = performance.now() - restarted
    console.log(
      `redis outage of ${Math.round(OUTAGE_MS / 1000)} s: ${failures.open!.length} probes of each kind failed with unavailable; slowest failure per kind (ms) ${JSON.stringify(slowest)}; ` +
        `after the restart: ${JSON.stringify(Object.fromEntries(Object.entries(recovered).map(([k, v]) => [k, Math.round(v)])))} ms each, all back within ${Math.round(allBackMs)} ms`,
    )
    for (const i of instances) {
      await i.cancels.close()
      await i.log.close()
      i.redis.close()
    }
  }, 90_000)
})
