import { Elysia } from 'elysia'
import type { AccessService } from '../../src/auth/access-service.ts'
import type { PlanDirectory } from '../../src/auth/plans.ts'
import { accessControl } from '../../src/auth/plugin.ts'
import { problem } from '../../src/schemas.ts'
import { rateLimiting, type RateLimitingOptions } from '../../src/rate-limit/plugin.ts'
import type { SseOptions } from '../../src/sse.ts'
import type { Models } from '../../src/llm/models.ts'
import { UI_MESSAGE_STREAM_DOC, uiMessageStreamResponse } from '../../src/llm/ui-stream.ts'
import type { UsageMeter } from '../../src/usage/meter.ts'
import type { ChatService } from '../chat/index.ts'
import { enhancedChatRequest } from './schemas.ts'
import { runEnhancedTurn, type CodeChecker } from './orchestrator.ts'
export { enhancedChatSettings } from './settings.ts'

export {
  answerEnhancedTurn,
  runEnhancedTurn,
  type CheckReport,
  type CheckVerdict,
  type CodeChecker,
  type EnhancedModel,
  type EnhancedOptions,
  type TurnObserver,
} from './orchestrator.ts'
export { extractCode, type CodeLanguage } from './plan.ts'

export interface EnhancedChatPluginOptions {
  /** Stores the conversation and runs the generation, as for POST /api/chat. */
  chat: Pick<ChatService, 'startTurn' | 'follow'>
  /** The model provider the turn asks; 503 `not_configured` without one. */
  models: Models
  /** Counts the turn's tokens. */
  meter?: Pick<UsageMeter, 'record'>
  /** The sandbox code is checked in. */
  checker: CodeChecker
  limits: { maxSteps: number; timeLimitSeconds: number; maxAttempts: number }
  access: AccessService
  plans: PlanDirectory
  rateLimits: RateLimitingOptions
  /** See ChatPluginOptions.drain. */
  drain?: SseOptions['drain']
}

/**
 * POST /api/enhanced-chat: the chat contract (scope, rate limit, stream, resume at /api/chat/:id/stream,
 * cancel, metering) with a plan, step-by-step work and code checked in the sandbox.
 */
export function enhancedChatPlugin(options: EnhancedChatPluginOptions) {
  const { chat, checker, limits, models } = options
  return new Elysia({ name: 'enhanced-chat', detail: { tags: ['chat'] } })
    .use(accessControl(options))
    .use(rateLimiting(options.rateLimits))
    .post(
      '/api/enhanced-chat',
      async ({ body, principal, request }) => {
        const o = body.options ?? {}
        const settings = {
          maxSteps: Math.min(o.maxSteps ?? limits.maxSteps, limits.maxSteps),
          timeLimitMs: Math.min(o.timeLimitSeconds ?? limits.timeLimitSeconds, limits.timeLimitSeconds) * 1000,
          maxAttempts: Math.min(o.maxAttempts ?? limits.maxAttempts, limits.maxAttempts),
          tests: body.tests,
        }
        const chosen = await models.modelFor(principal.orgId, body.model)
        const model = { provider: models.provider(), model: chosen, meter: options.meter }
        const { chatId, generationId } = await chat.startTurn(
          principal,
          { id: body.id, messages: body.messages, turn: { model: chosen, temperature: o.temperature } },
          (turn, emit, signal) => runEnhancedTurn(model, checker, settings, turn, emit, signal),
        )
        const frames = chat.follow(generationId, 0, request.signal)
        return uiMessageStreamResponse(frames, { generationId, chatId, signal: request.signal, drain: options.drain })
      },
      {
        body: enhancedChatRequest,
        auth: 'chat:write',
        rateLimit: 'chat',
        response: { 401: problem, 403: problem, 404: problem, 422: problem, 429: problem, 503: problem },
        detail: {
          summary: 'Chat that plans, works step by step and checks its code in a sandbox (AI SDK UI message stream)',
          description:
            'Streams a `data-plan` part (the steps and their status), then each step as its own start-step/finish-step with a `data-step` part; ' +
            'code (TypeScript or JavaScript) is transpiled and run, or tested with the given `tests`, in the sandbox, each attempt streamed as a `data-check` part, ' +
            'and failures are sent back to the model for repair. Resume at GET /api/chat/{id}/stream, cancel at POST /api/chat/{id}/cancel.',
          responses: UI_MESSAGE_STREAM_DOC,
        },
      },
    )
}
