import { t, type Static } from 'elysia'
import { integer, oneOf, strictObject } from '../../src/schemas.ts'

/** Chat ids come from clients (the AI SDK generates them) and end up in URLs and Redis keys. */
const chatId = t.String({ minLength: 1, maxLength: 128, pattern: '^[A-Za-z0-9_-]+$', description: 'Chat id; generated when absent' })

/** One part of an AI SDK UI message (`text`, `file`, `tool-<name>`, `reasoning`, `step-start`, `data-*` ...). */
const uiPart = t.Object(
  { type: t.String({ minLength: 1, maxLength: 200 }) },
  { additionalProperties: true, description: 'A UI message part as the AI SDK writes it' },
)

export const chatMessage = t.Object(
  {
    id: t.Optional(t.String({ minLength: 1, maxLength: 200 })),
    role: oneOf(['system', 'user', 'assistant']),
    parts: t.Optional(t.Array(uiPart, { maxItems: 1000 })),
    content: t.Optional(t.String({ maxLength: 400_000, description: 'Plain text, for clients that do not speak UI messages' })),
    metadata: t.Optional(t.Unknown()),
  },
  { additionalProperties: false, description: 'An AI SDK UIMessage ({ id, role, parts }) or a plain { role, content }' },
)

const clientTool = strictObject({
  name: t.String({ minLength: 1, maxLength: 64, pattern: '^[A-Za-z0-9_-]+$' }),
  description: t.Optional(t.String({ maxLength: 2000 })),
  parameters: t.Optional(t.Record(t.String(), t.Unknown(), { description: 'JSON Schema of the tool input' })),
})

export const chatOptions = strictObject(
  {
    temperature: t.Optional(t.Number({ minimum: 0, maximum: 2 })),
    maxOutputTokens: t.Optional(integer({ minimum: 1, maximum: 200_000 })),
    maxSteps: t.Optional(integer({ minimum: 1, maximum: 50, description: 'Capped by CHAT_MAX_STEPS' })),
    searchAugmentation: t.Optional(t.Boolean({ description: 'Search the web when the model is unsure. Default CHAT_SEARCH_AUGMENTATION' })),
    unsureDraft: t.Optional(
      oneOf(['replace', 'keep'], {
        description:
          'What becomes of a streamed answer found unsure: `replace` withdraws it with a `reset-step` chunk (AI SDK 7 clients); `keep` leaves it, followed by the decision and the grounded answer (every client). Default keep, or replace when the request carries `X-UI-Stream-Features: reset-step`',
      }),
    ),
    serverTools: t.Optional(
      t.Array(oneOf(['web_search', 'code_search', 'generate_image']), { description: 'Server tools the model may call. Default all available' }),
    ),
    mcpServers: t.Optional(
      t.Array(t.String({ minLength: 1, maxLength: 30, pattern: '^[a-z0-9][a-z0-9-]*$' }), {
        maxItems: 50,
        description:
          "MCP servers (by name) whose allowed tools the model may call, as mcp__<server>__<tool>; [] offers none. Default the organisation's servers offered by default (GET /api/mcp-servers)",
      }),
    ),
  },
  { description: 'Generation options' },
)

export const chatRequest = strictObject({
  id: t.Optional(chatId),
  messages: t.Array(chatMessage, { minItems: 1, maxItems: 1000 }),
  trigger: t.Optional(oneOf(['submit-message', 'regenerate-message'])),
  messageId: t.Optional(t.String({ maxLength: 200 })),
  model: t.Optional(
    t.String({
      minLength: 1,
      maxLength: 200,
      description: "One of GET /api/models; another is 422. Default the organisation's default model, else CHAT_MODEL",
    }),
  ),
  options: t.Optional(chatOptions),
  tools: t.Optional(
    t.Array(clientTool, {
      maxItems: 64,
      description: 'Tools the client runs itself: calls are streamed as tool-input-available and the turn ends for the client to answer',
    }),
  ),
})

export type ChatRequest = Static<typeof chatRequest>
export type IncomingMessage = Static<typeof chatMessage>
export type ClientTool = Static<typeof clientTool>
export type ChatOptions = Static<typeof chatOptions>

export const chatIdParams = t.Object({ id: chatId })

export const storedMessage = t.Object({
  id: t.String(),
  role: t.String(),
  parts: t.Array(t.Unknown()),
  metadata: t.Optional(t.Unknown()),
})

export const chatSummary = t.Object({
  id: t.String(),
  title: t.String(),
  createdAt: integer(),
  updatedAt: integer(),
  /** A generation is running and can be followed at /api/chat/:id/stream. */
  active: t.Boolean(),
})

export const chatDetail = t.Object({ ...chatSummary.properties, messages: t.Array(storedMessage) })
export const chatList = t.Object({
  chats: t.Array(chatSummary),
  nextCursor: t.Union([t.String(), t.Null()], { description: 'Pass as cursor for the next (older) page; null on the last page' }),
})

export const chatListQuery = t.Object(
  {
    // The 1-100 bounds are checked by the route: Elysia's query coercion reports a broken bound without the field's name.
    limit: t.Optional(t.Integer({ description: 'Chats per page, 1-100. Default 50' })),
    cursor: t.Optional(t.String({ minLength: 1, maxLength: 400, description: 'nextCursor of the previous page' })),
    q: t.Optional(
      t.String({ minLength: 1, maxLength: 200, description: 'Only chats whose title contains this text, whatever the case; `%` and `_` are plain characters' }),
    ),
  },
  { additionalProperties: false },
)

export const chatRename = strictObject({
  title: t.String({ minLength: 1, maxLength: 200, pattern: '\\S', description: 'The new title, 1-200 characters, not only spaces' }),
})
export const cancelAnswer = t.Object({ cancelled: t.Boolean(), generationId: t.Optional(t.String()) })
