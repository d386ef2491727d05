/**
 * Rate limiter shared by every process through Redis: one script per check reads, decides and writes all
 * buckets atomically, on the server's clock so processes with skewed clocks still agree.
 */
import type { RedisClient } from 'bun'
import { AppError } from '../errors.ts'
import type { Logger } from '../log.ts'
import { createRedisManager, type RedisManager } from '../redis.ts'
import { decide, prepareChecks, type RateLimiter, type StoreFailurePolicy } from './index.ts'

export interface RedisRateLimiterOptions {
  /** The process's Redis connection manager; or `url` for a connection of the limiter's own. */
  redis?: RedisManager
  url?: string
  /** Prepended to every bucket key. Default `rl:`. */
  keyPrefix?: string
  /** Default for policies that do not set `onStoreError`. */
  onStoreError: StoreFailurePolicy
  logger?: Logger
  /** Longest a check waits for Redis, connecting included. Default 500. */
  timeoutMs?: number
}

// Mirrors decide() in index.ts: same integer microseconds, same order, so both reach the same answer.
// ARGV holds interval, capacity and cost for each key. Replies with the server time, then each key's
// stored TAT (-1 when absent), from which the caller rebuilds the decision. Needs Redis 5+ (effects
// replication) to write after TIME.
const SCRIPT = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local stored, tats, reply = {}, {}, { now }
local refused = false
for i, key in ipairs(KEYS) do
  if stored[key] == nil then
    local value = redis.call('GET', key)
    stored[key] = value and tonumber(value) or -1
    tats[key] = math.max(stored[key], now)
  end
  reply[i + 1] = stored[key]
  local interval, capacity, cost = tonumber(ARGV[3 * i - 2]), tonumber(ARGV[3 * i - 1]), tonumber(ARGV[3 * i])
  local advanced = tats[key] + cost * interval
  if advanced - now > capacity then refused = true else tats[key] = advanced end
end
if not refused then
  for key, tat in pairs(tats) do
    if tat > now then
      redis.call('SET', key, string.format('%.0f', tat), 'PX', math.ceil((tat - now) / 1000))
    end
  end
end
return reply
`
const SCRIPT_SHA = new Bun.CryptoHasher('sha1').update(SCRIPT).digest('hex')

const WARN_EVERY_MS = 5_000

export function createRedisRateLimiter(options: RedisRateLimiterOptions): RateLimiter {
  const keyPrefix = options.keyPrefix ?? 'rl:'
  const timeoutMs = options.timeoutMs ?? 500
  const redis = options.redis ?? createRedisManager({ url: options.url!, commandTimeoutMs: timeoutMs })
  let lastWarnAt = -Infinity
  let unlogged = 0

  const evaluate = async (client: RedisClient, keys: string[], args: string[]): Promise<number[]> => {
    const params = [String(keys.length), ...keys, ...args]
    try {
      return await client.send('EVALSHA', [SCRIPT_SHA, ...params])
    } catch (err) {
      // The script cache is empty after a restart or SCRIPT FLUSH; EVAL runs and caches it again.
      if (err instanceof Error && err.message.startsWith('NOSCRIPT')) return await client.send('EVAL', [SCRIPT, ...params])
      throw err
    }
  }

  const storeFailed = (err: unknown, failClosed: boolean) => {
    const at = Date.now()
    if (at - lastWarnAt >= WARN_EVERY_MS) {
      options.logger?.warn(failClosed ? 'rate limit store failed; refusing requests' : 'rate limit store failed; allowing requests unchecked', {
        err,
        failuresSinceLastWarning: unlogged,
      })
      lastWarnAt = at
      unlogged = 0
    } else unlogged++
    if (failClosed) throw new AppError('unavailable', 'Rate limiter store is unreachable', { headers: { 'retry-after': '5' }, cause: err })
    return { allowed: true, results: [], degraded: true }
  }

  return {
    async check(entries) {
      const prepared = prepareChecks(entries)
      const keys = prepared.map((p) => keyPrefix + p.bucket)
      const args = prepared.flatMap((p) => [String(p.intervalUs), String(p.capacityUs), String(p.cost)])
      let reply: number[]
      try {
        reply = await redis.run((client) => evaluate(client, keys, args), timeoutMs)
      } catch (err) {
        // Closed wins: one entry guarding something that must not run unchecked is enough to refuse.
        return storeFailed(
          err,
          prepared.some((p) => (p.check.policy.onStoreError ?? options.onStoreError) === 'closed'),
        )
      }
      const [nowUs, ...stored] = reply.map(Number) as [number, ...number[]]
      const byBucket = new Map(prepared.map((p, i) => [p.bucket, stored[i]! < 0 ? undefined : stored[i]]))
      return decide(nowUs, prepared, (bucket) => byBucket.get(bucket)).decision
    },
    async close() {
      if (!options.redis) redis.close()
    },
  }
}
