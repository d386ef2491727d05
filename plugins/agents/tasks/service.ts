/**
 * Agent tasks: a command accepted from a connection becomes a task that runs here whatever happens to the
 * connection, reporting through its task log (ack, progress with ETA, log lines, then result or error).
 * Cancelling reaches the task wherever it runs (Redis pub/sub between processes).
 */
import { AppError } from '../../../src/errors.ts'
import { createCancelChannel, type CancelChannel } from '../../../src/event-log/cancel.ts'
import type { Logger } from '../../../src/log.ts'
import type { UsageMeter } from '../../../src/usage/meter.ts'
import { StepProgress } from './eta.ts'
import { FINISHED_STATUSES, type CommandName } from '../schemas.ts'
import { RESUMED_COMMANDS, resumedTaskId, type TaskListener, type TaskLog, type TaskMeta, type TaskWriter } from './task-log.ts'
import type { Caller } from '../../../src/auth/caller.ts'

/** The caller a task runs for. */
export type AgentCaller = Caller

/** What a command's code gets: its checked params, a signal, and ways to report. */
export interface TaskContext {
  caller: AgentCaller
  taskId: string
  params: Record<string, unknown>
  signal: AbortSignal
  /** Starts step `index` (from 0) named `label`; `steps` updates the total when it becomes known. */
  step(index: number, label: string, steps?: number): void
  log(message: string, level?: 'info' | 'warn'): void
}

/** The caller's tasks as the service keeps them, for the commands that read them (`status`, `continue`). */
export interface TaskRecords {
  /** The caller's task; `task_not_found` for someone else's, an unknown or an expired one. */
  ownTask(caller: AgentCaller, taskId: string): Promise<TaskMeta & { lastSeq: number }>
  /** The caller's latest tasks, newest first (20 unless `limit` says). */
  recent(caller: AgentCaller, limit?: number): Promise<TaskMeta[]>
}

/** A task's context as the service hands it to every command: with the service's task records. */
export interface CommandContext extends TaskContext {
  tasks: TaskRecords
}

/** A command; one that reads no other task may take the narrower TaskContext. */
export interface CommandHandler<Context extends TaskContext = CommandContext> {
  /** Steps expected before the command knows better (a plan can change it). */
  steps: number
  run(context: Context): Promise<unknown>
}

export type CommandHandlers = Record<CommandName, CommandHandler>

export interface AgentServiceOptions {
  log: TaskLog
  commands: CommandHandlers
  logger: Logger
  meter?: Pick<UsageMeter, 'record'>
  taskTimeoutSeconds: number
  maxRunningTasksPerUser: number
  /** Told how each task ended (metrics). */
  onTaskEnd?: (command: CommandName, status: 'succeeded' | 'failed' | 'cancelled') => void
  /** Cancels reach the process running a task through it; in process only when unset. */
  cancels?: CancelChannel
}

/** An error a command throws to fail its task with a stable code. */
export class TaskError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message)
  }
}

export const newTaskId = () => `task_${Bun.randomUUIDv7('hex').replaceAll('-', '')}`

interface RunningTask {
  controller: AbortController
  done: Promise<void>
  userId: string
  /** The ack is readable by other processes. */
  recorded: Promise<void>
  command: CommandName
}

