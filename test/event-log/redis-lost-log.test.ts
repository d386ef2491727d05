/**
 * Redis restarted empty under a running log, within the producer's lease: the producer finds its log gone at its
 * next append and ends it in its own process (followers there get what Redis never stored, then the `unavailable`
 * events, recorded first); a follower in another process ends with the `unavailable` events after what it had.
 * And a producer with nothing to append ends its log by itself once its lease could not be renewed for a lease.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createRedisEventLog, type EventLog, type InterruptionCause } from '../../src/event-log/index.ts'
import { createRedisManager, type RedisManager } from '../../src/redis.ts'
import { datas, END, follow, logOptions } from './contract.ts'
import { redisServerInstalled, startPrivateRedis, type PrivateRedis } from './private-redis.ts'

const UNAVAILABLE = 'UNAVAILABLE'

if (!redisServerInstalled) console.warn('[skip] a log Redis lost: redis-server is not installed at /usr/bin/redis-server')

describe.skipIf(!redisServerInstalled)('a log Redis lost or cannot store', () => {
  let server: PrivateRedis
  const managers: RedisManager[] = []
  const logs: EventLog[] = []
  beforeAll(async () => void (server = await startPrivateRedis()))
  afterAll(async () => {
    for (const log of logs) await log.close()
    for (const manager of managers) manager.close()
    await server.stop()
  })

  /** Two processes' logs over the private Redis, with their own managers and one key prefix. */
  const pair = (leaseMs: number): [EventLog, EventLog] => {
    const keyPrefix = `lost-${crypto.randomUUID()}:`
    const made = [0, 1].map(() => {
      const redis = createRedisManager({ url: server.url, reconnectMaxDelayMs: 100 })
      const log = createRedisEventLog({ ...logOptions, unavailable: () => [UNAVAILABLE, END], leaseMs, redis, keyPrefix })
      managers.push(redis)
      logs.push(log)
      return log
    })
    return [made[0]!, made[1]!]
  }

  test('restarted empty: the producer ends its log here with what was not stored; a follower elsewhere ends after what it had', async () => {
    const [a, b] = pair(6000)
    const recorded: { events: string[]; cause: InterruptionCause }[] = []
    a.onInterrupted((_id, _info, events, cause) => void recorded.push({ events: datas(events), cause }))
    const producer = a.open('lost-log', 'info')
    await producer.opened
    producer.append('one')
    producer.append('two')
    await producer.written()
    const here = await follow(a, 'lost-log')
    const there = await follow(b, 'lost-log')
    while (there.events.length < 2) await Bun.sleep(10)
    await server.kill()
    await server.start()
    producer.append('three')

    expect(datas(await here.ended)).toEqual(['one', 'two', 'three', UNAVAILABLE, END])
    expect(here.events.map((e) => e.seq)).toEqual([1, 2, 3, 4, 5])
    expect(recorded).toEqual([{ events: ['one', 'two', 'three', UNAVAILABLE, END], cause: 'unreachable' }])
    expect(producer.lost.aborted).toBe(true)
    expect(datas(await there.ended)).toEqual(['one', 'two', UNAVAILABLE, END])
    // A client resuming on the producing process gets the same end.
    expect(datas((await follow(a, 'lost-log', 2)).events)).toEqual(['three', UNAVAILABLE, END])
  }, 120_000)

  test('down for a lease: an idle producer ends its log by itself, and a follower elsewhere ends too, without Redis', async () => {
    const [a] = pair(800)
    const recorded: InterruptionCause[] = []
    a.onInterrupted((_id, _info, _events, cause) => void recorded.push(cause))
    const producer = a.open('idle-log', 'info')
    await producer.opened
    producer.append('one')
    await producer.written()
    const here = await follow(a, 'idle-log')
    await server.kill()
    try {
      expect(datas(await here.ended)).toEqual(['one', UNAVAILABLE, END])
      expect(recorded).toEqual(['unreachable'])
      expect(producer.lost.aborted).toBe(true)
    } finally {
      await server.start()
    }
  }, 120_000)

  test('a log that never reached Redis ends here with the unavailable events, and nothing is recorded as interrupted', async () => {
    const [a] = pair(800)
    const recorded: InterruptionCause[] = []
    a.onInterrupted((_id, _info, _events, cause) => void recorded.push(cause))
    await server.kill()
    try {
      const producer = a.open('never-opened', 'info')
      const here = await follow(a, 'never-opened')
      producer.append('one')
      expect(
        await producer.opened.then(
          () => 'opened',
          () => 'refused',
        ),
      ).toBe('refused')
      expect(datas(await here.ended)).toEqual(['one', UNAVAILABLE, END])
      expect(recorded).toEqual([])
    } finally {
      await server.start()
    }
  }, 120_000)

  test('a follower elsewhere whose reads fail for a lease ends with the unavailable events', async () => {
    const [a, b] = pair(800)
    const producer = a.open('followed-log', 'info')
    await producer.opened
    producer.append('one')
    await producer.written()
    const there = await follow(b, 'followed-log')
    while (there.events.length < 1) await Bun.sleep(10)
    await server.kill()
    try {
      expect(datas(await there.ended)).toEqual(['one', UNAVAILABLE, END])
    } finally {
      await server.start()
    }
  }, 120_000)
})
