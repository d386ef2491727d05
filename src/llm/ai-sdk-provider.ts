/**
 * Model providers with their own native APIs (Anthropic's Messages API, Google's Gemini API), through the AI SDK's
 * provider packages (`@ai-sdk/anthropic`, `@ai-sdk/google`), reduced to the events the model loop reads. The
 * messages the loop keeps in the OpenAI chat format are translated to the SDK's prompt; its stream parts back to
 * `ModelEvent`s. Neither API returns token log-probabilities: text events carry none, so the confidence gate falls
 * back to looking for hedging phrases (docs/chat.mdx, "Search augmentation").
 */
import type { LanguageModelV4, LanguageModelV4FunctionTool, LanguageModelV4Message, LanguageModelV4StreamPart } from '@ai-sdk/provider'
import { AppError } from '../errors.ts'
import type { HttpClient } from '../http.ts'
import { StreamError, type ModelEvent, type ModelMessage, type ModelProvider, type ModelTool } from './provider.ts'

export type NativeProviderKind = 'anthropic' | 'google'

export interface AiSdkProviderOptions {
  kind: NativeProviderKind
  /** Name of the provider in MODEL_PROVIDERS, shown in errors. */
  name: string
  apiKey: string
  /** Default the provider's own API (https://api.anthropic.com/v1, https://generativelanguage.googleapis.com/v1beta). */
  baseUrl?: string
  /** Longest wait for the provider to start answering. */
  timeoutMs: number
  /** Longest silence inside a stream before it counts as stalled. */
  idleMs: number
  /** The service's outbound client: timeouts, and errors that never carry the URL or the key. */
  http: HttpClient
}

type Prompt = LanguageModelV4Message[]
type UserPart = Extract<LanguageModelV4Message, { role: 'user' }>['content'][number]

/** A data URL as the SDK's file data, or the URL itself. */
function filePart(url: string): UserPart {
  const match = /^data:([^;,]+);base64,(.*)$/s.exec(url)
  if (match) return { type: 'file', mediaType: match[1]!, data: { type: 'data', data: match[2]! } } as UserPart
  return { type: 'file', mediaType: 'image/*', data: { type: 'url', url: new URL(url) } } as UserPart
}

const textOf = (content: unknown): string =>
  typeof content === 'string'
    ? content
    : Array.isArray(content)
      ? content.map((p) => (p && typeof p === 'object' && 'text' in p ? String((p as { text: unknown }).text) : '')).join('')
      : ''

const parseInput = (raw: string): unknown => {
  try {
    return JSON.parse(raw || '{}')
  } catch {
    return {}
  }
}

/** The OpenAI-format history as the AI SDK's prompt; tool results name their call's tool, as Gemini needs. */
export function toSdkPrompt(messages: readonly ModelMessage[]): Prompt {
  const toolNames = new Map<string, string>()
  const prompt: Prompt = []
  for (const message of messages) {
    if (message.role === 'system' || message.role === 'developer') prompt.push({ role: 'system', content: textOf(message.content) })
    else if (message.role === 'user') {
      const parts: UserPart[] =
        typeof message.content === 'string'
          ? [{ type: 'text', text: message.content }]
          : message.content.map((p): UserPart => (p.type === 'image_url' ? filePart(p.image_url.url) : { type: 'text', text: p.type === 'text' ? p.text : '' }))
      prompt.push({ role: 'user', content: parts })
    } else if (message.role === 'assistant') {
      const content: Extract<LanguageModelV4Message, { role: 'assistant' }>['content'] = []
      const text = textOf(message.content)
      if (text) content.push({ type: 'text', text })
      for (const call of message.tool_calls ?? []) {
        if (call.type !== 'function') continue
        toolNames.set(call.id, call.function.name)
        content.push({ type: 'tool-call', toolCallId: call.id, toolName: call.function.name, input: parseInput(call.function.arguments) })
      }
      prompt.push({ role: 'assistant', content })
    } else if (message.role === 'tool') {
      const result = {
        type: 'tool-result' as const,
        toolCallId: message.tool_call_id,
        toolName: toolNames.get(message.tool_call_id) ?? 'tool',
        output: { type: 'text' as const, value: textOf(message.content) },
      }
      // Consecutive results answer one assistant turn together.
      const last = prompt.at(-1)
      if (last?.role === 'tool') last.content.push(result)
      else prompt.push({ role: 'tool', content: [result] })
    }
  }
  return prompt
}

export const toSdkTools = (tools: readonly ModelTool[] | undefined): LanguageModelV4FunctionTool[] | undefined =>
  tools?.length
    ? tools.flatMap((tool) =>
        tool.type === 'function'
          ? [
              {
                type: 'function' as const,
                name: tool.function.name,
                description: tool.function.description,
                inputSchema: (tool.function.parameters ?? { type: 'object', properties: {} }) as LanguageModelV4FunctionTool['inputSchema'],
              },
            ]
          : [],
      )
    : undefined

const FINISH_REASONS: Record<string, string> = { stop: 'stop', length: 'length', 'content-filter': 'content_filter', 'tool-calls': 'tool_calls' }

