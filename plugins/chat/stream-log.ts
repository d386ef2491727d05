/**
 * The event log of each generation: every SSE frame it produced, in order, so a client that lost its
 * connection gets exactly what it missed. Frames carry `id: <generationId>:<seq>` (seq from 1).
 *
 * In memory by default. With Redis, each generation is also a Redis stream (entry ids `0-<last seq>`,
 * each entry a batch of frames), so any process can follow it; the producing process keeps a lease
 * key alive, and a follower that finds the lease gone before the end writes the interruption itself.
 */
import { RedisClient } from 'bun'
import type { Logger } from '../../src/log.ts'

export interface GenerationMeta {
  generationId: string
  chatId: string
  userId: string
  startedAt: number
}

export interface ProducerLog {
  /** Appends one chunk (its JSON text); returns its sequence number. */
  append(data: string): number
  /** Writes the closing `[DONE]` and marks the log complete. */
  end(): Promise<void>
}

export interface StreamLog {
  open(meta: GenerationMeta): ProducerLog
  /** The chat's running generation, if any. */
  active(chatId: string): Promise<GenerationMeta | undefined>
  /** The generation's details while its log (running or finished, not expired) exists. */
  meta(generationId: string): Promise<GenerationMeta | undefined>
  /** Frames after `afterSeq`, batched, until the end; live frames as they come. */
  follow(generationId: string, afterSeq: number, signal: AbortSignal): AsyncIterable<string>
  close(): Promise<void>
}

export const DONE = '[DONE]'

/** The wire text of one logged event. `data` is JSON text or `[DONE]`, always one line (JSON escapes CR and LF). */
export function frame(generationId: string, seq: number, data: string): string {
  return `id: ${generationId}:${seq}\ndata: ${data}\n\n`
}

/** `<generationId>:<seq>` from a Last-Event-ID header; undefined when it is not one of ours. */
export function parseEventId(value: string | null | undefined): { generationId: string; seq: number } | undefined {
  const match = value ? /^(gen_[A-Za-z0-9]+):(\d{1,9})$/.exec(value.trim()) : null
  return match ? { generationId: match[1]!, seq: Number(match[2]) } : undefined
}

interface LocalGeneration {
  meta: GenerationMeta
  frames: string[]
  done: boolean
  wake: (() => void)[]
}

function localFollower(generation: LocalGeneration) {
  const waitForMore = (signal: AbortSignal) =>
    new Promise<void>((resolve) => {
      const onAbort = () => resolve()
      signal.addEventListener('abort', onAbort, { once: true })
      generation.wake.push(() => {
        signal.removeEventListener('abort', onAbort)
        resolve()
      })
    })
  return async function* follow(afterSeq: number, signal: AbortSignal): AsyncGenerator<string> {
    let sent = Math.max(0, afterSeq)
    while (!signal.aborted) {
      const frames = generation.frames
      if (sent < frames.length) {
        let batch = frames[sent++]!
        while (sent < frames.length) batch += frames[sent++]
        yield batch
        continue
      }
      if (generation.done) return
      await waitForMore(signal)
    }
  }
}

/** The in-process part: what this process produces, kept for `ttlMs` after its end. */
function createLocalLogs(ttlMs: number) {
  const generations = new Map<string, LocalGeneration>()
  const activeByChat = new Map<string, string>()
  const timers = new Set<ReturnType<typeof setTimeout>>()

  const wakeAll = (g: LocalGeneration) => {
    const wake = g.wake
    g.wake = []
    for (const w of wake) w()
  }

  return {
    generations,
    open(meta: GenerationMeta, onFrame?: (seq: number, text: string, done: boolean) => void) {
      const g: LocalGeneration = { meta, frames: [], done: false, wake: [] }
      generations.set(meta.generationId, g)
      activeByChat.set(meta.chatId, meta.generationId)
      const push = (data: string, done: boolean) => {
        const seq = g.frames.length + 1
        const text = frame(meta.generationId, seq, data)
        g.frames.push(text)
        onFrame?.(seq, text, done)
        if (g.wake.length) wakeAll(g)
        return seq
      }
      return {
        append: (data: string) => push(data, false),
        end() {
          if (g.done) return
          push(DONE, true)
          g.done = true
          wakeAll(g)
          if (activeByChat.get(meta.chatId) === meta.generationId) activeByChat.delete(meta.chatId)
          const timer = setTimeout(() => {
            timers.delete(timer)
            generations.delete(meta.generationId)
          }, ttlMs)
          timers.add(timer)
        },
      }
    },
    active(chatId: string): GenerationMeta | undefined {
      const id = activeByChat.get(chatId)
      return id ? generations.get(id)?.meta : undefined
    },
    follow(generationId: string, afterSeq: number, signal: AbortSignal) {
      const g = generations.get(generationId)
      return g ? localFollower(g)(afterSeq, signal) : undefined
    },
    close() {
      for (const t of timers) clearTimeout(t)
      timers.clear()
    },
  }
}

