/**
 * The HTTP client isomorphic-git clones through. Its bundled clients follow redirects on their own and resolve
 * names at connect time; this one checks each URL before connecting, connects to the address that check
 * resolved (so a second lookup cannot answer differently), follows redirects itself re-checking every hop,
 * sends credentials only to the code-hosting origin, and holds every response body to the import's byte budget
 * and deadline.
 */
import type { GitHttpRequest, GitHttpResponse, HttpClient } from 'isomorphic-git'
import { AppError } from '../../src/errors.ts'
import { parseHostAddress } from '../../src/http.ts'
import { guardRepositoryUrl, refused, type UrlPolicy } from './repository-url.ts'

export interface GuardedGitHttpOptions {
  policy: UrlPolicy
  /** Budget for every response body of one import together, in bytes (IMPORT_MAX_REPOSITORY_BYTES). */
  maxBytes: number
  /** Ends every request and body read: the clone deadline or shutdown. Its reason is what the import fails with. */
  signal: AbortSignal
  /** The one origin that may receive an Authorization header; undefined sends it nowhere. */
  credentialOrigin?: string
  /** Addresses already checked, by host, so the name is not resolved twice. */
  pinned?: ReadonlyMap<string, string>
  /** Redirect hops followed per request. Default 5. */
  maxRedirects?: number
  fetch?: typeof fetch
}

export interface GuardedGitHttp extends HttpClient {
  /** Response body bytes read so far. */
  readonly receivedBytes: number
  /**
   * What stopped the transfer (a limit, a refused hop, the deadline). isomorphic-git reads a failed body as
   * its end, so callers check this first: it is the real reason for whatever isomorphic-git reports.
   */
  readonly failure: unknown
}

const REDIRECTS = new Set([301, 302, 303, 307, 308])

async function collect(body: GitHttpRequest['body']): Promise<Uint8Array | undefined> {
  if (!body) return undefined
  const parts: Uint8Array[] = []
  for await (const part of body as AsyncIterable<Uint8Array>) parts.push(part)
  return Buffer.concat(parts)
}

function withoutAuthorization(headers: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(headers).filter(([name]) => name.toLowerCase() !== 'authorization'))
}

export function createGuardedGitHttp(options: GuardedGitHttpOptions): GuardedGitHttp {
  const { policy, maxBytes, signal } = options
  const doFetch = options.fetch ?? fetch
  const maxRedirects = options.maxRedirects ?? 5
  const pinned = new Map(options.pinned)
  // Like git, a redirected ref advertisement moves the repository: later requests go to the new base URL.
  const moved = new Map<string, string>()
  let receivedBytes = 0
  let failure: unknown

  const fail = (error: unknown): never => {
    failure ??= error
    throw failure
  }

  async function addressOf(target: URL, label: string): Promise<string> {
    const known = pinned.get(target.host)
    if (known !== undefined) return known
    const { address } = await guardRepositoryUrl(target, policy, label).catch(fail)
    pinned.set(target.host, address)
    return address
  }

  async function send(target: URL, address: string, method: string, headers: Record<string, string>, body: Uint8Array | undefined) {
    const direct = new URL(target)
    direct.hostname = address.includes(':') ? `[${address}]` : address
    const named = parseHostAddress(target.hostname) === undefined
    try {
      return await doFetch(direct, {
        method,
        headers: { ...headers, host: target.host },
        body,
        redirect: 'manual',
        signal,
        // The certificate is checked against the name the user gave, not the pinned address.
        tls: target.protocol === 'https:' && named ? { serverName: target.hostname } : undefined,
      } as RequestInit)
    } catch (error) {
      if (signal.aborted) fail(signal.reason)
      const code = (error as { code?: unknown })?.code
      throw new AppError('upstream_error', `${target.host} is unreachable: ${typeof code === 'string' ? code : 'network error'}`)
    }
  }

  async function* limited(stream: ReadableStream<Uint8Array>): AsyncGenerator<Uint8Array> {
    const reader = stream.getReader()
    const stop = () => void reader.cancel().catch(() => {})
    signal.addEventListener('abort', stop, { once: true })
    try {
      for (;;) {
        let step: Awaited<ReturnType<typeof reader.read>>
        try {
          step = await reader.read()
        } catch (error) {
          if (signal.aborted) fail(signal.reason)
          throw error
        }
        if (signal.aborted) fail(signal.reason)
        if (step.done) return
        receivedBytes += step.value.byteLength
        if (receivedBytes > maxBytes)
          fail(
            new AppError('repository_too_large', `The Git server sent more than ${maxBytes} bytes (IMPORT_MAX_REPOSITORY_BYTES)`, {
              extensions: { limitBytes: maxBytes },
            }),
          )
        yield step.value
      }
    } finally {
      signal.removeEventListener('abort', stop)
      stop()
    }
  }

  return {
    get receivedBytes() {
      return receivedBytes
    },
    get failure() {
      return failure
    },
    async request({ url, method = 'GET', headers = {}, body }: GitHttpRequest): Promise<GitHttpResponse> {
      if (failure !== undefined) throw failure
      if (signal.aborted) fail(signal.reason)
      const payload = await collect(body)
      const requested = url
      for (const [from, to] of moved) if (url.startsWith(from)) url = to + url.slice(from.length)
      let target = new URL(url)
      for (let hop = 0; ; hop++) {
        const address = await addressOf(target, hop === 0 ? 'repository URL' : 'redirect target')
        const outgoing = options.credentialOrigin === target.origin ? headers : withoutAuthorization(headers)
        const response = await send(target, address, method, outgoing, payload)
        if (REDIRECTS.has(response.status)) {
          await response.body?.cancel()
          const location = response.headers.get('location')
          if (!location) throw new AppError('upstream_error', `${target.host} answered a redirect without a Location`)
          if (hop >= maxRedirects) throw new AppError('upstream_error', `${target.host} redirected more than ${maxRedirects} times`)
          // Git itself replays a request body only for 307 and 308.
          if (method !== 'GET' && response.status !== 307 && response.status !== 308)
            throw new AppError('upstream_error', `${target.host} answered ${method} with a ${response.status} redirect`)
          const next = new URL(location, target)
          if (target.protocol === 'https:' && next.protocol === 'http:') fail(refused('redirect target must not downgrade https to http'))
          target = next
          continue
        }
        const advertisement = /\/info\/refs(\?.*)?$/
        if (hop > 0 && advertisement.test(requested) && advertisement.test(target.pathname + target.search))
          moved.set(requested.replace(advertisement, ''), target.toString().replace(advertisement, ''))
        return {
          url: target.toString(),
          method,
          statusCode: response.status,
          statusMessage: response.statusText,
          headers: Object.fromEntries(response.headers),
          body: response.body ? limited(response.body) : undefined,
        }
      }
    },
  }
}