/** Maps what the SDK throws or streams as an error to a stream error with a stable code; never the key or the URL. */
export function sdkFailure(error: unknown, name: string): StreamError {
  if (error instanceof StreamError) return error
  if (error instanceof AppError)
    return new StreamError(
      error.code === 'upstream_timeout' ? 'upstream_timeout' : 'upstream_error',
      `The model provider ${name} could not be reached: ${error.message}`,
    )
  const status = (error as { statusCode?: unknown })?.statusCode
  if (typeof status === 'number') {
    if (status === 429) return new StreamError('upstream_rate_limited', `The model provider ${name} is rate limiting requests; try again shortly`)
    const hint = status === 401 || status === 403 ? `; check the key of ${name} in MODEL_PROVIDERS` : ''
    const said = String((error as Error).message ?? '').slice(0, 200)
    return new StreamError('upstream_error', `The model provider ${name} answered ${status}: ${said}${hint}`)
  }
  if ((error as Error)?.name === 'AI_TypeValidationError' || (error as Error)?.name === 'AI_JSONParseError')
    return new StreamError('upstream_malformed', `The model provider ${name} sent a malformed chunk`)
  const said = typeof error === 'object' && error && 'message' in error ? String((error as Error).message) : JSON.stringify(error)
  return new StreamError('upstream_error', `The model provider ${name} failed: ${said}`.slice(0, 300))
}

async function sdkModel(options: AiSdkProviderOptions, modelId: string): Promise<LanguageModelV4> {
  // Every request goes through the service's client; its own retries (one) replace the SDK's.
  const fetch = ((input: string | URL | Request, init?: RequestInit) =>
    options.http.request(input instanceof Request ? input.url : input, {
      ...init,
      upstream: `model provider ${options.name}`,
      timeoutMs: options.timeoutMs,
      retries: 0,
    })) as typeof globalThis.fetch
  if (options.kind === 'anthropic') {
    const { createAnthropic } = await import('@ai-sdk/anthropic')
    return createAnthropic({ apiKey: options.apiKey, baseURL: options.baseUrl, fetch })(modelId) as LanguageModelV4
  }
  const { createGoogle } = await import('@ai-sdk/google')
  return createGoogle({ apiKey: options.apiKey, baseURL: options.baseUrl, fetch })(modelId) as LanguageModelV4
}

/** A provider speaking Anthropic's or Google's own API through the AI SDK. Image generation is not offered. */
export function createAiSdkProvider(options: AiSdkProviderOptions): ModelProvider {
  return {
    async *stream(request, signal) {
      const upstream = new AbortController()
      const stop = () => upstream.abort(signal.reason)
      if (signal.aborted) stop()
      signal.addEventListener('abort', stop, { once: true })
      let silence: StreamError | undefined
      let lastHeard = performance.now()
      const watchdog = setInterval(
        () => {
          if (performance.now() - lastHeard <= options.idleMs) return
          silence = new StreamError('upstream_stalled', `The model stream was silent for ${options.idleMs} ms`)
          upstream.abort(silence)
        },
        Math.max(10, options.idleMs / 4),
      )
      try {
        const model = await sdkModel(options, request.model)
        const { stream } = await model.doStream({
          prompt: toSdkPrompt(request.messages),
          tools: toSdkTools(request.tools),
          temperature: request.temperature,
          maxOutputTokens: request.maxOutputTokens,
          abortSignal: upstream.signal,
        })
        lastHeard = performance.now()
        const calls = new Map<string, number>()
        let finished = false
        const reader = stream.getReader()
        try {
          for (;;) {
            const { value, done } = await reader.read()
            if (done) break
            lastHeard = performance.now()
            const events = eventsOf(value, calls, options.name)
            if (value.type === 'finish') finished = true
            if (events.length) yield events
          }
        } finally {
          reader.releaseLock()
        }
        if (!finished && !signal.aborted) throw new StreamError('upstream_error', `The model stream of ${options.name} ended without a finish reason`)
      } catch (err) {
        if (silence) throw silence
        if (signal.aborted) return
        throw sdkFailure(err, options.name)
      } finally {
        clearInterval(watchdog)
        signal.removeEventListener('abort', stop)
        upstream.abort()
      }
    },

    async generateImage() {
      throw new StreamError(
        'upstream_error',
        `The model provider ${options.name} (${options.kind}) does not generate images here; set CHAT_IMAGE_MODEL to a model of an OpenAI-compatible provider`,
      )
    },
  }
}

/** The loop's events for one stream part; tool calls are numbered in the order they start. */
function eventsOf(part: LanguageModelV4StreamPart, calls: Map<string, number>, name: string): ModelEvent[] {
  switch (part.type) {
    case 'text-delta':
      return part.delta ? [{ type: 'text', delta: part.delta }] : []
    case 'reasoning-delta':
      return part.delta ? [{ type: 'reasoning', delta: part.delta }] : []
    case 'tool-input-start': {
      const index = calls.size
      calls.set(part.id, index)
      return [{ type: 'tool-call', index, id: part.id, name: part.toolName }]
    }
    case 'tool-input-delta': {
      const index = calls.get(part.id)
      return index === undefined || !part.delta ? [] : [{ type: 'tool-call', index, argumentsDelta: part.delta }]
    }
    case 'tool-call': {
      // A call that arrived whole (Gemini sends each function call in one piece) with no input events before it.
      if (calls.has(part.toolCallId)) return []
      const index = calls.size
      calls.set(part.toolCallId, index)
      return [{ type: 'tool-call', index, id: part.toolCallId, name: part.toolName, argumentsDelta: part.input }]
    }
    case 'finish': {
      const usage: ModelEvent = { type: 'usage', inputTokens: part.usage.inputTokens.total ?? 0, outputTokens: part.usage.outputTokens.total ?? 0 }
      const reason =
        calls.size && part.finishReason.unified === 'stop' ? 'tool_calls' : (FINISH_REASONS[part.finishReason.unified] ?? part.finishReason.unified)
      if (part.finishReason.unified === 'error') throw new StreamError('upstream_error', `The model provider ${name} ended the answer with an error`)
      return [usage, { type: 'finish', reason }]
    }
    case 'error':
      throw sdkFailure(part.error, name)
    default:
      return []
  }
}
