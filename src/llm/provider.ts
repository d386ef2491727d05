/**
 * The model provider behind chat: any OpenAI-compatible endpoint (OpenAI, vLLM, llama.cpp, Ollama)
 * through the `openai` package, reduced to the few events the chat turn needs.
 */
import { createParser } from 'eventsource-parser'
import type { ChatCompletionMessageParam, ChatCompletionTool } from 'openai/resources/chat/completions'
import { lazily } from '../lazy.ts'

export type ModelMessage = ChatCompletionMessageParam
export type ModelTool = ChatCompletionTool

export interface ModelRequest {
  model: string
  messages: ModelMessage[]
  tools?: ModelTool[]
  temperature?: number
  maxOutputTokens?: number
  /** Ask for token log-probabilities (the confidence measure). */
  logprobs?: boolean
}

export type ModelEvent =
  /** `logprobs` holds one natural-log probability per token of `delta`, when the provider sent them. */
  | { type: 'text'; delta: string; logprobs?: number[] }
  | { type: 'reasoning'; delta: string }
  | { type: 'tool-call'; index: number; id?: string; name?: string; argumentsDelta?: string }
  | { type: 'usage'; inputTokens: number; outputTokens: number }
  | { type: 'finish'; reason: string }

export interface GeneratedImage {
  mediaType: string
  /** A data URL, or the provider's own URL when it answers with one. */
  url: string
  bytes: number
}

export interface ModelProvider {
  /** Events in batches (what arrived together is handled together); ends quietly when `signal` aborts. */
  stream(request: ModelRequest, signal: AbortSignal): AsyncIterable<ModelEvent[]>
  generateImage(request: { model: string; prompt: string; size?: string }, signal: AbortSignal): Promise<GeneratedImage>
}

/** Codes of in-stream failures; each is written as `code: message` in the stream's error chunk. */
export const STREAM_ERROR_CODES = [
  'upstream_timeout',
  'upstream_stalled',
  'upstream_rate_limited',
  'upstream_error',
  'upstream_malformed',
  'generation_interrupted',
  'generation_cancelled',
  'generation_timeout',
  'unknown_command',
  'image_too_large',
] as const
export type StreamErrorCode = (typeof STREAM_ERROR_CODES)[number]

export class StreamError extends Error {
  constructor(
    readonly code: StreamErrorCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options)
    this.name = 'StreamError'
  }
}

export interface OpenAiProviderOptions {
  /** Unset for servers that need no key (Ollama, llama.cpp). */
  apiKey?: string
  /** Default https://api.openai.com/v1. */
  baseUrl?: string
  /** Longest wait for the provider to start answering. */
  timeoutMs: number
  /** Longest silence inside a stream before it counts as stalled. */
  idleMs: number
  /** Retries of a refused request (429, 5xx) before anything was streamed. Default 1. */
  maxRetries?: number
}

// The SDK is loaded with the first model call, or just after start-up when a provider is configured; a service
// without one never loads it.
const openAiSdk = lazily(() => import('openai'))

/** Loads the SDK ahead of the first model call, so that call does not wait for it. */
export async function preloadOpenAiSdk(): Promise<void> {
  await openAiSdk()
}

/** Maps anything the SDK throws to a stream error with a stable code. */
export function upstreamFailure(error: unknown): StreamError {
  if (error instanceof StreamError) return error
  // Until the SDK is loaded nothing can have thrown one of its errors.
  const OpenAI = openAiSdk.loaded?.default
  if (!OpenAI) return otherFailure(error)
  if (error instanceof OpenAI.APIConnectionTimeoutError)
    return new StreamError('upstream_timeout', 'The model provider did not answer in time', { cause: error })
  if (error instanceof OpenAI.RateLimitError)
    return new StreamError('upstream_rate_limited', 'The model provider is rate limiting requests; try again shortly', { cause: error })
  if (error instanceof OpenAI.APIError && error.status !== undefined) {
    // A refused key is the operator's to fix, and the provider's own words do not say which setting holds it.
    const hint = error.status === 401 || error.status === 403 ? '; check OPENAI_API_KEY' : ''
    return new StreamError('upstream_error', `The model provider answered ${error.status}: ${error.message.slice(0, 200)}${hint}`, { cause: error })
  }
  if (error instanceof OpenAI.APIConnectionError)
    return new StreamError(
      'upstream_error',
      'The model provider could not be reached; check OPENAI_BASE_URL and that the provider is up and reachable from here',
      {
        cause: error,
      },
    )
  return otherFailure(error)
}

function otherFailure(error: unknown): StreamError {
  if (error instanceof SyntaxError) return new StreamError('upstream_malformed', 'The model provider sent a malformed chunk', { cause: error })
  return new StreamError('upstream_error', `The model provider failed: ${(error as Error)?.message ?? String(error)}`.slice(0, 300), { cause: error })
}

type ChunkChoice = {
  delta?: {
    content?: string | null
    reasoning_content?: string
    reasoning?: string
    tool_calls?: { index: number; id?: string; function?: { name?: string; arguments?: string } }[]
  }
  logprobs?: { content?: { logprob: number }[] | null } | null
  finish_reason?: string | null
}

