/**
 * The AI SDK UI message stream (v1) as this service writes it: the chunks, the messages they build, their JSON
 * text, their schemas for the AsyncAPI document, and the HTTP response that carries a stream of them.
 */
import type { TProperties } from '@sinclair/typebox'
import { t, type Static } from 'elysia'
import { integer, oneOf } from '../schemas.ts'
import { sseResponse, type SseOptions } from '../sse.ts'

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

/** Where a turn writes its chunks. */
export type Emit = (chunk: UiChunk) => void

// The text before the delta of the last part serialised: a part's deltas come in a row, all sharing it.
let deltaPart = { type: '', id: '', prefix: '' }

/** A chunk's JSON text. Deltas, nearly every chunk of a stream, skip the generic serialiser. */
export function serializeChunk(chunk: UiChunk): string {
  if (chunk.type === 'text-delta' || chunk.type === 'reasoning-delta') {
    if (chunk.id !== deltaPart.id || chunk.type !== deltaPart.type)
      deltaPart = { type: chunk.type, id: chunk.id, prefix: `{"type":"${chunk.type}","id":${JSON.stringify(chunk.id)},"delta":` }
    return `${deltaPart.prefix}${JSON.stringify(chunk.delta)}}`
  }
  return JSON.stringify(chunk)
}

const chunk = <T extends string, P extends TProperties = Record<never, never>>(type: T, description: string, properties: P = {} as P) =>
  t.Object({ type: t.Literal(type), ...properties }, { description })
const partId = t.String({ description: 'Ties the start, deltas and end of one text or reasoning part' })
const toolCallId = t.String()

/** The data of a `data-search-decision` part: whether the answer stood or was grounded in a web search. */
export const searchDecision = t.Object({
  decision: oneOf(['answer', 'search'], { description: '`search`: the answer was unsure and a search-grounded one follows' }),
  confidence: t.Union([t.Number({ minimum: 0, maximum: 1 }), t.Null()], {
    description: 'Geometric mean probability of the first tokens; null without log-probabilities',
  }),
  threshold: t.Number({ description: 'CHAT_CONFIDENCE_THRESHOLD' }),
  method: oneOf(['logprobs', 'hedging'], { description: 'How confidence was measured: token log-probabilities, or hedging phrases when the model gives none' }),
  tokens: integer({ minimum: 0, description: 'Tokens the measure read' }),
  reason: t.String(),
})

/**
 * The chunks of the UI message stream as schemas, for the AsyncAPI document (GET /asyncapi.json). `UiChunk` is what
 * the code writes; the checks below keep the two the same.
 */
export const UI_CHUNKS = {
  start: chunk('start', 'Opens the assistant message', { messageId: t.Optional(t.String()), messageMetadata: t.Optional(t.Unknown()) }),
  'start-step': chunk('start-step', 'Opens a step: one model call'),
  'finish-step': chunk('finish-step', 'Closes the step'),
  'reset-step': chunk(
    'reset-step',
    'Withdraws every part streamed since the last start-step: an unsure draft about to be replaced by a search-grounded answer',
  ),
  finish: chunk('finish', 'Closes the message', { finishReason: t.Optional(oneOf(['stop', 'length', 'content-filter', 'tool-calls', 'error', 'other'])) }),
  'text-start': chunk('text-start', 'Opens a text part', { id: partId }),
  'text-delta': chunk('text-delta', 'Text as the model writes it', { id: partId, delta: t.String() }),
  'text-end': chunk('text-end', 'Closes a text part', { id: partId }),
  'reasoning-start': chunk('reasoning-start', 'Opens a reasoning part', { id: partId }),
  'reasoning-delta': chunk('reasoning-delta', 'Reasoning as the model writes it', { id: partId, delta: t.String() }),
  'reasoning-end': chunk('reasoning-end', 'Closes a reasoning part', { id: partId }),
  'tool-input-start': chunk('tool-input-start', 'A tool call begins', { toolCallId, toolName: t.String() }),
  'tool-input-delta': chunk('tool-input-delta', "The tool call's input as the model writes it", { toolCallId, inputTextDelta: t.String() }),
  'tool-input-available': chunk('tool-input-available', 'The tool call with its whole input; for a client tool the turn then ends for the client to answer', {
    toolCallId,
    toolName: t.String(),
    input: t.Unknown(),
  }),
  'tool-input-error': chunk('tool-input-error', 'The model wrote an input the tool cannot take', {
    toolCallId,
    toolName: t.String(),
    input: t.Unknown(),
    errorText: t.String(),
  }),
  'tool-output-available': chunk('tool-output-available', "A server tool's result", { toolCallId, output: t.Unknown() }),
  'tool-output-error': chunk('tool-output-error', 'A server tool failed', { toolCallId, errorText: t.String() }),
  'source-url': chunk('source-url', 'A source the answer draws on (web search results)', {
    sourceId: t.String(),
    url: t.String(),
    title: t.Optional(t.String()),
  }),
  file: chunk('file', 'A file, such as a generated image', { url: t.String(), mediaType: t.String() }),
  'data-search-decision': chunk('data-search-decision', 'The confidence decision, once the first tokens are measured (search augmentation on)', {
    id: t.Optional(t.String()),
    data: searchDecision,
    transient: t.Optional(t.Boolean()),
  }),
  data: t.Object(
    // biome-ignore lint/suspicious/noTemplateCurlyInString: TypeBox's template literal syntax, not a JavaScript template
    { type: t.TemplateLiteral('data-${string}'), id: t.Optional(t.String()), data: t.Unknown(), transient: t.Optional(t.Boolean()) },
    {
      description:
        'Another data part: enhanced chat writes `data-plan`, `data-step` and `data-check`; an agent task run from the chat, `data-agent` (one id per task, updated in place)',
    },
  ),
  error: chunk('error', 'The generation failed', { errorText: t.String() }),
  abort: chunk('abort', 'The generation was cancelled', { reason: t.Optional(t.String()) }),
} as const

type DescribedChunk = Static<(typeof UI_CHUNKS)[keyof typeof UI_CHUNKS]>
// Every chunk the code writes is described, and nothing else is.
const _everyChunkDescribed: UiChunk extends DescribedChunk ? true : never = true
const _onlyWrittenChunks: DescribedChunk extends UiChunk ? true : never = true

/** Headers every UI message stream answers with; the first tells AI SDK clients which protocol it is. */
export const UI_MESSAGE_STREAM_HEADERS = { 'x-vercel-ai-ui-message-stream': 'v1' }

/** The 200 answer of a route that streams UI message chunks, for the OpenAPI document. */
export const UI_MESSAGE_STREAM_DOC = {
  200: {
    description:
      'AI SDK UI message stream v1 over text/event-stream: `data:` lines with JSON chunks, each event with `id: <generationId>:<seq>`, closed by `data: [DONE]`',
    content: { 'text/event-stream': { schema: { type: 'string' } } },
  },
} as const

/** Already framed events of a generation as an SSE response, named by the chat and generation they belong to. */
export function uiMessageStreamResponse(
  frames: AsyncIterable<string>,
  target: { generationId: string; chatId: string; signal: AbortSignal; heartbeatMs?: number; drain?: SseOptions['drain'] },
): Response {
  return sseResponse(frames, {
    heartbeatMs: target.heartbeatMs,
    signal: target.signal,
    drain: target.drain,
    headers: { ...UI_MESSAGE_STREAM_HEADERS, 'x-chat-id': target.chatId, 'x-generation-id': target.generationId },
  })
}
