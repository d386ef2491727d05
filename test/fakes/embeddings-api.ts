/**
 * A fake OpenAI-compatible embeddings endpoint: POST /v1/embeddings as OpenAI, vLLM and llama.cpp answer
 * it. Vectors are letter counts of the input (so similar texts get similar vectors and a test can tell
 * which text a vector came from), padded or cut to `dimensions`, and deliberately not normalised. It
 * checks the bearer key when given one, and can be told to fail, answer garbage or never answer.
 */
import { startFakeServer, type RecordedRequest } from './server.ts'

export type FakeEmbeddingsBehaviour =
  | { kind: 'vectors' }
  | { kind: 'status'; status: number; retryAfter?: string }
  | { kind: 'malformed' }
  /** One vector fewer than inputs. */
  | { kind: 'short' }
  /** Accepts the request and never answers. */
  | { kind: 'silent' }

export interface FakeEmbeddingsApi {
  /** Base URL with /v1, as EMBEDDINGS_BASE_URL takes it. */
  readonly url: string
  readonly requests: RecordedRequest[]
  /** Embedding requests received, retries included. */
  readonly calls: number
  /** Texts embedded, over all requests. */
  readonly texts: number
  behaviour: FakeEmbeddingsBehaviour
  close(): Promise<void>
}

/** The fake's vector for a text: counts of a-z, then digits, then everything else, cut to `dimensions`. */
export function letterVector(text: string, dimensions: number): number[] {
  const vector = new Array<number>(dimensions).fill(0)
  for (const char of text.toLowerCase()) {
    const code = char.charCodeAt(0)
    const bucket = code >= 97 && code <= 122 ? code - 97 : code >= 48 && code <= 57 ? 26 : 27
    if (bucket < dimensions) vector[bucket]! += 1
  }
  // Never all zero: some servers answer zeros for empty input, which normalises to nothing.
  vector[dimensions - 1]! += 0.5
  return vector
}

export function startFakeEmbeddingsApi(options: { apiKey?: string; defaultDimensions?: number } = {}): FakeEmbeddingsApi {
  const defaultDimensions = options.defaultDimensions ?? 32
  const api = { behaviour: { kind: 'vectors' } as FakeEmbeddingsBehaviour, calls: 0, texts: 0 }
  const json = (body: unknown, status = 200, headers: Record<string, string> = {}) =>
    new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json', ...headers } })
  const server = startFakeServer(async (request) => {
    const url = new URL(request.url)
    if (request.method !== 'POST' || url.pathname !== '/v1/embeddings') return json({ error: { message: 'not found' } }, 404)
    api.calls++
    if (options.apiKey && request.headers.get('authorization') !== `Bearer ${options.apiKey}`)
      return json({ error: { message: 'Incorrect API key provided', type: 'invalid_request_error', code: 'invalid_api_key' } }, 401)
    const behaviour = api.behaviour
    if (behaviour.kind === 'silent') return new Promise<Response>(() => {})
    if (behaviour.kind === 'status')
      return json({ error: { message: `status ${behaviour.status}` } }, behaviour.status, behaviour.retryAfter ? { 'retry-after': behaviour.retryAfter } : {})
    if (behaviour.kind === 'malformed') return new Response('{"data": [{"embedding": [0.1, ', { headers: { 'content-type': 'application/json' } })
    const body = (await request.json()) as { model?: unknown; input?: unknown; dimensions?: unknown; encoding_format?: unknown }
    const inputs = typeof body.input === 'string' ? [body.input] : body.input
    if (typeof body.model !== 'string' || !Array.isArray(inputs) || inputs.some((i) => typeof i !== 'string'))
      return json({ error: { message: 'model and input (string or list of strings) are required' } }, 400)
    if (body.encoding_format !== undefined && body.encoding_format !== 'float') return json({ error: { message: 'only float encoding is supported' } }, 400)
    const dimensions = typeof body.dimensions === 'number' ? body.dimensions : defaultDimensions
    api.texts += inputs.length
    const data = (inputs as string[]).map((text, index) => ({ object: 'embedding', index, embedding: letterVector(text, dimensions) }))
    // Reversed on purpose: clients must place vectors by `index`, not by order.
    data.reverse()
    if (behaviour.kind === 'short') data.pop()
    return json({ object: 'list', data, model: body.model, usage: { prompt_tokens: inputs.length, total_tokens: inputs.length } })
  })
  return {
    url: `${server.url}/v1`,
    requests: server.requests,
    get calls() {
      return api.calls
    },
    get texts() {
      return api.texts
    },
    get behaviour() {
      return api.behaviour
    },
    set behaviour(value) {
      api.behaviour = value
    },
    close: () => server.close(),
  }
}
