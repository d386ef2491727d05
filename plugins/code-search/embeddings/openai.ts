/**
 * Embeddings from any OpenAI-compatible endpoint (OpenAI, or a self-hosted server such as vLLM,
 * llama.cpp or Ollama) through the `openai` client: POST {baseUrl}/embeddings. Texts go in batches;
 * vectors are asked for as plain floats (base64 is not universal among self-hosted servers) and
 * scaled to unit length, since not every model returns them normalised.
 */
import type { ClientOptions, OpenAI } from 'openai'
import type { CreateEmbeddingResponse } from 'openai/resources/embeddings'
import { AppError } from '../../../src/errors.ts'
import { lazily } from '../../../src/lazy.ts'
import { normalise, type EmbeddingProvider } from './provider.ts'

export interface OpenAiEmbeddingsOptions {
  /** Base URL including the API version, e.g. https://api.openai.com/v1 or http://127.0.0.1:8000/v1. */
  baseUrl: string
  /** Sent as a bearer token; self-hosted servers often need none. */
  apiKey?: string
  /** e.g. text-embedding-3-small. */
  model: string
  /** Asked of the model (models that support shortened vectors); unset, the model's own size. */
  dimensions?: number
  /** Longest wait for one request. Default 30000. */
  timeoutMs?: number
  /** Retries of a failed request (429, 5xx, connection), honouring Retry-After. Default 2. */
  maxRetries?: number
  /** Texts per request. Default 64. */
  batchSize?: number
  /** Texts are cut to this many characters, within common models' input limits. Default 8000. */
  maxInputChars?: number
  /** For tests: the fetch the client uses. */
  fetch?: ClientOptions['fetch']
}

const provider = { provider: 'embeddings' }

// Loaded with the first embedding request: a start-up, even with embeddings configured, does not wait for the SDK.
const openAiSdk = lazily(() => import('openai'))

function upstreamError(OpenAI: typeof import('openai').default, error: unknown, options: OpenAiEmbeddingsOptions): AppError {
  if (error instanceof OpenAI.APIConnectionTimeoutError)
    return new AppError('upstream_timeout', `The embeddings endpoint did not answer within ${options.timeoutMs ?? 30_000} ms`, { extensions: provider })
  if (error instanceof OpenAI.RateLimitError) {
    const retryAfter = error.headers?.get('retry-after')
    return new AppError('unavailable', "The embeddings endpoint is limiting this service's requests (429); try again later", {
      extensions: provider,
      headers: retryAfter ? { 'retry-after': retryAfter } : undefined,
    })
  }
  if (error instanceof OpenAI.APIError && error.status !== undefined) {
    const hint =
      error.status === 401 || error.status === 403
        ? ': check EMBEDDINGS_API_KEY'
        : error.status === 404
          ? ': check EMBEDDINGS_BASE_URL and EMBEDDINGS_MODEL'
          : ''
    return new AppError('upstream_error', `The embeddings endpoint answered ${error.status}${hint}`, { extensions: provider })
  }
  return new AppError('upstream_error', `The embeddings endpoint is unreachable: ${(error as Error).message}`, { extensions: provider, cause: error })
}

export function createOpenAiEmbeddings(options: OpenAiEmbeddingsOptions): EmbeddingProvider {
  const connection = lazily(async () => {
    const { default: OpenAI } = await openAiSdk()
    const client: OpenAI = new OpenAI({
      baseURL: options.baseUrl,
      // The client insists on a key; a server that wants none ignores the header.
      apiKey: options.apiKey ?? 'unused',
      timeout: options.timeoutMs ?? 30_000,
      maxRetries: options.maxRetries ?? 2,
      fetch: options.fetch,
    })
    return { OpenAI, client }
  })
  const batchSize = options.batchSize ?? 64
  const maxInputChars = options.maxInputChars ?? 8000
  const malformed = (why: string) => new AppError('upstream_error', `The embeddings endpoint answered ${why}`, { extensions: provider })

  async function embedBatch(texts: readonly string[], signal: AbortSignal | undefined): Promise<Float32Array[]> {
    const { OpenAI, client } = await connection()
    let answer: CreateEmbeddingResponse
    try {
      answer = await client.embeddings.create(
        {
          model: options.model,
          // An empty input is refused by some servers; a space embeds as "nothing".
          input: texts.map((text) => (text.length > maxInputChars ? text.slice(0, maxInputChars) : text) || ' '),
          encoding_format: 'float',
          ...(options.dimensions ? { dimensions: options.dimensions } : {}),
        },
        { signal },
      )
    } catch (error) {
      if (signal?.aborted) throw signal.reason
      throw upstreamError(OpenAI, error, options)
    }
    const data = Array.isArray(answer?.data) ? answer.data : undefined
    if (!data || data.length !== texts.length) throw malformed(`${data?.length ?? 'no'} vectors for ${texts.length} texts`)
    const vectors: Float32Array[] = new Array(texts.length)
    for (const [position, item] of data.entries()) {
      // Servers give `index`; trust it over the order when present.
      const at = typeof item.index === 'number' ? item.index : position
      if (!Array.isArray(item.embedding) || item.embedding.length === 0 || item.embedding.some((x) => typeof x !== 'number' || !Number.isFinite(x)))
        throw malformed('a vector that is not a list of numbers')
      if (at < 0 || at >= texts.length || vectors[at]) throw malformed('vectors with unusable indexes')
      vectors[at] = normalise(Float32Array.from(item.embedding))
    }
    const size = vectors[0]!.length
    if (vectors.some((v) => v.length !== size)) throw malformed('vectors of different lengths')
    if (options.dimensions && size !== options.dimensions) throw malformed(`${size}-dimension vectors; EMBEDDINGS_DIMENSIONS is ${options.dimensions}`)
    return vectors
  }

  return {
    id: `openai-compatible:${options.model}${options.dimensions ? `/${options.dimensions}` : ''}@${new URL(options.baseUrl).host}`,
    async embed(texts, { signal } = {}) {
      const vectors: Float32Array[] = []
      for (let i = 0; i < texts.length; i += batchSize) vectors.push(...(await embedBatch(texts.slice(i, i + batchSize), signal)))
      return vectors
    },
  }
}
