import { afterAll, beforeAll, describe } from 'bun:test'
import { createRedisEventLog } from '../../src/event-log/index.ts'
import { createRedisManager } from '../../src/redis.ts'
import { eventLogContract, logOptions } from './contract.ts'
import { redisServerInstalled, startPrivateRedis, type PrivateRedis } from './private-redis.ts'

if (!redisServerInstalled) console.warn('[skip] the Redis event log contract: redis-server is not installed at /usr/bin/redis-server')

describe.skipIf(!redisServerInstalled)('redis', () => {
  let server: PrivateRedis
  beforeAll(async () => void (server = await startPrivateRedis()))
  afterAll(() => server.stop())

  // Two instances, each with its own connection manager: two processes sharing one Redis.
  eventLogContract('Redis', async () => {
    const managers = [createRedisManager({ url: server.url }), createRedisManager({ url: server.url })]
    const [a, b] = managers.map((redis) => createRedisEventLog({ ...logOptions, redis, keyPrefix: 'test:' }))
    return {
      a: a!,
      b: b!,
      async close() {
        await a!.close()
        await b!.close()
        for (const m of managers) m.close()
      },
    }
  })
})
