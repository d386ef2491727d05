/**
 * The event log shared by every process through Redis. Each log is a stream whose entry ids are `0-<last seq>`,
 * each entry a batch of events (one XADD per tick); a lease key lives while its producer does, an info key
 * holds the domain's details.
 *
 * The producer appends with a script that checks the stream's last sequence number, so a batch lands right
 * after the previous one or not at all (a log a follower has ended fences its producer out). Followers in the
 * producing process are woken only once Redis has acknowledged the batch, and followers elsewhere read the
 * stream (one blocking reader per log per process), so no one ever sees an event the shared log lacks.
 */
import type { Logger } from '../log.ts'
import type { RedisManager } from '../redis.ts'
import type { EventLog, EventLogOptions, InterruptionCause, InterruptionHandler, LoggedEvent, Producer } from './index.ts'
import { LocalLog, interruptionEvents, newFollower, stopper, type Follower } from './local.ts'

export interface RedisEventLogOptions extends EventLogOptions {
  redis: RedisManager
  logger?: Logger
  /** Prepended to every key, e.g. `chat:`. */
  keyPrefix: string
}

// The top entry's sequence number and flags, shared by both scripts.
const TOP = `
local top = redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', 1)[1]
local topSeq, ended, interrupted = 0, false, false
if top then
  topSeq = tonumber(string.match(top[1], '%-(%d+)$'))
  for i = 1, #top[2], 2 do
    if top[2][i] == 'd' then ended = true elseif top[2][i] == 'i' then interrupted = true end
  end
end`

// KEYS: log, lease, info. ARGV: previous seq, last seq, final, events, lease ms, ttl ms.
// 1 appended, 2 already there (a retry after a lost reply), 0 fenced out (ended by someone else), -1 the log is
// lost (Redis restarted empty, or evicted it: events it had acknowledged are gone).
const APPEND = `${TOP}
if interrupted then return 0 end
if topSeq == tonumber(ARGV[2]) then return 2 end
if ended then return 0 end
if topSeq < tonumber(ARGV[1]) or (topSeq == 0 and redis.call('EXISTS', KEYS[3]) == 0) then return -1 end
if topSeq ~= tonumber(ARGV[1]) then return 0 end
if ARGV[3] == '1' then
  redis.call('XADD', KEYS[1], '0-' .. ARGV[2], 'e', ARGV[4], 'd', '1')
  redis.call('DEL', KEYS[2])
  redis.call('PEXPIRE', KEYS[3], ARGV[6])
else
  redis.call('XADD', KEYS[1], '0-' .. ARGV[2], 'e', ARGV[4])
  redis.call('SET', KEYS[2], '1', 'PX', ARGV[5])
end
redis.call('PEXPIRE', KEYS[1], ARGV[6])
return 1`

// KEYS: log, lease, info. ARGV: the follower's seq, the interruption's events, how many, retention ms.
// 1 written, 0 nothing to do yet (the producer lives, or the follower is behind or the log ended), -1 the log is lost.
const INTERRUPT = `
if redis.call('EXISTS', KEYS[2]) == 1 then return 0 end
${TOP}
local seq = tonumber(ARGV[1])
if not top then
  if seq ~= 0 or redis.call('EXISTS', KEYS[3]) == 0 then return -1 end
else
  if ended then return 0 end
  if topSeq < seq then return -1 end
  if topSeq ~= seq then return 0 end
end
redis.call('XADD', KEYS[1], '0-' .. (seq + tonumber(ARGV[3])), 'e', ARGV[2], 'd', '1', 'i', '1')
redis.call('PEXPIRE', KEYS[1], ARGV[4])
redis.call('PEXPIRE', KEYS[3], ARGV[4])
return 1`

const sha1 = (text: string) => new Bun.CryptoHasher('sha1').update(text).digest('hex')
const SCRIPTS = { append: { text: APPEND, sha: sha1(APPEND) }, interrupt: { text: INTERRUPT, sha: sha1(INTERRUPT) } }

/** How long a producer keeps trying to store a batch before it gives its log up. */
const RETRY_MS = 100
// A process that stops following a finished log keeps its copy this long, for clients resuming at once.
const LOCAL_KEEP_MS = 60_000

interface Mirror {
  log: LocalLog
  stopped: boolean
}

