/**
 * A fake OpenAI-compatible server: /v1/chat/completions streams scripted completions the way OpenAI
 * does (SSE `data:` chunks, `data: [DONE]`), with text, log-probabilities, reasoning, tool calls,
 * usage, HTTP errors, malformed chunks, slow, paused and stalled streams; /v1/images/generations answers
 * base64 images. It notices when a client abandons a stream.
 */
import { startFakeServer, type RecordedRequest } from './server.ts'

export interface ScriptedToolCall {
  name: string
  /** JSON text, sent in a few pieces. */
  arguments: string
  id?: string
}

export interface CompletionScript {
  /** Tokens of the answer; a string is split into words (spaces kept). */
  text?: string | string[]
  /** Natural-log probability per token; sent only when the request asks for logprobs. */
  logprobs?: number[]
  reasoning?: string
  toolCalls?: ScriptedToolCall[]
  finishReason?: string
  usage?: { prompt_tokens: number; completion_tokens: number } | null
  /** Pause before each token. */
  delayMs?: number
  /** After this many tokens the stream goes silent but stays open. */
  stallAfter?: number
  /** After `after` tokens the stream waits for `until` to settle, then sends the rest. */
  pause?: { after: number; until: Promise<unknown> }
  /** After this many tokens a chunk that is not JSON is sent. */
  malformedAfter?: number
  /** Answer with this HTTP status (and an OpenAI error body) instead of a stream. */
  status?: number
  retryAfter?: string
  /** Answers only a request this accepts; a queue shared by independent callers (a chat and an agent) stays unmixed. */
  when?: (body: Record<string, any>) => boolean
}

/** Accepts a request whose messages contain `text`. */
export function asking(text: string): (body: Record<string, any>) => boolean {
  return (body) => JSON.stringify(body.messages ?? []).includes(text)
}

export interface FakeOpenAi {
  readonly url: string
  /** Base URL for OPENAI_BASE_URL. */
  readonly baseUrl: string
  readonly requests: RecordedRequest[]
  /** Parsed bodies of chat completion requests, in order. */
  readonly completions: Record<string, any>[]
  /** Streams whose client went away before the end. */
  readonly abandoned: number
  /** Streams still being written. */
  readonly open: number
  /** Scripts answered in order (the first whose `when` accepts the request); when none fits, `fallback` answers. */
  queue: CompletionScript[]
  fallback: (body: Record<string, any>) => CompletionScript
  image: { b64: string; status?: number }
  close(): Promise<void>
}

// A 1x1 transparent PNG.
export const TINY_PNG_B64 = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII='

export function tokensOf(text: string | string[] | undefined): string[] {
  if (text === undefined) return []
  if (Array.isArray(text)) return text
  return text.match(/\S+\s*|\s+/g) ?? []
}

const encoder = new TextEncoder()

