/**
 * The message log of every agent task: each message the server sends about a task, numbered from 1 (`seq`),
 * kept while the task runs and for the retention time after it ends, so a client that reconnects gets exactly
 * what it missed. The messages are a core event log (src/event-log), in memory or shared through Redis; what is
 * the agents' own: the JSON envelope (`type`, `taskId`, `seq` first), the task's state (status, step, percent)
 * and each user's recent tasks, and the `task_interrupted` error that ends a task whose process died.
 */
import { createMemoryEventLog, createRedisEventLog, type EventLog, type InterruptionCause, type LoggedEvent } from '../../../src/event-log/index.ts'
import type { Logger } from '../../../src/log.ts'
import { closingOwnConnection, createRedisManager, type RedisManager } from '../../../src/redis.ts'
import { FINISHED_STATUSES, type TaskStatus } from '../schemas.ts'

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
  /** Resolves once every message appended so far can be read by other processes; rejects if it cannot be. */
  written(): Promise<void>
  /** Aborted when the log was taken from this process: the task cannot be followed any more and should stop. */
  readonly lost: AbortSignal
  /**
   * Stops writing without ending the log, as a dying process would: with a shared log, the next follower anywhere
   * ends it once the lease lapses, with the interruption (a develop task's names the task that goes on from it).
   */
  abandon(): void
}

export interface TaskLog {
  /** Whether other processes read this log (Redis): only then can another process take a task over. */
  readonly shared: boolean
  open(meta: Omit<TaskMeta, 'status'>): TaskWriter
  meta(taskId: string): Promise<(TaskMeta & { lastSeq: number }) | undefined>
  /** The user's tasks, newest first. */
  recent(userId: string, limit: number): Promise<TaskMeta[]>
  /**
   * Replays the messages after `afterSeq` to `listener`, then calls it with each new one until the task ends or
   * the returned function is called. Undefined when the task is unknown or expired.
   */
  follow(taskId: string, afterSeq: number, listener: TaskListener): Promise<(() => void) | undefined>
  /**
   * Calls `handler` with the state of a task whose process died, in each process that finds the interruption, before
   * that process's followers see the task end; and in the task's own process when it ended the task's log there
   * because Redis was unreachable (`cause` says which).
   */
  onInterrupted(handler: (meta: TaskMeta, cause: InterruptionCause) => Promise<void> | void): void
  /** True for the one caller, among every process, that is to resume the task. */
  claimResumption(taskId: string): Promise<boolean>
  close(): Promise<void>
}

/** The wire text of one message; `type`, `taskId` and `seq` first, so they read well in logs. */
export function envelope(taskId: string, seq: number, message: TaskMessage): string {
  const { type, ...fields } = message
  return JSON.stringify({ type, taskId, seq, ...fields })
}

/** The logged form of a message (no envelope), and the wire text made from it. */
const logged = (message: TaskMessage) => envelope('', 0, message).replace(/,"taskId":"","seq":0/, '')
// Every follower of a task in this process is handed the same event objects: the text is made once, not per follower.
const wireTexts = new WeakMap<LoggedEvent, string>()

function wire(taskId: string, event: LoggedEvent): string {
  const made = wireTexts.get(event)
  if (made !== undefined) return made
  // Logged text starts `{"type":"<type>"`; the envelope goes right after it.
  const cut = event.data.indexOf('"', 9) + 1
  const text = `${event.data.slice(0, cut)},"taskId":${JSON.stringify(taskId)},"seq":${event.seq}${event.data.slice(cut)}`
  wireTexts.set(event, text)
  return text
}

const INTERRUPTED: TaskMessage = {
  type: 'error',
  status: 'failed',
  code: 'task_interrupted',
  message: 'The server process running this task stopped before it finished; send the command again',
}

/** Commands whose task goes on by itself, as a `continue` task, when the process running it dies. */
export const RESUMED_COMMANDS: readonly string[] = ['develop', 'continue']

/** The id of the task that goes on from `taskId` when its process dies: the same in every process that finds it. */
export function resumedTaskId(taskId: string): string {
  return `task_${new Bun.CryptoHasher('sha256').update(`resumed:${taskId}`).digest('hex').slice(0, 32)}`
}

/** The interruption that ends a task whose process died; a develop task's names the task it goes on as. */
function interruption(info: string): string[] {
  const meta = JSON.parse(info) as Pick<TaskMeta, 'taskId' | 'command'>
  if (!RESUMED_COMMANDS.includes(meta.command)) return [logged(INTERRUPTED)]
  const resumedAs = resumedTaskId(meta.taskId)
  return [
    logged({
      ...INTERRUPTED,
      message: `The server process running this task stopped before it finished; it goes on from its last completed step as task ${resumedAs} (subscribe to it)`,
      resumedAs,
    }),
  ]
}