export function createRedisEventLog(options: RedisEventLogOptions): EventLog {
  const { redis, keyPrefix: prefix } = options
  const leaseMs = options.leaseMs ?? 6000
  const pollMs = options.pollMs ?? 1000
  const unavailable = options.unavailable ?? options.interruption
  const keys = {
    log: (id: string) => `${prefix}log:${id}`,
    lease: (id: string) => `${prefix}lease:${id}`,
    info: (id: string) => `${prefix}info:${id}`,
  }
  const logKeys = (id: string) => [keys.log(id), keys.lease(id), keys.info(id)]
  /** Logs produced here (and, for a while after their end, kept here). */
  const produced = new Map<string, LocalLog>()
  const mirrors = new Map<string, Mirror>()
  const stops = new Set<() => void>()
  const timers = new Set<ReturnType<typeof setTimeout>>()
  const handlers: InterruptionHandler[] = []
  let closed = false
  let lastWarnAt = -Infinity
  const warn = (msg: string, err: unknown) => {
    if (Date.now() - lastWarnAt < 5000) return
    lastWarnAt = Date.now()
    options.logger?.warn(`event log ${prefix}: ${msg}`, { err })
  }

  async function script(name: keyof typeof SCRIPTS, keyList: string[], args: string[]): Promise<number> {
    const { text, sha } = SCRIPTS[name]
    const params = [String(keyList.length), ...keyList, ...args]
    try {
      return Number(await redis.send('EVALSHA', [sha, ...params]))
    } catch (err) {
      // The script cache is empty after a restart; EVAL runs and caches it again.
      if (err instanceof Error && err.message.startsWith('NOSCRIPT')) return Number(await redis.send('EVAL', [text, ...params]))
      throw err
    }
  }

  function keepFor(ms: number, run: () => void) {
    const timer = setTimeout(() => {
      timers.delete(timer)
      run()
    }, ms)
    timers.add(timer)
  }

  function open(logId: string, info: string): Producer {
    const log = new LocalLog(logId, info)
    produced.set(logId, log)
    const lost = new AbortController()
    let assigned = 0
    let ended = false
    let pending: LoggedEvent[] = []
    let inflight: LoggedEvent[] | undefined
    let failingSince = 0
    let retry: ReturnType<typeof setTimeout> | undefined
    let scheduled = false
    const waiters: { seq: number; resolve(): void; reject(err: Error): void }[] = []

    const opened = redis
      .run((client) =>
        Promise.all([
          client.send('SET', [keys.lease(logId), '1', 'PX', String(leaseMs)]),
          client.send('SET', [keys.info(logId), info, 'PX', String(options.maxLifeMs)]),
        ]),
      )
      .then(() => undefined)
    // Never in the store, the log was never followed elsewhere and its producer never started: nothing to record.
    opened.catch((err) => lose('its lease could not be written', err, 'unopened'))
    let renewFailingSince = 0
    const renew = setInterval(() => {
      void redis.send('SET', [keys.lease(logId), '1', 'PX', String(leaseMs)]).then(
        () => void (renewFailingSince = 0),
        (err) => {
          renewFailingSince ||= Date.now()
          // A producer with nothing to append learns of an outage here: past the lease it ends its log itself.
          if (Date.now() - renewFailingSince >= leaseMs) lose('its lease could not be renewed', err, 'unreachable')
          else warn('lease renewal failed', err)
        },
      )
    }, leaseMs / 3)

    function settle() {
      for (let i = waiters.length - 1; i >= 0; i--) {
        if (waiters[i]!.seq > log.lastSeq) continue
        waiters[i]!.resolve()
        waiters.splice(i, 1)
      }
    }

    /**
     * Gives the log up. Fenced out by a follower that ended it: the followers here go on from the shared log, which
     * holds that end. The store unreachable or the log lost: the log ends here, with what was not stored and the
     * `unavailable` events, so no client here waits for a store that may not come back.
     */
    function lose(reason: string, err?: unknown, how: 'fenced' | 'unreachable' | 'unopened' = 'fenced') {
      if (lost.signal.aborted) return
      if (err || how !== 'fenced') warn(`producer of ${logId} gave up: ${reason}`, err)
      lost.abort(new Error(reason))
      clearInterval(renew)
      clearTimeout(retry)
      stops.delete(halt)
      const unstored = [...(inflight ?? []), ...pending]
      pending = []
      inflight = undefined
      for (const w of waiters.splice(0)) w.reject(new Error(`log ${logId} was lost: ${reason}`))
      if (closed) return
      if (how !== 'fenced') return void endHere(log, unstored, how === 'unreachable')
      if (produced.get(logId) === log) produced.delete(logId)
      for (const follower of [...log.followers]) {
        follower.detach?.()
        followShared(logId, follower, info)
      }
      log.followers.clear()
    }

    function flush() {
      scheduled = false
      if (inflight || lost.signal.aborted) return
      if (pending.length === 0) return
      inflight = pending
      pending = []
      send(inflight)
    }

    function send(batch: LoggedEvent[]) {
      const last = batch.at(-1)!
      const final = last.final
      const args = [
        String(batch[0]!.seq - 1),
        String(last.seq),
        final ? '1' : '0',
        JSON.stringify(batch.map((e) => e.data)),
        String(leaseMs),
        String(final ? options.retentionMs : options.maxLifeMs),
      ]
      script('append', logKeys(logId), args).then(
        (result) => {
          if (inflight !== batch) return
          if (result === 0) return lose('a follower ended the log (its lease had lapsed)')
          if (result === -1) return lose('Redis lost the log', undefined, 'unreachable')
          failingSince = 0
          inflight = undefined
          log.commit(batch)
          settle()
          if (final) finish()
          else if (pending.length > 0) flush()
        },
        (err) => {
          if (inflight !== batch) return
          failingSince ||= Date.now()
          // Past the lease, a follower may already have ended the log: the producer stops here.
          if (Date.now() - failingSince > leaseMs) return lose('its events could not be stored', err, 'unreachable')
          retry = setTimeout(() => send(batch), RETRY_MS)
        },
      )
    }

    function finish() {
      clearInterval(renew)
      stops.delete(halt)
      keepLocal(log)
    }

    function push(data: string, final: boolean): number {
      if (ended) throw new Error(`log ${logId} has already ended`)
      if (lost.signal.aborted) return assigned
      pending.push({ seq: ++assigned, data, final })
      if (!scheduled && !inflight) {
        scheduled = true
        setImmediate(flush)
      }
      return assigned
    }

    function written(): Promise<void> {
      if (lost.signal.aborted) return Promise.reject(new Error(`log ${logId} was lost`))
      if (log.lastSeq >= assigned) return Promise.resolve()
      return new Promise((resolve, reject) => waiters.push({ seq: assigned, resolve, reject }))
    }

    // Closing the instance stops the producer as a dying process would: no more writes, nothing handed over.
    const halt = () => {
      clearInterval(renew)
      clearTimeout(retry)
      lost.abort(new Error('closed'))
      pending = []
      inflight = undefined
    }
    stops.add(halt)

    return {
      append: (data) => push(data, false),
      async end(data) {
        if (ended) return
        push(data, true)
        ended = true
        await written().catch(() => undefined)
      },
      written,
      opened,
      lost: lost.signal,
      abandon: () => lose('abandoned'),
    }
  }

  /** Keeps a log that ended here for clients resuming at once, then forgets it. */
  function keepLocal(log: LocalLog) {
    keepFor(Math.min(options.retentionMs, LOCAL_KEEP_MS), () => {
      if (produced.get(log.id) === log) produced.delete(log.id)
    })
  }

  /**
   * Ends a produced log in this process only, its store unreachable or its shared copy lost: the followers here
   * get what was never stored, then the `unavailable` events (nothing more when the final event was among the
   * unstored); the handlers record it first, when it was ever in the store (`record`). Followers elsewhere end by
   * themselves the same way.
   */
  async function endHere(log: LocalLog, unstored: LoggedEvent[], record: boolean) {
    const complete = unstored.at(-1)?.final === true
    const ending = complete ? [] : interruptionEvents(unavailable(log.info), unstored.at(-1)?.seq ?? log.lastSeq)
    if (!complete && record) await interrupted(log, [...log.events, ...unstored, ...ending], 'unreachable')
    log.commit([...unstored, ...ending])
    keepLocal(log)
  }

  /** Feeds `follower` from the shared log, through this process's one reader of that log. */
  function followShared(logId: string, follower: Follower, info?: string) {
    let mirror = mirrors.get(logId)
    if (!mirror) {
      mirror = { log: new LocalLog(logId, info ?? ''), stopped: false }
      mirrors.set(logId, mirror)
      void read(mirror)
    }
    const current = mirror
    current.log.attach(follower)
    const detach = follower.detach
    follower.detach = () => {
      detach?.()
      if (current.log.followers.size === 0 && !current.log.ended) {
        current.stopped = true
        if (mirrors.get(logId) === current) mirrors.delete(logId)
      }
    }
  }

  async function read(mirror: Mirror) {
    const logId = mirror.log.id
    const done = () => {
      mirror.stopped = true
      if (mirrors.get(logId) === mirror) mirrors.delete(logId)
    }
    let connection: Awaited<ReturnType<RedisManager['blocking']>> | undefined
    let pause = RETRY_MS
    let failingSince = 0
    while (!mirror.stopped && !closed) {
      try {
        connection ??= await redis.blocking()
        const seq = mirror.log.lastSeq
        const reply = await connection.send('XREAD', ['BLOCK', String(pollMs), 'COUNT', '100', 'STREAMS', keys.log(logId), `0-${seq}`], pollMs + 1000)
        pause = RETRY_MS
        failingSince = 0
        const entries = streamEntries(reply)
        if (entries.length > 0) {
          for (const entry of entries) {
            const last = Number(entry.id.split('-')[1])
            const data = JSON.parse(entry.fields.e ?? '[]') as string[]
            const first = last - data.length + 1
            if (first > mirror.log.lastSeq + 1) {
              // Part of the log is gone (Redis lost it): this follower ends with an interruption of its own.
              endLocally(mirror)
              break
            }
            const final = entry.fields.d !== undefined
            const events = data.map((d, i) => ({ seq: first + i, data: d, final: final && i === data.length - 1 })).filter((e) => e.seq > mirror.log.lastSeq)
            // Every process that reads an interruption records it (idempotently) before its followers see the end, so
            // it is recorded even when the process that wrote it dies right after.
            if (final && entry.fields.i !== undefined) await interrupted(mirror.log, [...mirror.log.events, ...events])
            mirror.log.commit(events)
          }
          if (mirror.log.ended) break
          continue
        }
        const payloads = options.interruption(mirror.log.info)
        const result = await script('interrupt', logKeys(logId), [String(seq), JSON.stringify(payloads), String(payloads.length), String(options.retentionMs)])
        if (result === -1) {
          endLocally(mirror)
          break
        }
      } catch (err) {
        connection?.release(true)
        connection = undefined
        failingSince ||= Date.now()
        // As long as a producer keeps trying to store (a lease), and no longer: then the follower ends here.
        if (Date.now() - failingSince >= leaseMs) {
          warn(`reading ${logId} failed for ${leaseMs} ms; its followers here end with the unavailable events`, err)
          endLocally(mirror)
          break
        }
        warn(`reading ${logId} failed; retrying`, err)
        await Bun.sleep(pause)
        pause = Math.min(pause * 2, 1000)
      }
    }
    connection?.release()
    done()
  }

  /** Ends a followed log here: the shared log lost part of it, or cannot be read. Its producer records its own end. */
  function endLocally(mirror: Mirror) {
    mirror.log.commit(interruptionEvents(unavailable(mirror.log.info), mirror.log.lastSeq))
  }

  async function interrupted(log: LocalLog, events: LoggedEvent[], cause: InterruptionCause = 'producer_gone') {
    for (const handler of handlers)
      await Promise.resolve(handler(log.id, log.info, events, cause)).catch((err) => warn(`interruption handler for ${log.id} failed`, err))
  }

  async function infoOf(logId: string): Promise<string | undefined> {
    const mine = produced.get(logId) ?? mirrors.get(logId)?.log
    if (mine) return mine.info
    const text = await redis.send('GET', [keys.info(logId)])
    return text === null || text === undefined ? undefined : String(text)
  }

  return {
    open,
    info: infoOf,
    async lastSeq(logId) {
      const mine = produced.get(logId)
      if (mine) return mine.lastSeq
      const [top, info] = await redis.run((client) =>
        Promise.all([client.send('XREVRANGE', [keys.log(logId), '+', '-', 'COUNT', '1']), client.get(keys.info(logId))]),
      )
      const entry = streamEntries({ [keys.log(logId)]: top })[0]
      if (entry) return Number(entry.id.split('-')[1])
      return info === null ? undefined : 0
    },
    async follow(logId, afterSeq, listener) {
      const follower = newFollower(afterSeq, listener)
      const mine = produced.get(logId)
      if (mine) mine.attach(follower)
      else {
        const info = await infoOf(logId)
        if (info === undefined) return undefined
        followShared(logId, follower, info)
      }
      return stopper(follower)
    },
    onInterrupted(handler) {
      handlers.push(handler)
    },
    async remove(logId) {
      produced.delete(logId)
      const mirror = mirrors.get(logId)
      if (mirror) mirror.stopped = true
      mirrors.delete(logId)
      await redis.send('DEL', logKeys(logId))
    },
    async close() {
      for (const halt of [...stops]) halt()
      closed = true
      for (const t of timers) clearTimeout(t)
      timers.clear()
      for (const m of mirrors.values()) m.stopped = true
      mirrors.clear()
    },
  }
}

/** XREAD's reply (RESP3 map or RESP2 arrays) as entries with their fields. */
function streamEntries(reply: unknown): { id: string; fields: Record<string, string> }[] {
  if (!reply) return []
  const streams: unknown[] = Array.isArray(reply) ? reply.map((s) => (s as unknown[])[1]) : Object.values(reply as Record<string, unknown>)
  const out: { id: string; fields: Record<string, string> }[] = []
  for (const entries of streams)
    for (const entry of (entries as unknown[]) ?? []) {
      const [id, raw] = entry as [string, unknown]
      const fields: Record<string, string> = {}
      if (Array.isArray(raw)) for (let i = 0; i + 1 < raw.length; i += 2) fields[String(raw[i])] = String(raw[i + 1])
      else if (raw && typeof raw === 'object') for (const [k, v] of Object.entries(raw)) fields[k] = String(v)
      out.push({ id: String(id), fields })
    }
  return out
}
