import type { Logger } from '../log.ts'
import type { RedisManager } from '../redis.ts'
import { toNumber, type Database } from '../storage/database.ts'

/**
 * Signed-out sessions (refresh-token families) whose access tokens are refused before they expire.
 * Every process holds the whole list in memory, so the check each request makes is a Map lookup, never
 * a round trip. The list is shared through Redis when REDIS_URL is set, else through the database; other
 * processes hear of an entry at once (Redis pub/sub, PostgreSQL LISTEN/NOTIFY) and reload the list every
 * few seconds in case a message was lost, which on SQLite is the only way they learn of it.
 */
export interface RevokedSessions {
  /** Refuses the session's access tokens until `until` (ms), here at once and in other processes soon after. */
  revoke(sessionId: string, until: number): Promise<void>
  /** Whether the session was signed out; in-process only, so cheap enough for every request. */
  has(sessionId: string): boolean
  /** Loads the shared list and starts following it. */
  start(): Promise<void>
  close(): Promise<void>
}

/** Where the list is kept for every process. */
interface SharedList {
  add(sessionId: string, until: number, now: number): Promise<void>
  /** Entries still in force at `now`. */
  list(now: number): Promise<[sessionId: string, until: number][]>
  /** Calls `heard` with each entry added from anywhere, and `resumed` after a reconnection (something may have been missed). */
  follow(heard: (sessionId: string, until: number) => void, resumed: () => void): Promise<void>
  close(): Promise<void>
}

export interface RevokedSessionsOptions {
  logger: Logger
  now?: () => number
  /** How often the shared list is reloaded, in case a notification was lost. Default 5000 ms. */
  reloadMs?: number
}

const CHANNEL = 'revoked_sessions'
const REDIS_KEY = 'auth:revoked-sessions'

const message = (sessionId: string, until: number) => `${sessionId} ${until}`

function parseMessage(text: string): [string, number] | undefined {
  const [sessionId, until] = text.split(' ')
  return sessionId && Number.isFinite(Number(until)) ? [sessionId, Number(until)] : undefined
}

function createRevokedSessions(shared: SharedList | undefined, options: RevokedSessionsOptions): RevokedSessions {
  const now = options.now ?? Date.now
  const entries = new Map<string, number>()
  let timer: ReturnType<typeof setInterval> | undefined
  let reloading: Promise<void> | undefined

  const remember = (sessionId: string, until: number) => {
    if (until > (entries.get(sessionId) ?? 0)) entries.set(sessionId, until)
  }

  function reload(): Promise<void> {
    reloading ??= (async () => {
      const t = now()
      for (const [sessionId, until] of await shared!.list(t)) remember(sessionId, until)
      for (const [sessionId, until] of entries) if (until <= t) entries.delete(sessionId)
    })()
      .catch((err) => options.logger.warn('revoked sessions: reload failed', { err }))
      .finally(() => (reloading = undefined))
    return reloading
  }

  return {
    async revoke(sessionId, until) {
      remember(sessionId, until)
      // The refresh family is revoked in the database already; a store outage only delays other processes.
      await shared?.add(sessionId, until, now()).catch((err) => options.logger.error('revoked sessions: sharing failed', { err }))
    },
    has(sessionId) {
      const until = entries.get(sessionId)
      return until !== undefined && until > now()
    },
    async start() {
      if (!shared || timer) return
      // A store that does not answer must not hold up start-up; the reloads catch up once it does.
      let waited: ReturnType<typeof setTimeout> | undefined
      await Promise.race([
        shared.follow(remember, () => void reload()),
        new Promise((_, reject) => (waited = setTimeout(() => reject(new Error('no answer within 2 s')), 2000))),
      ])
        .catch((err) => options.logger.warn('revoked sessions: follow failed', { err }))
        .finally(() => clearTimeout(waited))
      await reload()
      timer = setInterval(() => void reload(), options.reloadMs ?? 5000)
      timer.unref?.()
    },
    async close() {
      clearInterval(timer)
      await shared?.close()
    },
  }
}

/** One process, nothing shared: for an access service built without storage (tests, tools). */
export function revokedSessionsInProcess(options: RevokedSessionsOptions): RevokedSessions {
  return createRevokedSessions(undefined, options)
}

/** Shared through the `revoked_sessions` table; PostgreSQL also notifies the other processes. */
export function revokedSessionsInDatabase(db: Database, options: RevokedSessionsOptions): RevokedSessions {
  let subscription: { unlisten(): Promise<void> } | undefined
  return createRevokedSessions(
    {
      async add(sessionId, until, now) {
        await db.sql`
          INSERT INTO revoked_sessions (session_id, expires_at) VALUES (${sessionId}, ${until})
          ON CONFLICT (session_id) DO UPDATE SET expires_at = excluded.expires_at`
        await db.sql`DELETE FROM revoked_sessions WHERE expires_at <= ${now}`
        if (db.dialect === 'postgres') await db.sql.notify(CHANNEL, message(sessionId, until))
      },
      async list(now) {
        const rows = await db.sql`SELECT session_id, expires_at FROM revoked_sessions WHERE expires_at > ${now}`
        return rows.map((r: { session_id: string; expires_at: unknown }) => [r.session_id, toNumber(r.expires_at)] as [string, number])
      },
      async follow(heard, resumed) {
        if (db.dialect !== 'postgres') return
        let listening = false
        subscription = await db.sql.listen(
          CHANNEL,
          (payload) => {
            const entry = parseMessage(payload)
            if (entry) heard(...entry)
          },
          () => {
            if (listening) resumed()
            listening = true
          },
        )
      },
      async close() {
        await subscription?.unlisten()
      },
    },
    options,
  )
}

/** Shared through a Redis sorted set (score: until when), announced on a channel of the same name. */
export function revokedSessionsInRedis(redis: RedisManager, options: RevokedSessionsOptions): RevokedSessions {
  let unsubscribe: (() => void) | undefined
  let stopReconnects: (() => void) | undefined
  return createRevokedSessions(
    {
      async add(sessionId, until, now) {
        await redis.run(async (client) => {
          await client.send('ZADD', [REDIS_KEY, String(until), sessionId])
          await client.send('ZREMRANGEBYSCORE', [REDIS_KEY, '-inf', String(now)])
          await client.send('PUBLISH', [REDIS_KEY, message(sessionId, until)])
        }, 2000)
      },
      async list(now) {
        const flat = (await redis.send('ZRANGEBYSCORE', [REDIS_KEY, `(${now}`, '+inf', 'WITHSCORES'], 2000)) as unknown
        // RESP2 answers a flat [member, score, ...] list, RESP3 [member, score] pairs.
        const items = (Array.isArray(flat) ? flat : []).flat() as unknown[]
        const entries: [string, number][] = []
        for (let i = 0; i + 1 < items.length; i += 2) entries.push([String(items[i]), Number(items[i + 1])])
        return entries
      },
      async follow(heard, resumed) {
        stopReconnects = redis.onReconnect(resumed)
        const subscription = redis.subscribe(REDIS_KEY, (text) => {
          const entry = parseMessage(text)
          if (entry) heard(...entry)
        })
        unsubscribe = subscription.unsubscribe
        await subscription.subscribed
      },
      async close() {
        unsubscribe?.()
        stopReconnects?.()
      },
    },
    options,
  )
}