/** The end of a task whose log could not be stored (Redis unreachable, or it lost the log): the task stopped. */
function unavailable(info: string): string[] {
  const meta = JSON.parse(info) as Pick<TaskMeta, 'taskId' | 'command'>
  const goOn = RESUMED_COMMANDS.includes(meta.command)
    ? `; send \`continue\` with taskId ${meta.taskId} to go on from its last completed step`
    : '; send the command again'
  return [logged({ ...INTERRUPTED, message: `The task log could not be reached (Redis), so the task stopped${goOn} once the service is available again` })]
}

/** Finished tasks kept per user in one process by default, however long their retention has still to run. */
export const DEFAULT_TASKS_KEPT_PER_USER = 1000

const isFinished = (status: TaskStatus) => FINISHED_STATUSES.includes(status)

/** Where task states and each user's recent tasks are kept. */
interface TaskDirectory {
  claimResumption(taskId: string): Promise<boolean>
  save(meta: TaskMeta, running: boolean): void
  load(taskId: string): Promise<TaskMeta | undefined>
  recent(userId: string, limit: number): Promise<TaskMeta[]>
  close(): void
}

function createTaskLog(events: EventLog, directory: TaskDirectory, shared: boolean): TaskLog {
  return {
    shared,
    open(partial) {
      const meta: TaskMeta = { ...partial, status: 'queued' }
      const producer = events.open(meta.taskId, JSON.stringify(meta))
      directory.save(meta, true)
      let ended = false
      let seq = 0
      return {
        append(message, final = false) {
          if (ended) throw new Error(`task ${meta.taskId} has already ended`)
          const data = logged(message)
          if (!final) seq = producer.append(data)
          else {
            ended = true
            seq += 1
            meta.finishedAt = Date.now()
            directory.save(meta, false)
            void producer.end(data)
          }
          return wire(meta.taskId, { seq, data, final })
        },
        update(state) {
          Object.assign(meta, state)
          directory.save(meta, !isFinished(meta.status))
        },
        written: () => producer.written(),
        lost: producer.lost,
        abandon: () => producer.abandon(),
      }
    },
    async meta(taskId) {
      const [meta, lastSeq] = await Promise.all([directory.load(taskId), events.lastSeq(taskId)])
      return meta && lastSeq !== undefined ? { ...meta, lastSeq } : undefined
    },
    recent: (userId, limit) => directory.recent(userId, limit),
    onInterrupted(handler) {
      events.onInterrupted(async (_taskId, info, _events, cause) => {
        await handler(JSON.parse(info) as TaskMeta, cause)
      })
    },
    claimResumption: (taskId) => directory.claimResumption(taskId),
    follow(taskId, afterSeq, listener) {
      return events.follow(taskId, afterSeq, (batch) => {
        for (const event of batch) listener(wire(taskId, event), event.seq, event.final)
      })
    },
    async close() {
      directory.close()
      await events.close()
    },
  }
}

export function createMemoryTaskLog(options: { retentionSeconds: number; keptPerUser?: number }): TaskLog {
  const retentionMs = options.retentionSeconds * 1000
  const keptPerUser = options.keptPerUser ?? DEFAULT_TASKS_KEPT_PER_USER
  const tasks = new Map<string, TaskMeta>()
  const byUser = new Map<string, Set<string>>()
  const timers = new Set<ReturnType<typeof setTimeout>>()
  const retiring = new Set<string>()
  const forget = (meta: TaskMeta) => {
    tasks.delete(meta.taskId)
    retiring.delete(meta.taskId)
    const own = byUser.get(meta.userId)
    own?.delete(meta.taskId)
    if (own?.size === 0) byUser.delete(meta.userId)
  }
  // Retention bounds time, this bounds count: a busy user's oldest finished tasks go first.
  const dropOldestFinished = (userId: string) => {
    const own = byUser.get(userId)
    if (!own || own.size <= keptPerUser) return
    for (const id of own) {
      if (own.size <= keptPerUser) break
      const meta = tasks.get(id)
      if (meta?.finishedAt !== undefined) forget(meta)
    }
  }
  const events = createMemoryEventLog({ interruption, retentionMs, maxLifeMs: Infinity })
  events.onInterrupted((taskId) => {
    const meta = tasks.get(taskId)
    if (meta) Object.assign(meta, { status: 'failed', finishedAt: Date.now() })
  })
  const resumed = new Set<string>()
  return createTaskLog(
    events,
    {
      async claimResumption(taskId) {
        if (resumed.has(taskId)) return false
        resumed.add(taskId)
        return true
      },
      save(meta, running) {
        if (!tasks.has(meta.taskId)) {
          tasks.set(meta.taskId, meta)
          let own = byUser.get(meta.userId)
          if (!own) byUser.set(meta.userId, (own = new Set()))
          own.add(meta.taskId)
        }
        if (!running && meta.finishedAt !== undefined && !retiring.has(meta.taskId)) {
          retiring.add(meta.taskId)
          dropOldestFinished(meta.userId)
          const timer = setTimeout(() => {
            timers.delete(timer)
            forget(meta)
          }, retentionMs)
          timers.add(timer)
        }
      },
      load: async (taskId) => tasks.get(taskId),
      async recent(userId, limit) {
        // The set keeps creation order, so this reads only `limit` of them.
        const ids = [...(byUser.get(userId) ?? [])]
        const out: TaskMeta[] = []
        for (let i = ids.length - 1; i >= 0 && out.length < limit; i--) out.push(tasks.get(ids[i]!)!)
        return out
      },
      close() {
        for (const timer of timers) clearTimeout(timer)
        timers.clear()
      },
    },
    false,
  )
}

