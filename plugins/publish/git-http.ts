/**
 * The HTTP client isomorphic-git talks smart HTTP through: fetch with a deadline per request, no
 * redirects (a redirect could carry the token's basic auth to another host), and a cap on how much a
 * response may hold, so an oversized branch cannot fill memory.
 */
import type { GitHttpRequest, GitHttpResponse, HttpClient } from 'isomorphic-git'

export interface GitHttpOptions {
  /** Longest wait for each request's response headers and body. */
  timeoutMs: number
  /** Largest response body read, in bytes; more is an error. */
  maxResponseBytes: number
  fetch?: typeof fetch
}

/** A response body larger than the cap. */
export class ResponseTooLargeError extends Error {
  constructor(readonly limitBytes: number) {
    super(`git response exceeds ${limitBytes} bytes`)
    this.name = 'ResponseTooLargeError'
  }
}

async function collect(body: AsyncIterableIterator<Uint8Array> | undefined): Promise<Uint8Array | undefined> {
  if (!body) return undefined
  const chunks: Uint8Array[] = []
  for await (const chunk of body) chunks.push(chunk)
  return Buffer.concat(chunks)
}

async function* capped(stream: ReadableStream<Uint8Array>, limit: number): AsyncIterableIterator<Uint8Array> {
  let total = 0
  for await (const chunk of stream) {
    total += chunk.byteLength
    if (total > limit) throw new ResponseTooLargeError(limit)
    yield chunk
  }
}

export function createGitHttp(options: GitHttpOptions): HttpClient {
  const doFetch = options.fetch ?? fetch
  return {
    async request(request: GitHttpRequest): Promise<GitHttpResponse> {
      const deadline = AbortSignal.timeout(options.timeoutMs)
      const signal = request.signal ? AbortSignal.any([request.signal, deadline]) : deadline
      const response = await doFetch(request.url, {
        method: request.method ?? 'GET',
        headers: request.headers,
        body: await collect(request.body),
        redirect: 'manual',
        signal,
      })
      return {
        url: response.url || request.url,
        method: request.method ?? 'GET',
        statusCode: response.status,
        statusMessage: response.statusText,
        headers: Object.fromEntries(response.headers),
        body: response.body ? capped(response.body, options.maxResponseBytes) : undefined,
      }
    },
  }
}

/**
 * `http`, remembering the first error a request or its body threw. isomorphic-git reports a body that
 * failed mid-way as an empty or malformed response; what really happened (a deadline, the size cap)
 * is what the caller should answer.
 */
export function watchFailures(http: HttpClient): { http: HttpClient; takeFailure(): unknown } {
  let failure: unknown
  const note = (error: unknown) => {
    failure ??= error
    return error
  }
  async function* watched(body: AsyncIterableIterator<Uint8Array>): AsyncIterableIterator<Uint8Array> {
    try {
      yield* body
    } catch (error) {
      throw note(error)
    }
  }
  return {
    http: {
      async request(request) {
        const response = await http.request(request).catch((error: unknown) => {
          throw note(error)
        })
        return response.body ? { ...response, body: watched(response.body) } : response
      },
    },
    takeFailure() {
      const taken = failure
      failure = undefined
      return taken
    },
  }
}
