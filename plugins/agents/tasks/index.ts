/**
 * A task's life (service.ts): a command accepted becomes a task that runs whatever happens to its connection, and
 * reports through its log (task-log.ts: in memory, or in Redis shared by every process) with a progress and an ETA
 * from its own pace (eta.ts). A command gets a TaskContext (or, reading other tasks, a CommandContext) and fails
 * with a TaskError.
 */
export {
  createAgentService,
  TaskError,
  type AgentCaller,
  type AgentService,
  type CommandContext,
  type CommandHandler,
  type CommandHandlers,
  type TaskContext,
  type TaskRecords,
} from './service.ts'
export { createMemoryTaskLog, createRedisTaskLog } from './task-log.ts'
export { loopStepsAhead, StepPace, type StepClock } from './eta.ts'