export interface RedisTaskLogOptions {
  /** The process's Redis connection manager; or `url` for a connection of the log's own. */
  redis?: RedisManager
  url?: string
  retentionSeconds: number
  /** Longest a task may run; bounds the life of a running task's keys. */
  maxTaskSeconds: number
  logger: Logger
  /** Accepted for the memory log's sake; Redis keeps every task for the retention time. */
  keptPerUser?: number
  /** How long the producer's lease lives without renewal. Default 6000 ms (renewed every third of it). */
  leaseMs?: number
  /** How long a follower's blocking read waits before checking the lease. Default 1000 ms. */
  pollMs?: number
  keyPrefix?: string
}

export function createRedisTaskLog(options: RedisTaskLogOptions): TaskLog {
  const prefix = options.keyPrefix ?? 'agent:'
  const redis = options.redis ?? createRedisManager({ url: options.url!, logger: options.logger })
  const retentionMs = options.retentionSeconds * 1000
  const runningTtlMs = (options.maxTaskSeconds + options.retentionSeconds) * 1000
  const keys = { meta: (id: string) => `${prefix}task:${id}`, user: (userId: string) => `${prefix}user:${userId}` }
  // The state of tasks running here, so updates and reads do not wait for Redis.
  const mine = new Map<string, TaskMeta>()
  const warn = (what: string) => (err: unknown) => options.logger.warn(`agent task log: ${what} failed`, { err })
  const events = createRedisEventLog({
    redis,
    logger: options.logger,
    keyPrefix: prefix,
    interruption,
    unavailable,
    retentionMs,
    maxLifeMs: runningTtlMs,
    leaseMs: options.leaseMs,
    pollMs: options.pollMs,
  })
  const readMeta = async (taskId: string) => {
    const text = await redis.send('GET', [keys.meta(taskId)])
    return text ? (JSON.parse(String(text)) as TaskMeta) : undefined
  }
  events.onInterrupted(async (taskId) => {
    const meta = await readMeta(taskId)
    if (meta && !isFinished(meta.status))
      await redis.send('SET', [keys.meta(taskId), JSON.stringify({ ...meta, status: 'failed', finishedAt: Date.now() }), 'PX', String(retentionMs)])
  })
  const log = createTaskLog(
    events,
    {
      async claimResumption(taskId) {
        const claimed = await redis.send('SET', [`${prefix}resumed:${taskId}`, '1', 'NX', 'PX', String(runningTtlMs)])
        return claimed !== null
      },
      save(meta, running) {
        const first = !mine.has(meta.taskId) && running
        if (running) mine.set(meta.taskId, meta)
        else mine.delete(meta.taskId)
        const ttl = String(running ? runningTtlMs : retentionMs)
        void redis
          .run((client) =>
            Promise.all([
              client.send('SET', [keys.meta(meta.taskId), JSON.stringify(meta), 'PX', ttl]),
              ...(first
                ? [
                    client.send('ZADD', [keys.user(meta.userId), String(meta.createdAt), meta.taskId]),
                    client.send('PEXPIRE', [keys.user(meta.userId), String(runningTtlMs)]),
                  ]
                : []),
            ]),
          )
          .catch(warn('saving the task state'))
      },
      load: async (taskId) => mine.get(taskId) ?? (await readMeta(taskId)),
      async recent(userId, limit) {
        const ids = ((await redis.send('ZREVRANGE', [keys.user(userId), '0', String(limit - 1)])) as string[] | null) ?? []
        const metas = await Promise.all(ids.map((id) => mine.get(String(id)) ?? readMeta(String(id))))
        return metas.filter((m): m is TaskMeta => m !== undefined)
      },
      close() {
        mine.clear()
      },
    },
    true,
  )
  return closingOwnConnection(log, options.redis ? undefined : redis)
}
