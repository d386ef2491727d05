import { Elysia, t } from 'elysia'
import type { AccessService } from '../../src/auth/access-service.ts'
import type { PlanDirectory } from '../../src/auth/plans.ts'
import { accessControl } from '../../src/auth/plugin.ts'
import { problem } from '../../src/models.ts'
import { rateLimiting, type RateLimitingOptions } from '../../src/rate-limit/plugin.ts'
import { sseResponse, type SseOptions } from '../../src/sse.ts'
import { cancelAnswer, chatDetail, chatIdParams, chatList, chatRequest, type ChatRequest } from './model.ts'
import type { ChatService } from './service.ts'
import { parseEventId } from './stream-log.ts'
import type { Turn } from './turn.ts'
export { chatSettings } from './settings.ts'

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

/** Headers every chat stream answers with; the first tells AI SDK clients which protocol it is. */
export const UI_MESSAGE_STREAM_HEADERS = { 'x-vercel-ai-ui-message-stream': 'v1' }

export const streamDoc = {
  200: {
    description:
      'AI SDK UI message stream v1 over text/event-stream: `data:` lines with JSON chunks, each event with `id: <generationId>:<seq>`, closed by `data: [DONE]`',
    content: { 'text/event-stream': { schema: { type: 'string' } } },
  },
} as const

/** A generation's events as an SSE response, from `afterSeq` on, live until its end. */
export function generationResponse(
  chat: ChatService,
  target: { generationId: string; chatId: string; afterSeq: number; signal: AbortSignal; heartbeatMs?: number; drain?: SseOptions['drain'] },
): Response {
  return sseResponse(chat.follow(target.generationId, target.afterSeq, target.signal), {
    heartbeatMs: target.heartbeatMs,
    signal: target.signal,
    drain: target.drain,
    headers: { ...UI_MESSAGE_STREAM_HEADERS, 'x-chat-id': target.chatId, 'x-generation-id': target.generationId },
  })
}

/** The parts of a chat request that shape the turn. */
export function turnOptions(body: Pick<ChatRequest, 'model' | 'options' | 'tools'>): Partial<Turn> {
  const o = body.options ?? {}
  return {
    model: body.model,
    temperature: o.temperature,
    maxOutputTokens: o.maxOutputTokens,
    maxSteps: o.maxSteps,
    searchAugmentation: o.searchAugmentation,
    unsureDraft: o.unsureDraft,
    serverTools: o.serverTools,
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
    generationResponse(chat, { generationId, chatId, afterSeq, signal, heartbeatMs: options.heartbeatMs, drain: options.drain })

  return new Elysia({ name: 'chat', detail: { tags: ['chat'] } })
    .use(accessControl(options))
    .use(rateLimiting(options.rateLimits))
    .post(
      '/api/chat',
      async ({ body, principal, request }) => {
        const { chatId, generationId } = await chat.startTurn(principal, { id: body.id, messages: body.messages, turn: turnOptions(body) })
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
          responses: streamDoc,
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
          responses: streamDoc,
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
        const chats = await chat.store.chats(principal.userId, 100)
        const active = await Promise.all(chats.map((c) => chat.hub.active(c.id)))
        return { chats: chats.map((c, i) => ({ id: c.id, title: c.title, createdAt: c.createdAt, updatedAt: c.updatedAt, active: !!active[i] })) }
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
        const found = await chat.ownChat(principal, params.id)
        const [messages, active] = await Promise.all([chat.store.messages(found.id), chat.hub.active(found.id)])
        return { id: found.id, title: found.title, createdAt: found.createdAt, updatedAt: found.updatedAt, active: !!active, messages }
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