export function createAgentService(options: AgentServiceOptions) {
  const { log, logger } = options
  const cancels = options.cancels ?? createCancelChannel()
  const running = new Map<string, RunningTask>()
  const runningByUser = new Map<string, number>()
  /** Tasks a stopping process leaves to another one to go on with, rather than ending them. */
  const handedOver = new Set<string>()
  let closing = false

  function abortLocal(taskId: string, reason: TaskError): boolean {
    const task = running.get(taskId)
    if (!task) return false
    task.controller.abort(reason)
    return true
  }

  async function ownTask(caller: AgentCaller, taskId: string): Promise<TaskMeta & { lastSeq: number }> {
    const meta = await log.meta(taskId)
    if (!meta || meta.userId !== caller.userId) throw new TaskError('task_not_found', `No task ${taskId} of yours (it may have expired)`)
    return meta
  }
  const tasks: TaskRecords = { ownTask, recent: (caller, limit = 20) => log.recent(caller.userId, limit) }

  async function execute(
    taskId: string,
    caller: AgentCaller,
    command: CommandName,
    params: Record<string, unknown>,
    writer: TaskWriter,
    controller: AbortController,
  ) {
    const handler = options.commands[command]
    const progress = new StepProgress(handler.steps)
    const timeout = setTimeout(
      () => controller.abort(new TaskError('task_timeout', `The task reached its ${options.taskTimeoutSeconds} s limit`)),
      options.taskTimeoutSeconds * 1000,
    )
    const report = (fields: Record<string, unknown>) => writer.append({ type: 'progress', ...fields })
    let ended: 'succeeded' | 'failed' | 'cancelled' = 'failed'
    try {
      writer.update({ status: 'running' })
      report({ status: 'running', percent: 0, steps: progress.steps })
      const output = await handler.run({
        caller,
        taskId,
        params,
        signal: controller.signal,
        tasks,
        step(index, label, steps) {
          if (steps !== undefined) progress.setTotal(steps)
          progress.start(index)
          const percent = progress.percent()
          writer.update({ step: label, percent })
          report({ status: 'running', step: label, stepIndex: index, steps: progress.steps, percent, eta: progress.eta() })
        },
        log(message, level = 'info') {
          writer.append({ type: 'log', level, message })
        },
      })
      controller.signal.throwIfAborted()
      writer.update({ status: 'succeeded', percent: 100 })
      report({ status: 'succeeded', percent: 100, steps: progress.steps, eta: '0s' })
      writer.append({ type: 'result', status: 'succeeded', output: output ?? null }, true)
      ended = 'succeeded'
    } catch (thrown) {
      if (handedOver.delete(taskId)) {
        // Its log is left without an end: the next follower anywhere ends it naming the task that goes on from it.
        writer.abandon()
        return
      }
      const error = controller.signal.aborted && controller.signal.reason instanceof TaskError ? controller.signal.reason : thrown
      const failure = describeFailure(error)
      if (failure.code === 'internal_error') logger.error('agent task failed', { err: thrown, taskId, command })
      const status = failure.code === 'task_cancelled' ? 'cancelled' : 'failed'
      writer.update({ status })
      report({ status, steps: progress.steps })
      writer.append({ type: 'error', status, code: failure.code, message: failure.message }, true)
      ended = status
    } finally {
      clearTimeout(timeout)
      options.onTaskEnd?.(command, ended)
    }
  }

  /**
   * A develop task whose process died goes on here as a `continue` task with the id its interruption names, started
   * by the one process that claims it; the others wait until it is in the shared log, so their clients, told to
   * subscribe to it as the task ends, find it.
   */
  log.onInterrupted(async (meta, cause) => {
    // A task stopped because Redis was unreachable is not claimed by anyone: its client is told to `continue` it.
    // A stopping process claims nothing: the task goes on in a process that stays.
    if (cause !== 'producer_gone' || !RESUMED_COMMANDS.includes(meta.command) || closing) return
    const resumedAs = resumedTaskId(meta.taskId)
    if (await log.claimResumption(meta.taskId)) {
      try {
        const params = { taskId: meta.taskId, message: RESUME_MESSAGE }
        service.start({ userId: meta.userId, orgId: meta.orgId }, 'continue', params, undefined, resumedAs)
        await service.recorded(resumedAs)
        logger.info('agent task resumed', { taskId: meta.taskId, resumedAs })
      } catch (err) {
        logger.error('agent task not resumed', { err, taskId: meta.taskId, resumedAs })
      }
      return
    }
    for (let waited = 0; waited < RESUME_WAIT_MS && !(await log.meta(resumedAs)); waited += 50) await Bun.sleep(50)
  })

  const service = {
    /**
     * Starts a task for an accepted command; its log opens with the ack (seq 1) echoing the client's id.
     * Refused with `too_many_tasks` when the user already runs the most allowed here.
     */
    start(caller: AgentCaller, command: CommandName, params: Record<string, unknown>, clientId?: string, givenId?: string): string {
      const count = runningByUser.get(caller.userId) ?? 0
      if (count >= options.maxRunningTasksPerUser)
        throw new TaskError('too_many_tasks', `${count} of your tasks are running; at most ${options.maxRunningTasksPerUser} may run at once`)
      const taskId = givenId ?? newTaskId()
      const writer = log.open({ taskId, userId: caller.userId, orgId: caller.orgId, command, createdAt: Date.now() })
      writer.append({ type: 'ack', ...(clientId === undefined ? {} : { id: clientId }), command, status: 'queued' })
      const controller = new AbortController()
      // A task no other process can find must not run: its client is told `unavailable` instead of an ack it cannot rely on.
      const recorded = writer.written().catch((err) => {
        const refusal = new TaskError('unavailable', 'The task log cannot be reached; try again in a few seconds')
        controller.abort(refusal)
        throw Object.assign(refusal, { cause: err })
      })
      recorded.catch(() => undefined)
      // Its log taken from this process (Redis unreachable, or a follower ended it), no one can follow the task: it stops.
      writer.lost.addEventListener('abort', () => controller.abort(new TaskError('task_interrupted', 'The task log could not be reached; the task stopped')), {
        once: true,
      })
      const unregister = cancels.register(taskId, () => void abortLocal(taskId, new TaskError('task_cancelled', 'The task was cancelled')))
      options.meter?.record({ ...caller, kind: 'agent_run' })
      runningByUser.set(caller.userId, count + 1)
      const done = Promise.resolve()
        .then(() => execute(taskId, caller, command, params, writer, controller))
        .finally(() => {
          unregister()
          running.delete(taskId)
          const left = (runningByUser.get(caller.userId) ?? 1) - 1
          if (left > 0) runningByUser.set(caller.userId, left)
          else runningByUser.delete(caller.userId)
        })
      running.set(taskId, { controller, done, userId: caller.userId, recorded, command })
      return taskId
    },

    /** Follows the caller's task from after `afterSeq`; `task_not_found` for another user's or an unknown task. */
    async follow(
      caller: AgentCaller,
      taskId: string,
      afterSeq: number,
      listener: TaskListener,
      /** Called once the task is found to be the caller's, before the replay. */
      found?: (meta: TaskMeta & { lastSeq: number }) => void,
    ): Promise<{ meta: TaskMeta & { lastSeq: number }; stop: () => void }> {
      const meta = await ownTask(caller, taskId)
      found?.(meta)
      const stop = await log.follow(taskId, afterSeq, listener)
      if (!stop) throw new TaskError('task_not_found', `No task ${taskId} of yours (it may have expired)`)
      return { meta, stop }
    },

    /** Cancels the caller's task wherever it runs; false when it had already finished. */
    async cancel(caller: AgentCaller, taskId: string): Promise<boolean> {
      const meta = await ownTask(caller, taskId)
      if (FINISHED_STATUSES.includes(meta.status)) return false
      const reason = new TaskError('task_cancelled', 'The task was cancelled')
      if (abortLocal(taskId, reason)) return true
      await cancels.cancel(taskId)
      return true
    },

    ...tasks,

    /** Resolves once another process can find the task (its ack is in the shared log). */
    async recorded(taskId: string) {
      await running.get(taskId)?.recorded
    },

    /** Tasks running in this process. */
    get runningCount() {
      return running.size
    },

    /** Waits for a task running here to finish (tests). */
    async settled(taskId: string) {
      await running.get(taskId)?.done
    },

    /** Resolves once no task runs here: a draining process lets its tasks finish before interrupting them. */
    async idle() {
      while (running.size > 0) await Promise.allSettled([...running.values()].map((t) => t.done))
    },

    /**
     * Stops what runs here and waits for them, up to `waitMs`. Each ends its log with `task_interrupted`, except a
     * develop or continue task with a shared log: that one is handed over, going on from its last completed step in
     * the process of whichever client follows it next.
     */
    async close(waitMs = 5000) {
      closing = true
      const pending = [...running.entries()]
      for (const [taskId, task] of pending) {
        if (log.shared && RESUMED_COMMANDS.includes(task.command)) handedOver.add(taskId)
        task.controller.abort(
          new TaskError(
            'task_interrupted',
            'The server is shutting down; send the command again, or continue a develop task (command continue with its taskId)',
          ),
        )
      }
      await Promise.race([Promise.allSettled(pending.map(([, t]) => t.done)), Bun.sleep(waitMs)])
      await log.close()
    },
  }
  return service
}

/** What a task resumed after its process died is told to do. */
const RESUME_MESSAGE = 'The service process running this task stopped. Carry on with the task from where you were.'
/** How long a process that did not claim a resumption waits for the resumed task to appear. */
const RESUME_WAIT_MS = 5000

export type AgentService = ReturnType<typeof createAgentService>

/** A stable code and a message for whatever ended a task. */
function describeFailure(error: unknown): { code: string; message: string } {
  if (error instanceof TaskError) return { code: error.code, message: error.message }
  if (error instanceof AppError) return { code: error.code, message: error.message }
  const named = error as { code?: unknown; message?: unknown }
  if (error instanceof Error && typeof named.code === 'string' && /^[a-z_]+$/.test(named.code)) return { code: named.code, message: error.message }
  return { code: 'internal_error', message: 'The task failed unexpectedly' }
}
