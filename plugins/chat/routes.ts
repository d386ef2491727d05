import { Elysia, t } from 'elysia'
import type { AccessService } from '../../src/auth/access-service.ts'
import type { PlanDirectory } from '../../src/auth/plans.ts'
import { accessControl } from '../../src/auth/plugin.ts'
import { AppError } from '../../src/errors.ts'
import { problem } from '../../src/schemas.ts'
import { rateLimiting, type RateLimitingOptions } from '../../src/rate-limit/plugin.ts'
import type { SseOptions } from '../../src/sse.ts'
import { UI_MESSAGE_STREAM_DOC, uiMessageStreamResponse } from '../../src/llm/ui-stream.ts'
import { decodeChatCursor, encodeChatCursor } from './list-cursor.ts'
import { cancelAnswer, chatDetail, chatIdParams, chatList, chatListQuery, chatRename, chatRequest, chatSummary, type ChatRequest } from './schemas.ts'
import type { ChatService } from './service.ts'
import { parseEventId } from './stream-log.ts'
import { unsureDraftFor } from './stream-features.ts'
import type { Turn } from './turn.ts'
import type { Models } from '../../src/llm/models.ts'

export interface ChatPluginOptions {
  chat: ChatService
  /** Which model a request uses: the one it names when offered (else 422), else its organisation's default. */
  models: Pick<Models, 'modelFor'>
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

const summary = (c: { id: string; title: string; createdAt: number; updatedAt: number; active: boolean }) => ({
  id: c.id,
  title: c.title,
  createdAt: c.createdAt,
  updatedAt: c.updatedAt,
  active: c.active,
})

/** Chats per page: 1-100, default 50. */
function pageSize(limit: number | undefined): number {
  if (limit === undefined) return 50
  if (limit >= 1 && limit <= 100) return limit
  throw new AppError('validation_failed', 'limit: must be from 1 to 100', { errors: [{ field: 'limit', message: 'must be from 1 to 100' }] })
}

/**
 * POST /api/chat streams the answer; GET /api/chat/:id/stream resumes it (Last-Event-ID for what was
 * missed, none for a replay from the start); POST /api/chat/:id/cancel stops it from any process. GET /api/chats
 * lists the caller's chats in pages; GET, PATCH and DELETE /api/chat/:id read, rename and delete one.
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
        const model = await options.models.modelFor(principal.orgId, body.model)
        const turn = { ...turnOptions(body, request.headers), model, mayRunAgents: principal.scopes.includes('agents:run') }
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
        response: { 204: t.Void(), 401: problem, 403: problem, 404: problem, 429: problem },
        detail: {
          summary: "Resume the chat's active answer stream",
          description:
            'Without Last-Event-ID: the active generation replayed from its first event. With Last-Event-ID (`<generationId>:<seq>`): only the events after it. ' +
            "204 with no body when there is nothing to resume: no generation running, or a chat id that is unknown or another user's (as the AI SDK's `useChat({ resume: true })` expects). " +
            'A chat of the caller that was deleted answers 404.',
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
      async ({ query, principal }) => {
        const limit = pageSize(query.limit)
        const after = query.cursor === undefined ? undefined : decodeChatCursor(query.cursor)
        const page = await chat.chats(principal, { limit, after, q: query.q })
        const last = page.chats.at(-1)
        return { chats: page.chats.map(summary), nextCursor: page.more && last ? encodeChatCursor(last) : null }
      },
      {
        query: chatListQuery,
        auth: 'chat:write',
        rateLimit: 'default',
        response: { 200: chatList, 401: problem, 403: problem, 422: problem, 429: problem },
        detail: {
          summary: "The caller's chats, most recent first, in pages, optionally those whose title contains `q`",
          description:
            'Ordered by updatedAt, then id, both descending. A chat created while paging appears on no later page, and none is listed twice or skipped; a chat that gets a new message moves to the front. Deleted chats are not listed.',
        },
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
    .patch('/api/chat/:id', async ({ params, body, principal }) => summary(await chat.rename(principal, params.id, body.title)), {
      params: chatIdParams,
      body: chatRename,
      auth: 'chat:write',
      rateLimit: 'default',
      response: { 200: chatSummary, 401: problem, 403: problem, 404: problem, 422: problem, 429: problem },
      detail: { summary: 'Rename a chat', description: "Its updatedAt stays: renaming does not move it in the list. Another user's chat is 404." },
    })
    .delete(
      '/api/chat/:id',
      async ({ params, principal, set }) => {
        await chat.deleteChat(principal, params.id)
        set.status = 204
      },
      {
        params: chatIdParams,
        auth: 'chat:write',
        rateLimit: 'default',
        response: { 204: t.Void(), 401: problem, 403: problem, 404: problem, 429: problem },
        detail: {
          summary: 'Delete a chat, its messages, its stored streams and its files',
          description:
            "A running generation is stopped first, on whichever server process runs it. The chat is gone at once from the list, reads, resumes and new messages (404); its id stays taken. Another user's chat is 404.",
        },
      },
    )
}
