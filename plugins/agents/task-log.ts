/**
 * The message log of every agent task: each message the server sends about a task, numbered from 1 (`seq`),
 * kept while the task runs and for the retention time after it ends, so a client that reconnects gets exactly
 * what it missed. Followers are called synchronously, in order, after the replay, so nothing is lost or doubled.
 *
 * In memory by default. With Redis, the producing process also writes each message to a Redis stream
 * (`agent:log:<id>`, entry id `0-<seq>`) and publishes it on `agent:live:<id>`; a process following a task that
 * runs elsewhere keeps a mirror of its log, fed by one subscription per task however many local followers it
 * has. The producer holds a lease key; a mirror that finds the lease gone before the end writes the
 * interruption itself.
 */
import { RedisClient } from 'bun'
import type { Logger } from '../../src/log.ts'
import { FINISHED_STATUSES, type TaskStatus } from './model.ts'

export interface TaskMeta {
  taskId: string
  userId: string
  orgId: string
  command: string
  createdAt: number
  status: TaskStatus
  finishedAt?: number
  step?: string
  percent?: number
}

/** A task message without its envelope: `type` and fields; the log adds `taskId` and `seq`. */
export type TaskMessage = { type: string } & Record<string, unknown>

/** Receives the wire text of each message, in order; `final` is set on the task's last one. */
export type TaskListener = (text: string, seq: number, final: boolean) => void

export interface TaskWriter {
  /** Appends a message; `final` ends the log. Answers the wire text sent to followers. */
  append(message: TaskMessage, final?: boolean): string
  /** Status, step and percent as `status` and subscribe report them. */
  update(state: Partial<Pick<TaskMeta, 'status' | 'step' | 'percent'>>): void
  /** Resolves once every message appended so far can be read by other processes. */
  written(): Promise<void>
}

export interface TaskLog {
  open(meta: Omit<TaskMeta, 'status'>): TaskWriter
  meta(taskId: string): Promise<(TaskMeta & { lastSeq: number }) | undefined>
  /** The user's tasks, newest first. */
  recent(userId: string, limit: number): Promise<TaskMeta[]>
  /**
   * Replays the messages after `afterSeq` to `listener`, then calls it with each new one until the task ends or
   * the returned function is called. Undefined when the task is unknown or expired.
   */
  follow(taskId: string, afterSeq: number, listener: TaskListener): Promise<(() => void) | undefined>
  close(): Promise<void>
}

interface LocalTask {
  meta: TaskMeta
  messages: string[]
  listeners: Set<TaskListener>
  finished: boolean
  /** Set on mirrors of tasks running in another process. */
  mirror?: { release(): void }
}

/** The wire text of one message; `type`, `taskId` and `seq` first, so they read well in logs. */
export function envelope(taskId: string, seq: number, message: TaskMessage): string {
  const { type, ...fields } = message
  return JSON.stringify({ type, taskId, seq, ...fields })
}

/** Finished tasks kept per user in one process by default, however long their retention has still to run. */
export const DEFAULT_TASKS_KEPT_PER_USER = 1000

const isFinished = (status: TaskStatus) => FINISHED_STATUSES.includes(status)

