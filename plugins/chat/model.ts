import { t, type Static } from 'elysia'
import { oneOf, strictObject } from '../../src/models.ts'

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
    maxOutputTokens: t.Optional(t.Integer({ minimum: 1, maximum: 200_000 })),
    maxSteps: t.Optional(t.Integer({ minimum: 1, maximum: 50, description: 'Capped by CHAT_MAX_STEPS' })),
    searchAugmentation: t.Optional(t.Boolean({ description: 'Search the web when the model is unsure. Default CHAT_SEARCH_AUGMENTATION' })),
    unsureDraft: t.Optional(
      oneOf(['replace', 'keep'], {
        description:
          'What becomes of a streamed answer found unsure: `replace` withdraws it with a `reset-step` chunk (AI SDK 7 clients); `keep` leaves it, followed by the decision and the grounded answer (clients without `reset-step`). Default replace',
      }),
    ),
    serverTools: t.Optional(
      t.Array(oneOf(['web_search', 'code_search', 'generate_image']), { description: 'Server tools the model may call. Default all available' }),
    ),
  },
  { description: 'Generation options' },
)

export const chatRequest = strictObject({
  id: t.Optional(chatId),
  messages: t.Array(chatMessage, { minItems: 1, maxItems: 1000 }),
  trigger: t.Optional(oneOf(['submit-message', 'regenerate-message'])),
  messageId: t.Optional(t.String({ maxLength: 200 })),
  model: t.Optional(t.String({ minLength: 1, maxLength: 200, description: 'Default CHAT_MODEL' })),
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
  createdAt: t.Integer(),
  updatedAt: t.Integer(),
  /** A generation is running and can be followed at /api/chat/:id/stream. */
  active: t.Boolean(),
})

export const chatDetail = t.Object({ ...chatSummary.properties, messages: t.Array(storedMessage) })
export const chatList = t.Object({ chats: t.Array(chatSummary) })
export const cancelAnswer = t.Object({ cancelled: t.Boolean(), generationId: t.Optional(t.String()) })

/** A UI message part as stored with a chat. */
export type UiPart = { type: string; [field: string]: unknown }

export interface UiMessage {
  id: string
  role: 'system' | 'user' | 'assistant'
  parts: UiPart[]
  metadata?: unknown
}

/** The chunks of the AI SDK UI message stream (v1) this service writes. */
export type UiChunk =
  | { type: 'start'; messageId?: string; messageMetadata?: unknown }
  | { type: 'start-step' }
  | { type: 'finish-step' }
  /** Withdraws every part streamed since the last `start-step` (an unsure draft about to be replaced). */
  | { type: 'reset-step' }
  | { type: 'finish'; finishReason?: 'stop' | 'length' | 'content-filter' | 'tool-calls' | 'error' | 'other' }
  | { type: 'text-start' | 'text-end' | 'reasoning-start' | 'reasoning-end'; id: string }
  | { type: 'text-delta' | 'reasoning-delta'; id: string; delta: string }
  | { type: 'tool-input-start'; toolCallId: string; toolName: string }
  | { type: 'tool-input-delta'; toolCallId: string; inputTextDelta: string }
  | { type: 'tool-input-available'; toolCallId: string; toolName: string; input: unknown }
  | { type: 'tool-input-error'; toolCallId: string; toolName: string; input: unknown; errorText: string }
  | { type: 'tool-output-available'; toolCallId: string; output: unknown }
  | { type: 'tool-output-error'; toolCallId: string; errorText: string }
  | { type: 'source-url'; sourceId: string; url: string; title?: string }
  | { type: 'file'; url: string; mediaType: string }
  | { type: `data-${string}`; id?: string; data: unknown; transient?: boolean }
  | { type: 'error'; errorText: string }
  | { type: 'abort'; reason?: string }

/** A chunk's JSON text. Deltas, nearly every chunk of a stream, skip the generic serialiser. */
export function serializeChunk(chunk: UiChunk): string {
  if (chunk.type === 'text-delta' || chunk.type === 'reasoning-delta')
    return `{"type":"${chunk.type}","id":${JSON.stringify(chunk.id)},"delta":${JSON.stringify(chunk.delta)}}`
  return JSON.stringify(chunk)
}
