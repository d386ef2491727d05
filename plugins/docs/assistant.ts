/**
 * POST /api/docs/assistant: the documentation site's own assistant. It answers a reader's question from
 * the documentation (the reader's page and the sections the search index finds), streaming the model's
 * answer as server-sent events.
 */
import { Elysia, t } from 'elysia'
import { AppError } from '../../src/errors.ts'
import type { Logger } from '../../src/log.ts'
import { problem, strictObject } from '../../src/schemas.ts'
import { rateLimiting, type RateLimitingOptions } from '../../src/rate-limit/plugin.ts'
import { sseResponse, type SseEvent } from '../../src/sse.ts'
import { runModelLoop } from '../../src/llm/model-loop.ts'
import type { Models } from '../../src/llm/models.ts'
import { upstreamFailure, type ModelMessage, type ModelProvider } from '../../src/llm/provider.ts'
import { assistantMessages, gatherContext, type AssistantSource } from './assistant-prompt.ts'
import { DOCS_ASSISTANT_PATH } from './render.ts'
import type { DocsIndex } from './search-index.ts'

export interface DocsAssistantOptions {
  /** The documentation searched: the index the MCP server's search_docs uses too. */
  index: DocsIndex
  /** Named in the instructions to the model. */
  siteName: string
  /** The chat's model provider and model. Without a provider the menu leaves the assistant out and the route answers 503. */
  models: Models
  /** The `assistant` budget and the burst ceiling, spent per client address. */
  rateLimits: RateLimitingOptions
  /** Told about upstream failures. Default: nobody. */
  logger?: Logger
  /** Comment heartbeat interval of the stream. Default 5000 ms. */
  heartbeatMs?: number
}

export const assistantRequest = strictObject({
  question: t.String({
    minLength: 1,
    maxLength: 2000,
    pattern: '\\S',
    description: "The reader's question (1-2000 characters, not blank)",
    examples: ['How do I resume a chat stream?'],
  }),
  page: t.Optional(
    t.String({
      minLength: 1,
      maxLength: 500,
      description: 'The page the reader is on, sent whole as context: its path (`chat`, `docs/chat`, `/docs/chat`) or URL',
      examples: ['/docs/chat'],
    }),
  ),
})

const streamDoc = {
  200: {
    description:
      'text/event-stream: `text` events ({ delta }) with the answer, then `sources` ({ sources: [{ title, path, url }] }), then `done` ({}). ' +
      'An upstream failure ends the stream with an `error` event ({ code, message }; codes upstream_timeout, upstream_stalled, upstream_rate_limited, upstream_error, upstream_malformed).',
    content: { 'text/event-stream': { schema: { type: 'string' } } },
  },
} as const

const event = (name: string, data: unknown): SseEvent => ({ event: name, data: JSON.stringify(data) })

/** The model's answer as `text` events, then the sources and `done`; a failure becomes one `error` event. */
function answerEvents(
  provider: ModelProvider,
  request: { model: string; messages: ModelMessage[]; sources: readonly AssistantSource[] },
  signal: AbortSignal,
  logger: Logger | undefined,
): ReadableStream<SseEvent> {
  // Until the reader leaves; there is nobody to send the rest to then.
  let reading = true
  return new ReadableStream<SseEvent>({
    async start(controller) {
      const send = (name: string, data: unknown) => reading && controller.enqueue(event(name, data))
      try {
        const view = () => ({ text: (delta: string) => send('text', { delta }) })
        await runModelLoop({ provider, model: request.model, messages: request.messages, signal, request: { temperature: 0.2 }, view })
        send('sources', { sources: request.sources })
        send('done', {})
      } catch (error) {
        if (!signal.aborted) {
          const failure = upstreamFailure(error)
          logger?.warn('documentation assistant: the model provider failed', { code: failure.code, error: failure.message })
          send('error', { code: failure.code, message: failure.message })
        }
      }
      if (reading) controller.close()
    },
    cancel() {
      reading = false
    },
  })
}

/** The assistant's route. No token is needed (the documentation is public); questions are rate limited per client address. */
export function docsAssistantPlugin(options: DocsAssistantOptions) {
  const { index, models } = options
  return new Elysia({ name: 'docs-assistant', detail: { tags: ['documentation'] } }).use(rateLimiting(options.rateLimits)).post(
    DOCS_ASSISTANT_PATH,
    async ({ body, request }) => {
      const provider = models.provider()
      const page = body.page === undefined ? undefined : index.page(body.page)
      if (body.page !== undefined && !page)
        throw new AppError('not_found', `page: no documentation page "${body.page}"; give a path such as "chat" or "/docs/chat"`)
      const context = await gatherContext(index, body.question, page)
      const messages = assistantMessages(options.siteName, body.question, context, (p) => index.urlOf(p).url)
      return sseResponse(answerEvents(provider, { model: models.model, messages, sources: context.sources }, request.signal, options.logger), {
        signal: request.signal,
        heartbeatMs: options.heartbeatMs,
      })
    },
    {
      body: assistantRequest,
      rateLimit: { spend: 'assistant', by: 'address' },
      response: { 404: problem, 413: problem, 415: problem, 422: problem, 429: problem, 503: problem },
      detail: {
        summary: 'Ask the documentation assistant a question, with the page being read as context; the answer is streamed',
        description:
          'Public, no token. The answer comes from the documentation only: the page named in `page`, sent whole, and the sections the documentation search finds for the question. ' +
          'Asks the chat model provider (CHAT_MODEL); without one the route answers 503 not_configured. ' +
          'Rate limited per client address by the `assistant` budget (RATE_LIMIT_ASSISTANT_PER_MINUTE) and the burst ceiling.',
        responses: streamDoc,
      },
    },
  )
}