export function startFakeOpenAi(): FakeOpenAi {
  let abandoned = 0
  let open = 0
  const completions: Record<string, any>[] = []
  const state = {
    queue: [] as CompletionScript[],
    fallback: (_body: Record<string, any>): CompletionScript => ({ text: 'Hello from the fake model.', logprobs: undefined }),
    image: { b64: TINY_PNG_B64 } as { b64: string; status?: number },
  }

  function errorResponse(status: number, retryAfter?: string) {
    return new Response(JSON.stringify({ error: { message: `scripted ${status}`, type: 'fake_error', code: null } }), {
      status,
      headers: { 'content-type': 'application/json', ...(retryAfter ? { 'retry-after': retryAfter } : {}) },
    })
  }

  function stream(request: Request, body: Record<string, any>, script: CompletionScript): Response {
    const id = `chatcmpl-${crypto.randomUUID()}`
    const model = body.model
    const created = Math.floor(Date.now() / 1000)
    const chunk = (delta: Record<string, unknown>, extra: Record<string, unknown> = {}) =>
      `data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model, choices: [{ index: 0, delta, finish_reason: null, ...extra }] })}\n\n`
    const tokens = tokensOf(script.text)
    const wantsLogprobs = body.logprobs === true
    const includeUsage = body.stream_options?.include_usage === true
    let finished = false
    open++

    const body$ = new ReadableStream<Uint8Array>({
      async start(controller) {
        const send = (text: string) => controller.enqueue(encoder.encode(text))
        const pause = async () => {
          if (script.delayMs) await Bun.sleep(script.delayMs)
        }
        try {
          send(chunk({ role: 'assistant', content: '' }))
          if (script.reasoning) send(chunk({ reasoning_content: script.reasoning }))
          for (let i = 0; i < tokens.length; i++) {
            if (request.signal.aborted) return
            if (script.stallAfter !== undefined && i === script.stallAfter) {
              await new Promise((resolve) => request.signal.addEventListener('abort', resolve, { once: true }))
              return
            }
            if (script.pause && i === script.pause.after) await script.pause.until
            if (script.malformedAfter !== undefined && i === script.malformedAfter) {
              send('data: {"id": "broken", "choices": [\n\n')
              finished = true
              controller.close()
              return
            }
            await pause()
            const lp = script.logprobs?.[i]
            const logprobs =
              wantsLogprobs && lp !== undefined ? { logprobs: { content: [{ token: tokens[i], logprob: lp, bytes: null, top_logprobs: [] }] } } : {}
            send(chunk({ content: tokens[i] }, logprobs))
          }
          for (const [index, call] of (script.toolCalls ?? []).entries()) {
            const callId = call.id ?? `call_${index}_${id.slice(-6)}`
            send(chunk({ tool_calls: [{ index, id: callId, type: 'function', function: { name: call.name, arguments: '' } }] }))
            const pieces = call.arguments.match(/.{1,8}/gs) ?? ['']
            for (const piece of pieces) {
              await pause()
              send(chunk({ tool_calls: [{ index, function: { arguments: piece } }] }))
            }
          }
          const finish = script.finishReason ?? (script.toolCalls?.length ? 'tool_calls' : 'stop')
          send(
            `data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model, choices: [{ index: 0, delta: {}, finish_reason: finish }] })}\n\n`,
          )
          if (includeUsage && script.usage !== null) {
            const usage = script.usage ?? { prompt_tokens: 10, completion_tokens: tokens.length }
            send(
              `data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model, choices: [], usage: { ...usage, total_tokens: usage.prompt_tokens + usage.completion_tokens } })}\n\n`,
            )
          }
          send('data: [DONE]\n\n')
          finished = true
          controller.close()
        } catch {
          // The client went away while we were writing.
        } finally {
          open--
          if (!finished) abandoned++
        }
      },
    })
    return new Response(body$, { headers: { 'content-type': 'text/event-stream' } })
  }

  const server = startFakeServer(async (request, recorded) => {
    const path = new URL(request.url).pathname
    if (request.method === 'POST' && path === '/v1/chat/completions') {
      const body = JSON.parse(recorded.body)
      completions.push(body)
      const index = state.queue.findIndex((script) => !script.when || script.when(body))
      const script = index >= 0 ? state.queue.splice(index, 1)[0]! : state.fallback(body)
      if (script.status) return errorResponse(script.status, script.retryAfter)
      if (!body.stream) return errorResponse(400)
      return stream(request, body, script)
    }
    if (request.method === 'POST' && path === '/v1/images/generations') {
      if (state.image.status) return errorResponse(state.image.status)
      return Response.json({ created: Math.floor(Date.now() / 1000), data: [{ b64_json: state.image.b64 }] })
    }
    return errorResponse(404)
  })

  return {
    url: server.url,
    baseUrl: `${server.url}/v1`,
    requests: server.requests,
    completions,
    get abandoned() {
      return abandoned
    },
    get open() {
      return open
    },
    get queue() {
      return state.queue
    },
    set queue(q) {
      state.queue = q
    },
    get fallback() {
      return state.fallback
    },
    set fallback(f) {
      state.fallback = f
    },
    get image() {
      return state.image
    },
    set image(i) {
      state.image = i
    },
    close: server.close,
  }
}