/** Appends the events of one streamed completion chunk to `out`. */
function eventsOf(
  chunk: { choices?: ChunkChoice[]; usage?: { prompt_tokens?: number; completion_tokens?: number } | null; error?: { message?: string } },
  out: ModelEvent[],
  state: { finished: boolean },
) {
  if (chunk.error)
    throw new StreamError('upstream_error', `The model provider reported an error mid-stream: ${String(chunk.error.message ?? 'unknown').slice(0, 200)}`)
  if (chunk.usage) out.push({ type: 'usage', inputTokens: chunk.usage.prompt_tokens ?? 0, outputTokens: chunk.usage.completion_tokens ?? 0 })
  const choice = chunk.choices?.[0]
  if (!choice) return
  const delta = choice.delta
  const reasoning = delta?.reasoning_content ?? delta?.reasoning
  if (reasoning) out.push({ type: 'reasoning', delta: reasoning })
  if (delta?.content) {
    const logprobs = choice.logprobs?.content?.map((t) => t.logprob)
    out.push(logprobs?.length ? { type: 'text', delta: delta.content, logprobs } : { type: 'text', delta: delta.content })
  }
  if (delta?.tool_calls)
    for (const call of delta.tool_calls)
      out.push({ type: 'tool-call', index: call.index, id: call.id, name: call.function?.name, argumentsDelta: call.function?.arguments })
  if (choice.finish_reason && !state.finished) {
    state.finished = true
    out.push({ type: 'finish', reason: choice.finish_reason })
  }
}

export function createOpenAiProvider(options: OpenAiProviderOptions): ModelProvider {
  // Every option given explicitly: the SDK would otherwise read OPENAI_* from the process environment.
  const client = lazily(async () => {
    const { default: OpenAI } = await openAiSdk()
    return new OpenAI({
      apiKey: options.apiKey ?? 'unused',
      baseURL: options.baseUrl ?? 'https://api.openai.com/v1',
      organization: null,
      project: null,
      maxRetries: options.maxRetries ?? 1,
      timeout: options.timeoutMs,
    })
  })

  return {
    async *stream(request, signal) {
      const upstream = new AbortController()
      const stop = () => upstream.abort(signal.reason)
      if (signal.aborted) stop()
      signal.addEventListener('abort', stop, { once: true })
      // One watchdog per stream rather than a timer per chunk: silence past the limit aborts the request.
      let silence: StreamError | undefined
      let answering = false
      let lastHeard = performance.now()
      const watchdog = setInterval(
        () => {
          const limit = answering ? options.idleMs : options.timeoutMs
          if (performance.now() - lastHeard <= limit) return
          silence = answering
            ? new StreamError('upstream_stalled', `The model stream was silent for ${limit} ms`)
            : new StreamError('upstream_timeout', `The model provider did not start answering within ${limit} ms`)
          upstream.abort(silence)
        },
        Math.max(10, Math.min(options.idleMs, options.timeoutMs) / 4),
      )
      try {
        // The raw response: the SDK's own stream decoder costs about three times what the relay does.
        const response = await (await client()).chat.completions
          .create(
            {
              model: request.model,
              messages: request.messages,
              stream: true,
              stream_options: { include_usage: true },
              ...(request.tools?.length ? { tools: request.tools } : {}),
              ...(request.temperature !== undefined ? { temperature: request.temperature } : {}),
              ...(request.maxOutputTokens !== undefined ? { max_tokens: request.maxOutputTokens } : {}),
              ...(request.logprobs ? { logprobs: true } : {}),
            },
            { signal: upstream.signal },
          )
          .asResponse()
        if (!response.body) throw new StreamError('upstream_error', 'The model provider answered without a body')
        answering = true
        lastHeard = performance.now()
        const state = { finished: false, done: false }
        let batch: ModelEvent[] = []
        // A bad chunk ends the stream after the events that arrived before it, which are still delivered.
        let failure: StreamError | undefined
        const parser = createParser({
          onEvent(event) {
            if (state.done || failure) return
            if (event.data === '[DONE]') state.done = true
            else
              try {
                eventsOf(JSON.parse(event.data), batch, state)
              } catch (err) {
                failure = err instanceof StreamError ? err : new StreamError('upstream_malformed', 'The model provider sent a malformed chunk', { cause: err })
              }
          },
        })
        const reader = response.body.pipeThrough(new TextDecoderStream()).getReader()
        try {
          for (;;) {
            const { value, done } = await reader.read()
            if (done) break
            lastHeard = performance.now()
            parser.feed(value)
            if (batch.length) {
              const ready = batch
              batch = []
              yield ready
            }
            if (failure) throw failure
            if (state.done) break
          }
        } finally {
          reader.releaseLock()
        }
        if (!state.finished && !signal.aborted) throw new StreamError('upstream_error', 'The model stream ended without a finish reason')
      } catch (err) {
        if (silence) throw silence
        if (signal.aborted) return
        throw upstreamFailure(err)
      } finally {
        clearInterval(watchdog)
        signal.removeEventListener('abort', stop)
        upstream.abort()
      }
    },

    async generateImage(request, signal) {
      const gptImage = request.model.startsWith('gpt-image')
      const result = await (await client()).images
        .generate(
          {
            model: request.model,
            prompt: request.prompt,
            n: 1,
            size: (request.size ?? '1024x1024') as '1024x1024',
            // gpt-image models always answer base64 and refuse the parameter.
            ...(gptImage ? {} : { response_format: 'b64_json' as const }),
          },
          { signal },
        )
        .catch((err) => {
          throw upstreamFailure(err)
        })
      const image = result.data?.[0]
      if (image?.b64_json) {
        const bytes = Math.floor((image.b64_json.length * 3) / 4)
        return { mediaType: 'image/png', url: `data:image/png;base64,${image.b64_json}`, bytes }
      }
      if (image?.url) return { mediaType: 'image/png', url: image.url, bytes: 0 }
      throw new StreamError('upstream_malformed', 'The image provider answered without an image')
    },
  }
}
