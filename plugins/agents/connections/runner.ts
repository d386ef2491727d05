/**
 * Agent tasks started from elsewhere in the service (the chat's run_agent tool): the same checks as a command
 * over /ws/agent (the command's schema, the chat budget), the same task, followed through the same log.
 */
import type { RateCheck, RateLimiter, RatePolicy } from '../../../src/rate-limit/index.ts'
import type { AgentCaller, AgentService } from '../tasks/index.ts'
import { commandParamsSchema } from '../schemas.ts'
import { checkCommand } from './protocol.ts'

export interface AgentRunnerOptions {
  agents: Pick<AgentService, 'start' | 'recorded' | 'follow'>
  /** The chat class's policies: a task started from a chat spends what a command over /ws/agent spends. */
  rateLimit: { limiter: RateLimiter; policies: readonly Readonly<RatePolicy>[] }
}

export function createAgentRunner(options: AgentRunnerOptions) {
  return {
    /** The JSON Schema of a command's params, as the chat model is shown it; the same schema start() checks against. */
    paramsSchema: commandParamsSchema,

    async start(caller: AgentCaller, command: string, params: Record<string, unknown>): Promise<string> {
      const checked = checkCommand(undefined, command, params)
      if (!checked.ok) throw new Error(checked.error.message)
      const checks: RateCheck[] = options.rateLimit.policies.map((policy) => ({ key: `user:${caller.userId}`, policy }))
      const decision = await options.rateLimit.limiter.check(checks)
      if (!decision.allowed) throw new Error(`Rate limit "${decision.refusedBy}" exceeded; retry in ${decision.retryAfterSeconds} s`)
      const taskId = options.agents.start(caller, checked.command, checked.params)
      // Other clients follow it over /ws/agent from any process once its ack is in the shared log.
      await options.agents.recorded(taskId)
      return taskId
    },

    async follow(caller: AgentCaller, taskId: string, listener: (message: Record<string, unknown>, final: boolean) => void): Promise<() => void> {
      const { stop } = await options.agents.follow(caller, taskId, 0, (text, _seq, final) => listener(JSON.parse(text) as Record<string, unknown>, final))
      return stop
    },
  }
}

export type AgentRunner = ReturnType<typeof createAgentRunner>