function createLocalTasks(retentionMs: number, keptPerUser = DEFAULT_TASKS_KEPT_PER_USER) {
  const tasks = new Map<string, LocalTask>()
  const byUser = new Map<string, Set<string>>()
  const timers = new Set<ReturnType<typeof setTimeout>>()

  function forget(task: LocalTask) {
    tasks.delete(task.meta.taskId)
    const own = byUser.get(task.meta.userId)
    own?.delete(task.meta.taskId)
    if (own?.size === 0) byUser.delete(task.meta.userId)
  }

  // Retention bounds time, this bounds count: a busy user's oldest finished tasks go first.
  function dropOldestFinished(userId: string) {
    const own = byUser.get(userId)
    if (!own || own.size <= keptPerUser) return
    for (const id of own) {
      if (own.size <= keptPerUser) break
      const task = tasks.get(id)
      if (task?.finished) forget(task)
    }
  }

  return {
    tasks,
    add(meta: TaskMeta, mirror?: LocalTask['mirror']): LocalTask {
      const task: LocalTask = { meta, messages: [], listeners: new Set(), finished: isFinished(meta.status), mirror }
      tasks.set(meta.taskId, task)
      if (!mirror) {
        let own = byUser.get(meta.userId)
        if (!own) byUser.set(meta.userId, (own = new Set()))
        own.add(meta.taskId)
      }
      return task
    },
    /** Adds the message with the next seq and tells the followers. */
    push(task: LocalTask, text: string, final: boolean) {
      task.messages.push(text)
      const seq = task.messages.length
      if (final) task.finished = true
      for (const listener of task.listeners) listener(text, seq, final)
      if (final) {
        task.listeners.clear()
        if (!task.mirror) dropOldestFinished(task.meta.userId)
        const timer = setTimeout(() => {
          timers.delete(timer)
          forget(task)
        }, retentionMs)
        timers.add(timer)
      }
    },
    follow(task: LocalTask, afterSeq: number, listener: TaskListener): () => void {
      const messages = task.messages
      for (let seq = Math.max(0, afterSeq) + 1; seq <= messages.length; seq++) listener(messages[seq - 1]!, seq, task.finished && seq === messages.length)
      if (task.finished) return () => {}
      task.listeners.add(listener)
      return () => {
        task.listeners.delete(listener)
        if (task.listeners.size === 0 && task.mirror) task.mirror.release()
      }
    },
    /** The user's newest tasks first; the set keeps creation order, so this reads only `limit` of them. */
    recent(userId: string, limit: number): TaskMeta[] {
      const ids = [...(byUser.get(userId) ?? [])]
      const out: TaskMeta[] = []
      for (let i = ids.length - 1; i >= 0 && out.length < limit; i--) out.push(tasks.get(ids[i]!)!.meta)
      return out
    },
    forget,
    close() {
      for (const timer of timers) clearTimeout(timer)
      timers.clear()
    },
  }
}

function writerFor(
  local: ReturnType<typeof createLocalTasks>,
  task: LocalTask,
  onMessage?: (text: string, seq: number, final: boolean) => Promise<unknown> | void,
  onUpdate?: () => void,
): TaskWriter {
  let lastWrite: Promise<unknown> | void
  return {
    append(message, final = false) {
      if (task.finished) throw new Error(`task ${task.meta.taskId} has already ended`)
      const seq = task.messages.length + 1
      const text = envelope(task.meta.taskId, seq, message)
      if (final) task.meta.finishedAt = Date.now()
      local.push(task, text, final)
      lastWrite = onMessage?.(text, seq, final)
      return text
    },
    update(state) {
      Object.assign(task.meta, state)
      onUpdate?.()
    },
    async written() {
      await lastWrite
    },
  }
}

export function createMemoryTaskLog(options: { retentionSeconds: number; keptPerUser?: number }): TaskLog {
  const local = createLocalTasks(options.retentionSeconds * 1000, options.keptPerUser)
  return {
    open(meta) {
      return writerFor(local, local.add({ ...meta, status: 'queued' }))
    },
    async meta(taskId) {
      const task = local.tasks.get(taskId)
      return task && { ...task.meta, lastSeq: task.messages.length }
    },
    async recent(userId, limit) {
      return local.recent(userId, limit)
    },
    async follow(taskId, afterSeq, listener) {
      const task = local.tasks.get(taskId)
      return task && local.follow(task, afterSeq, listener)
    },
    async close() {
      local.close()
    },
  }
}

export interface RedisTaskLogOptions {
  url: string
  retentionSeconds: number
  /** Longest a task may run; bounds the life of a running task's keys. */
  maxTaskSeconds: number
  logger: Logger
  /** Finished tasks this process keeps per user (Redis keeps every task for the retention time). */
  keptPerUser?: number
  /** How long the producer's lease lives without renewal. Default 6000 ms (renewed every third of it). */
  leaseMs?: number
  keyPrefix?: string
}

