/**
 * Where web search answers are kept between identical queries: in this process by default, or in
 * Redis so every process shares them. Values are JSON text; the cache itself never interprets them.
 */
import { createRedisManager, type RedisManager } from '../../src/redis.ts'
import type { Logger } from '../../src/log.ts'

export interface CachedAnswer {
  value: string
  /** How long the entry has left to live, in milliseconds (always > 0). */
  ttlLeftMs: number
}

export interface SearchCache {
  /** The live entry under `key`, or undefined when there is none (or the store cannot be reached). */
  get(key: string): Promise<CachedAnswer | undefined>
  set(key: string, value: string, ttlMs: number): Promise<void>
  close(): Promise<void>
}

export interface MemorySearchCacheOptions {
  /** Entries kept before the least recently used is dropped. Default 1000. */
  maxEntries?: number
  /** Clock, for tests. Default Date.now. */
  now?: () => number
}

export function createMemorySearchCache(options: MemorySearchCacheOptions = {}): SearchCache {
  const maxEntries = options.maxEntries ?? 1000
  const now = options.now ?? Date.now
  // Map order is recency order: a hit moves its entry to the end, so the first key is the least recent.
  const entries = new Map<string, { value: string; expiresAt: number }>()

  return {
    async get(key) {
      const entry = entries.get(key)
      if (!entry) return undefined
      entries.delete(key)
      const ttlLeftMs = entry.expiresAt - now()
      if (ttlLeftMs <= 0) return undefined
      entries.set(key, entry)
      return { value: entry.value, ttlLeftMs }
    },
    async set(key, value, ttlMs) {
      entries.delete(key)
      if (entries.size >= maxEntries) {
        // Expired entries go first, so a burst of one-off queries does not push out live answers.
        const at = now()
        for (const [k, e] of entries) if (e.expiresAt <= at) entries.delete(k)
        for (const k of entries.keys()) {
          if (entries.size < maxEntries) break
          entries.delete(k)
        }
      }
      entries.set(key, { value, expiresAt: now() + ttlMs })
    },
    async close() {
      entries.clear()
    },
  }
}

export interface RedisSearchCacheOptions {
  /** The process's Redis connection manager; or `url` for a connection of the cache's own. */
  redis?: RedisManager
  url?: string
  /** Prepended to every key. Default `websearch:`. */
  keyPrefix?: string
  /** Longest a read or write waits for Redis, connecting included; then the search goes on without the cache. Default 500. */
  timeoutMs?: number
  logger?: Logger
}

const WARN_EVERY_MS = 5_000

/**
 * Answers shared by every process through Redis (SET with PX, so Redis expires them). A cache that
 * cannot be reached is a slower search, not a failed one: errors are logged and read as misses.
 */
export function createRedisSearchCache(options: RedisSearchCacheOptions): SearchCache {
  const keyPrefix = options.keyPrefix ?? 'websearch:'
  const timeoutMs = options.timeoutMs ?? 500
  const redis = options.redis ?? createRedisManager({ url: options.url!, commandTimeoutMs: timeoutMs })
  let lastWarnAt = -Infinity

  const degraded = (err: unknown, operation: string) => {
    if (Date.now() - lastWarnAt < WARN_EVERY_MS) return
    lastWarnAt = Date.now()
    options.logger?.warn('web search cache unavailable; searching without it', { err, operation })
  }

  return {
    async get(key) {
      try {
        // Sent together (Bun pipelines them); PTTL is Redis's own clock, so every process agrees on the age.
        const [value, ttlLeftMs] = await redis.run((client) => Promise.all([client.get(keyPrefix + key), client.pttl(keyPrefix + key)]), timeoutMs)
        return value !== null && ttlLeftMs > 0 ? { value, ttlLeftMs } : undefined
      } catch (err) {
        degraded(err, 'get')
        return undefined
      }
    },
    async set(key, value, ttlMs) {
      try {
        await redis.run((client) => client.set(keyPrefix + key, value, 'PX', Math.max(1, Math.ceil(ttlMs))), timeoutMs)
      } catch (err) {
        degraded(err, 'set')
      }
    },
    async close() {
      if (!options.redis) redis.close()
    },
  }
}
