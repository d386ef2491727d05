import { Elysia, t } from 'elysia'
import type { AccessService } from '../../src/auth/access-service.ts'
import type { PlanDirectory } from '../../src/auth/plans.ts'
import { accessControl } from '../../src/auth/plugin.ts'
import { problem } from '../../src/schemas.ts'
import { rateLimiting, type RateLimitingOptions } from '../../src/rate-limit/plugin.ts'
import type { SseOptions } from '../../src/sse.ts'
import { UI_MESSAGE_STREAM_DOC, uiMessageStreamResponse } from '../../src/llm/ui-stream.ts'
import { cancelAnswer, chatDetail, chatIdParams, chatList, chatRequest, type ChatRequest } from './schemas.ts'
import type { ChatService } from './service.ts'
import { parseEventId } from './stream-log.ts'
import { unsureDraftFor } from './stream-features.ts'
import type { Turn } from './turn.ts'

export interface ChatPluginOptions {
  chat: ChatService
  access: AccessService
  plans: PlanDirectory
  rateLimits: RateLimitingOptions
  /** Comment heartbeat interval of the streams. Default 5000 ms. */
  heartbeatMs?: number
  /** Set when another process can serve the streams (shared Redis): shutdown ends them with a reconnect hint. */
  drain?: SseOptions['drain']
}

/** The parts of a chat request that shape the turn; `headers` say what the client's stream reader understands. */
export function turnOptions(body: Pick<ChatRequest, 'model' | 'options' | 'tools'>, headers?: Headers): Partial<Turn> {
  const o = body.options ?? {}
  return {
    model: body.model,
    temperature: o.temperature,
    maxOutputTokens: o.maxOutputTokens,
    maxSteps: o.maxSteps,
    searchAugmentation: o.searchAugmentation,
    unsureDraft: unsureDraftFor(o.unsureDraft, headers),
    serverTools: o.serverTools,
    mcpServers: o.mcpServers,
    clientTools: body.tools,
  }
}

/**
 * POST /api/chat streams the answer; GET /api/chat/:id/stream resumes it (Last-Event-ID for what was
 * missed, none for a replay from the start); POST /api/chat/:id/cancel stops it from any process.
 */
export function chatPlugin(options: ChatPluginOptions) {
  const { chat } = options
  const follow = (generationId: string, chatId: string, afterSeq: number, signal: AbortSignal) =>
    uiMessageStreamResponse(chat.follow(generationId, afterSeq, signal), {
      generationId,
      chatId,
      signal,
      heartbeatMs: options.heartbeatMs,
      drain: options.drain,
    })

  return new Elysia({ name: 'chat', detail: { tags: ['chat'] } })
    .use(accessControl(options))
    .use(rateLimiting(options.rateLimits))
    .post(
      '/api/chat',
      async ({ body, principal, request }) => {
        const turn = { ...turnOptions(body, request.headers), mayRunAgents: principal.scopes.includes('agents:run') }
        const { chatId, generationId } = await chat.startTurn(principal, { id: body.id, messages: body.messages, turn })
        return follow(generationId, chatId, 0, request.signal)
      },
      {
        body: chatRequest,
        auth: 'chat:write',
        rateLimit: 'chat',
        response: { 401: problem, 403: problem, 404: problem, 422: problem, 429: problem, 503: problem },
        detail: {
          summary: 'Send a message and stream the answer (AI SDK UI message stream)',
          description:
            'Accepts the AI SDK transport body ({ id, messages: UIMessage[], trigger, messageId }) or plain { messages: [{ role, content }] }. ' +
            'Messages starting with `!search <query>` or `!image <prompt>` are commands. The answer keeps being generated when the client disconnects; resume it at GET /api/chat/{id}/stream.',
          responses: UI_MESSAGE_STREAM_DOC,
        },
      },
    )
    .get(
      '/api/chat/:id/stream',
      async ({ params, principal, request, set }) => {
        const lastEvent = parseEventId(request.headers.get('last-event-id'))
        const target = await chat.resumable(principal, params.id, lastEvent)
        if (!target) {
          set.status = 204
          return
        }
        return follow(target.meta.generationId, params.id, target.afterSeq, request.signal)
      },
      {
        params: chatIdParams,
        auth: 'chat:write',
        rateLimit: 'default',
        response: { 204: t.Void(), 401: problem, 403: problem, 429: problem },
        detail: {
          summary: "Resume the chat's active answer stream",
          description:
            'Without Last-Event-ID: the active generation replayed from its first event. With Last-Event-ID (`<generationId>:<seq>`): only the events after it. ' +
            "204 with no body when there is nothing to resume: no generation running, or a chat id that is unknown or another user's (as the AI SDK's `useChat({ resume: true })` expects).",
          responses: UI_MESSAGE_STREAM_DOC,
        },
      },
    )
    .post(
      '/api/chat/:id/cancel',
      async ({ params, principal }) => {
        const meta = await chat.cancel(principal, params.id)
        return meta ? { cancelled: true, generationId: meta.generationId } : { cancelled: false }
      },
      {
        params: chatIdParams,
        auth: 'chat:write',
        rateLimit: 'default',
        response: { 200: cancelAnswer, 401: problem, 403: problem, 404: problem, 429: problem },
        detail: { summary: "Stop the chat's running generation, on whichever server process runs it" },
      },
    )
    .get(
      '/api/chats',
      async ({ principal }) => {
        const chats = await chat.chats(principal, 100)
        return { chats: chats.map((c) => ({ id: c.id, title: c.title, createdAt: c.createdAt, updatedAt: c.updatedAt, active: c.active })) }
      },
      {
        auth: 'chat:write',
        rateLimit: 'default',
        response: { 200: chatList, 401: problem, 403: problem, 429: problem },
        detail: { summary: "The caller's chats, most recent first (up to 100)" },
      },
    )
    .get(
      '/api/chat/:id',
      async ({ params, principal }) => {
        const found = await chat.chatWithMessages(principal, params.id)
        return { id: found.id, title: found.title, createdAt: found.createdAt, updatedAt: found.updatedAt, active: found.active, messages: found.messages }
      },
      {
        params: chatIdParams,
        auth: 'chat:write',
        rateLimit: 'default',
        response: { 200: chatDetail, 401: problem, 403: problem, 404: problem, 429: problem },
        detail: { summary: 'One chat with its messages (UI message parts, as streamed)' },
      },
    )
}
