/**
 * A fake Anthropic Messages API: POST /v1/messages with `stream: true` answers scripted messages as the real API
 * streams them (server-sent events `message_start`, `content_block_start`, `ping`, `content_block_delta` with
 * `text_delta` or `input_json_delta`, `content_block_stop`, `message_delta` with the stop reason and output
 * tokens, `message_stop`), or an HTTP error with Anthropic's error body. Requests without the scripted key are 401.
 */
import { startFakeServer, type FakeServer } from './server.ts'

export interface AnthropicScript {
  text?: string
  toolUse?: { name: string; input: Record<string, unknown> }
  usage?: { input: number; output: number }
  /** Answer with this status and an error body instead of a stream. */
  status?: number
}

export interface FakeAnthropic extends FakeServer {
  baseUrl: string
  queue: AnthropicScript[]
  /** Parsed bodies of the message requests, in order. */
  readonly bodies: Record<string, any>[]
}

const event = (type: string, data: Record<string, unknown>) => `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`

export function startFakeAnthropic(key: string): FakeAnthropic {
  const bodies: Record<string, any>[] = []
  const fake = {} as FakeAnthropic
  const server = startFakeServer(async (request) => {
    if (new URL(request.url).pathname !== '/v1/messages') return new Response('not found', { status: 404 })
    if (request.headers.get('x-api-key') !== key)
      return Response.json({ type: 'error', error: { type: 'authentication_error', message: 'invalid x-api-key' } }, { status: 401 })
    const body = (await request.json()) as Record<string, any>
    bodies.push(body)
    const script = fake.queue.shift() ?? { text: 'Hello.' }
    if (script.status)
      return Response.json(
        { type: 'error', error: { type: script.status === 429 ? 'rate_limit_error' : 'api_error', message: 'Overloaded' } },
        { status: script.status },
      )
    const usage = script.usage ?? { input: 12, output: 7 }
    let out = event('message_start', {
      message: {
        id: 'msg_fake',
        type: 'message',
        role: 'assistant',
        content: [],
        model: body.model,
        stop_reason: null,
        stop_sequence: null,
        usage: { input_tokens: usage.input, output_tokens: 1 },
      },
    })
    let index = 0
    if (script.text) {
      out += event('content_block_start', { index, content_block: { type: 'text', text: '' } })
      out += event('ping', {})
      for (const word of script.text.split(/(?<= )/)) out += event('content_block_delta', { index, delta: { type: 'text_delta', text: word } })
      out += event('content_block_stop', { index })
      index++
    }
    if (script.toolUse) {
      out += event('content_block_start', { index, content_block: { type: 'tool_use', id: 'toolu_fake1', name: script.toolUse.name, input: {} } })
      const json = JSON.stringify(script.toolUse.input)
      const half = Math.floor(json.length / 2)
      for (const piece of [json.slice(0, half), json.slice(half)])
        out += event('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json: piece } })
      out += event('content_block_stop', { index })
    }
    out += event('message_delta', {
      delta: { stop_reason: script.toolUse ? 'tool_use' : 'end_turn', stop_sequence: null },
      usage: { output_tokens: usage.output },
    })
    out += event('message_stop', {})
    return new Response(out, { headers: { 'content-type': 'text/event-stream' } })
  })
  return Object.assign(fake, server, { baseUrl: `${server.url}/v1`, queue: [], bodies })
}