export function createMemoryStreamLog(options: { ttlSeconds: number }): StreamLog {
  const local = createLocalLogs(options.ttlSeconds * 1000)
  return {
    open(meta) {
      const producer = local.open(meta)
      return { append: producer.append, end: async () => producer.end() }
    },
    async active(chatId) {
      return local.active(chatId)
    },
    async meta(generationId) {
      return local.generations.get(generationId)?.meta
    },
    follow(generationId, afterSeq, signal) {
      return local.follow(generationId, afterSeq, signal) ?? (async function* () {})()
    },
    async close() {
      local.close()
    },
  }
}

export interface RedisStreamLogOptions {
  url: string
  ttlSeconds: number
  /** Longest a generation may run; bounds the active pointer's life. */
  maxGenerationSeconds: number
  logger: Logger
  /** How long the producer's lease lives without renewal. Default 6000 ms (renewed every third of it). */
  leaseMs?: number
  /** How long a follower's blocking read waits before checking the lease. Default 1000 ms. */
  pollMs?: number
  keyPrefix?: string
}

const interruptedChunk = JSON.stringify({
  type: 'error',
  errorText: 'generation_interrupted: the server producing this answer stopped before it finished; send the message again',
})

// Deletes the active pointer only if it still names this generation.
const RELEASE_ACTIVE = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`

export function createRedisStreamLog(options: RedisStreamLogOptions): StreamLog {
  const prefix = options.keyPrefix ?? 'chat:'
  const ttlMs = options.ttlSeconds * 1000
  const leaseMs = options.leaseMs ?? 6000
  const pollMs = options.pollMs ?? 1000
  const activeTtlMs = (options.maxGenerationSeconds + options.ttlSeconds) * 1000
  const keys = {
    log: (id: string) => `${prefix}log:${id}`,
    lease: (id: string) => `${prefix}lease:${id}`,
    meta: (id: string) => `${prefix}meta:${id}`,
    active: (chatId: string) => `${prefix}active:${chatId}`,
  }
  const commands = new RedisClient(options.url, { autoReconnect: true, enableOfflineQueue: true })
  // Local copies are only needed while this process may still have followers; Redis keeps the rest.
  const local = createLocalLogs(Math.min(ttlMs, 60_000))
  const followers = new Set<RedisClient>()
  const warn = (what: string) => (err: unknown) => options.logger.warn(`chat stream log: ${what} failed`, { err })

  const send = (command: string, args: string[]) => commands.send(command, args)

  return {
    open(meta) {
      const id = meta.generationId
      const metaText = JSON.stringify(meta)
      void Promise.all([
        send('SET', [keys.lease(id), '1', 'PX', String(leaseMs)]),
        send('SET', [keys.meta(id), metaText, 'PX', String(activeTtlMs)]),
        send('SET', [keys.active(meta.chatId), id, 'PX', String(activeTtlMs)]),
      ]).catch(warn('open'))
      const lease = setInterval(() => void send('SET', [keys.lease(id), '1', 'PX', String(leaseMs)]).catch(warn('lease')), leaseMs / 3)

      let pending: string[] = []
      let lastSeq = 0
      let ended = false
      let flushing: Promise<void> = Promise.resolve()
      let scheduled = false
      const flush = () => {
        scheduled = false
        if (pending.length === 0) return
        const batch = pending
        pending = []
        const args = [keys.log(id), `0-${lastSeq}`, 'f', JSON.stringify(batch)]
        if (ended) args.push('d', '1')
        // Sent in order on one connection, so entry ids arrive increasing.
        flushing = flushing.then(() =>
          send('XADD', args)
            .then(() => send('PEXPIRE', [keys.log(id), String(ended ? ttlMs : activeTtlMs)]))
            .then(() => undefined, warn('append')),
        )
      }
      const producer = local.open(meta, (seq, text) => {
        lastSeq = seq
        pending.push(text)
        if (!scheduled) {
          scheduled = true
          setImmediate(flush)
        }
      })
      return {
        append: producer.append,
        async end() {
          if (ended) return
          clearInterval(lease)
          ended = true
          producer.end()
          flush()
          await flushing
          await Promise.all([
            send('PEXPIRE', [keys.meta(id), String(ttlMs)]),
            send('DEL', [keys.lease(id)]),
            send('EVAL', [RELEASE_ACTIVE, '1', keys.active(meta.chatId), id]),
          ]).catch(warn('end'))
        },
      }
    },

    async active(chatId) {
      const mine = local.active(chatId)
      if (mine) return mine
      const id = await send('GET', [keys.active(chatId)])
      if (!id) return undefined
      const meta = await send('GET', [keys.meta(String(id))])
      return meta ? (JSON.parse(String(meta)) as GenerationMeta) : undefined
    },

    async meta(generationId) {
      const mine = local.generations.get(generationId)?.meta
      if (mine) return mine
      const text = await send('GET', [keys.meta(generationId)])
      return text ? (JSON.parse(String(text)) as GenerationMeta) : undefined
    },

    follow(generationId, afterSeq, signal) {
      const mine = local.follow(generationId, afterSeq, signal)
      if (mine) return mine
      return followRemote(generationId, afterSeq, signal)
    },

    async close() {
      local.close()
      for (const f of followers) f.close()
      commands.close()
    },
  }

  async function* followRemote(generationId: string, afterSeq: number, signal: AbortSignal): AsyncGenerator<string> {
    // A blocking read holds its connection, so each remote follower has its own.
    const reader = new RedisClient(options.url, { autoReconnect: false })
    followers.add(reader)
    const stop = () => reader.close()
    signal.addEventListener('abort', stop, { once: true })
    let seq = Math.max(0, afterSeq)
    let quietChecks = 0
    try {
      while (!signal.aborted) {
        const reply = await reader.send('XREAD', ['BLOCK', String(pollMs), 'COUNT', '500', 'STREAMS', keys.log(generationId), `0-${seq}`])
        const entries = streamEntries(reply)
        if (entries.length === 0) {
          const [logExists, leaseExists] = await Promise.all([
            send('EXISTS', [keys.log(generationId)]),
            send('EXISTS', [keys.lease(generationId)]),
          ])
          if (!Number(leaseExists)) {
            // The producer is gone (or never wrote): finish the log for everyone who follows it.
            if (!Number(logExists) && ++quietChecks < 2) continue
            await writeInterruption(generationId, seq)
          }
          continue
        }
        let out = ''
        let finished = false
        for (const entry of entries) {
          const last = Number(entry.id.split('-')[1])
          const frames = JSON.parse(entry.fields.f ?? '[]') as string[]
          const first = last - frames.length + 1
          for (let i = Math.max(0, seq + 1 - first); i < frames.length; i++) out += frames[i]
          seq = Math.max(seq, last)
          if (entry.fields.d) finished = true
        }
        if (out) yield out
        if (finished) return
      }
    } catch (err) {
      if (!signal.aborted) throw err
    } finally {
      signal.removeEventListener('abort', stop)
      followers.delete(reader)
      reader.close()
    }
  }

  async function writeInterruption(generationId: string, seq: number) {
    const frames = [frame(generationId, seq + 1, interruptedChunk), frame(generationId, seq + 2, DONE)]
    // Fails harmlessly when someone else already appended past `seq`.
    await send('XADD', [keys.log(generationId), `0-${seq + 2}`, 'f', JSON.stringify(frames), 'd', '1'])
      .then(() => send('PEXPIRE', [keys.log(generationId), String(ttlMs)]))
      .catch(() => undefined)
    const metaText = await send('GET', [keys.meta(generationId)]).catch(() => null)
    if (metaText) {
      const meta = JSON.parse(String(metaText)) as GenerationMeta
      await send('EVAL', [RELEASE_ACTIVE, '1', keys.active(meta.chatId), generationId]).catch(() => undefined)
    }
  }
}

/** XREAD's reply (RESP2 arrays or RESP3 maps) as entries with their fields. */
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