// Appends the interruption only when nothing came after `seq`, so two mirrors noticing at once write it once.
const APPEND_IF_LAST = `
local last = redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', 1)
local lastSeq = 0
if last[1] then lastSeq = tonumber(string.match(last[1][1], '%-(%d+)$')) end
if lastSeq ~= tonumber(ARGV[1]) then return 0 end
redis.call('XADD', KEYS[1], '0-' .. (lastSeq + 1), 'm', ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
redis.call('PUBLISH', KEYS[2], ARGV[2])
return 1`

export function createRedisTaskLog(options: RedisTaskLogOptions): TaskLog {
  const prefix = options.keyPrefix ?? 'agent:'
  const retentionMs = options.retentionSeconds * 1000
  const runningTtlMs = (options.maxTaskSeconds + options.retentionSeconds) * 1000
  const leaseMs = options.leaseMs ?? 6000
  const keys = {
    log: (id: string) => `${prefix}log:${id}`,
    live: (id: string) => `${prefix}live:${id}`,
    meta: (id: string) => `${prefix}task:${id}`,
    lease: (id: string) => `${prefix}lease:${id}`,
    user: (userId: string) => `${prefix}user:${userId}`,
  }
  const commands = new RedisClient(options.url, { autoReconnect: true, enableOfflineQueue: true })
  const subscriber = new RedisClient(options.url, { autoReconnect: true, enableOfflineQueue: true })
  const local = createLocalTasks(Math.min(retentionMs, 60_000), options.keptPerUser)
  const mirrors = new Map<string, Promise<LocalTask | undefined>>()
  const warn = (what: string) => (err: unknown) => options.logger.warn(`agent task log: ${what} failed`, { err })
  const send = (command: string, args: string[]) => commands.send(command, args)

  async function readMeta(taskId: string): Promise<TaskMeta | undefined> {
    const text = await send('GET', [keys.meta(taskId)])
    return text ? (JSON.parse(String(text)) as TaskMeta) : undefined
  }

  /** A local copy of a task running elsewhere, kept while this process has followers for it. */
  function mirrorOf(taskId: string): Promise<LocalTask | undefined> {
    let pending = mirrors.get(taskId)
    if (!pending) {
      pending = startMirror(taskId).catch((err) => {
        mirrors.delete(taskId)
        throw err
      })
      mirrors.set(taskId, pending)
    }
    return pending
  }

  async function startMirror(taskId: string): Promise<LocalTask | undefined> {
    const meta = await readMeta(taskId)
    if (!meta) {
      mirrors.delete(taskId)
      return undefined
    }
    const early: string[] = []
    let task: LocalTask | undefined
    let leaseCheck: ReturnType<typeof setInterval> | undefined
    const release = () => {
      clearInterval(leaseCheck)
      void subscriber.unsubscribe(keys.live(taskId), onLive).catch(warn('unsubscribe'))
      mirrors.delete(taskId)
      if (task) local.forget(task)
    }
    const deliver = (text: string) => {
      const seq = seqOf(text)
      if (!task || seq !== task.messages.length + 1) return
      const final = isFinal(text)
      local.push(task, text, final)
      if (final) release()
    }
    function onLive(text: string) {
      if (task) deliver(text)
      else early.push(text)
    }
    // Subscribed before reading the stream, so nothing published in between is missed.
    await subscriber.subscribe(keys.live(taskId), onLive)
    const entries = (await send('XRANGE', [keys.log(taskId), '-', '+'])) as unknown
    task = local.add(meta, { release })
    for (const text of streamTexts(entries)) deliver(text)
    for (const text of early.splice(0)) deliver(text)
    if (!task.finished) {
      leaseCheck = setInterval(() => void checkLease(task!).catch(warn('lease check')), leaseMs)
    } else release()
    return task
  }

  async function checkLease(task: LocalTask) {
    if (task.finished || Number(await send('EXISTS', [keys.lease(task.meta.taskId)]))) return
    const seq = task.messages.length
    const text = envelope(task.meta.taskId, seq + 1, {
      type: 'error',
      status: 'failed',
      code: 'task_interrupted',
      message: 'The server process running this task stopped before it finished; send the command again',
    })
    const appended = await send('EVAL', [APPEND_IF_LAST, '2', keys.log(task.meta.taskId), keys.live(task.meta.taskId), String(seq), text, String(retentionMs)])
    if (Number(appended)) {
      const meta: TaskMeta = { ...task.meta, status: 'failed', finishedAt: Date.now() }
      await send('SET', [keys.meta(task.meta.taskId), JSON.stringify(meta), 'PX', String(retentionMs)])
    }
  }

  return {
    open(partial) {
      const meta: TaskMeta = { ...partial, status: 'queued' }
      const id = meta.taskId
      const task = local.add(meta)
      const saveMeta = (ttlMs: number) => send('SET', [keys.meta(id), JSON.stringify(task.meta), 'PX', String(ttlMs)]).catch(warn('meta'))
      void Promise.all([
        send('SET', [keys.lease(id), '1', 'PX', String(leaseMs)]),
        saveMeta(runningTtlMs),
        send('ZADD', [keys.user(meta.userId), String(meta.createdAt), id]),
        send('PEXPIRE', [keys.user(meta.userId), String(runningTtlMs)]),
      ]).catch(warn('open'))
      const lease = setInterval(() => void send('SET', [keys.lease(id), '1', 'PX', String(leaseMs)]).catch(warn('lease')), leaseMs / 3)
      // Sent in order on one connection, so stream entry ids arrive increasing.
      return writerFor(
        local,
        task,
        (text, seq, final) => {
          // One connection runs commands in order: once this entry is in, so is the task's meta.
          const appended = send('XADD', [keys.log(id), `0-${seq}`, 'm', text]).catch(warn('append'))
          void send('PUBLISH', [keys.live(id), text]).catch(warn('publish'))
          if (final) {
            clearInterval(lease)
            void Promise.all([
              send('PEXPIRE', [keys.log(id), String(retentionMs)]),
              saveMeta(retentionMs),
              send('DEL', [keys.lease(id)]),
            ]).catch(warn('end'))
          } else if (seq === 1) void send('PEXPIRE', [keys.log(id), String(runningTtlMs)]).catch(warn('expire'))
          return appended
        },
        () => void saveMeta(isFinished(task.meta.status) ? retentionMs : runningTtlMs),
      )
    },

    async meta(taskId) {
      const mine = local.tasks.get(taskId)
      if (mine) return { ...mine.meta, lastSeq: mine.messages.length }
      const [meta, length] = await Promise.all([readMeta(taskId), send('XLEN', [keys.log(taskId)])])
      return meta && { ...meta, lastSeq: Number(length) }
    },

    async recent(userId, limit) {
      const ids = ((await send('ZREVRANGE', [keys.user(userId), '0', String(limit - 1)])) as string[] | null) ?? []
      const metas = await Promise.all(ids.map((id) => local.tasks.get(id)?.meta ?? readMeta(String(id))))
      return metas.filter((m): m is TaskMeta => m !== undefined)
    },

    async follow(taskId, afterSeq, listener) {
      const task = local.tasks.get(taskId) ?? (await mirrorOf(taskId))
      return task && local.follow(task, afterSeq, listener)
    },

    async close() {
      local.close()
      subscriber.close()
      commands.close()
    },
  }
}

function seqOf(text: string): number {
  const match = /"seq":(\d+)/.exec(text)
  return match ? Number(match[1]) : 0
}

/** The last message of a task is its result, or an error that carries a status. */
function isFinal(text: string): boolean {
  return text.startsWith('{"type":"result"') || (text.startsWith('{"type":"error"') && text.includes('"status":'))
}

/** XRANGE's reply (RESP2 arrays or RESP3 maps) as the `m` field of each entry. */
function streamTexts(reply: unknown): string[] {
  if (!reply) return []
  const out: string[] = []
  const entries = Array.isArray(reply) ? reply : Object.entries(reply as Record<string, unknown>)
  for (const entry of entries) {
    const raw = (entry as [string, unknown])[1]
    if (Array.isArray(raw)) {
      for (let i = 0; i + 1 < raw.length; i += 2) if (String(raw[i]) === 'm') out.push(String(raw[i + 1]))
    } else if (raw && typeof raw === 'object') {
      const m = (raw as Record<string, unknown>).m
      if (m !== undefined) out.push(String(m))
    }
  }
  return out
}
