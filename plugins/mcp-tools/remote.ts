/**
 * How the service reaches an MCP server: every request (MCP messages, OAuth discovery, registration, token) goes
 * through the guarded HTTP client after the address check, never follows a redirect, and reads at most
 * MCP_TOOLS_RESPONSE_MAX_BYTES of a body. The MCP SDK's client speaks the protocol over it (Streamable HTTP).
 */
import type { Client } from '@modelcontextprotocol/sdk/client/index.js'
import pkg from '../../package.json' with { type: 'json' }
import { AppError } from '../../src/errors.ts'
import { guardUrl, parseHostAddress, type GuardOptions, type HttpClient, type HttpRequestInit } from '../../src/http.ts'
import { lazily } from '../../src/lazy.ts'

export type FetchLike = (url: string | URL, init?: RequestInit) => Promise<Response>

export interface RemotePolicy {
  /** MCP_TOOLS_ALLOW_HOSTS: reachable on any address; plain http only for these. */
  allowHosts: readonly string[]
  lookup?: GuardOptions['lookup']
  responseMaxBytes: number
  /** How long one request may wait for its response headers. */
  timeoutMs: number
}

const refused = (message: string, field = 'url') => new AppError('mcp_server_url_refused', message, { errors: [{ field, message }] })

const isAllowlisted = (url: URL, policy: RemotePolicy) => policy.allowHosts.includes(url.host) || policy.allowHosts.includes(url.hostname)

/** The MCP server URL as stored: http(s), no credentials, no fragment. Nothing is resolved yet. */
export function parseServerUrl(input: string): URL {
  let url: URL
  try {
    url = new URL(input.trim())
  } catch {
    throw refused('url must be an absolute http(s) URL')
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw refused(`url must use https, not ${url.protocol.replace(/:$/, '')}`)
  if (url.username || url.password) throw refused('url must not contain a username or password; the server asks for OAuth if it needs credentials')
  if (url.hash) throw refused('url must not have a fragment')
  return url
}

/**
 * Refuses a URL that is not http(s), is plain http to a host outside the allow list, or resolves to a loopback,
 * private, link-local, unspecified, reserved or metadata address (every spelling), unless its host is allow-listed.
 */
export async function guardServerUrl(url: URL, policy: RemotePolicy, label = 'MCP server URL'): Promise<string> {
  let address: string
  try {
    address = (await guardUrl(url, { allowHosts: [...policy.allowHosts], lookup: policy.lookup, label })).address
  } catch (error) {
    if (error instanceof AppError && error.code === 'bad_request') throw refused(error.message)
    throw error
  }
  if (url.protocol === 'http:' && !isAllowlisted(url, policy))
    throw refused(`${label} must use https (plain http is allowed only for hosts in MCP_TOOLS_ALLOW_HOSTS)`)
  return address
}

/** A response whose body errors once more than `max` bytes have been read. */
function capped(response: Response, max: number): Response {
  if (!response.body) return response
  let seen = 0
  const limit = new TransformStream<Uint8Array, Uint8Array>({
    transform(chunk, controller) {
      seen += chunk.byteLength
      if (seen > max) controller.error(new Error(`the MCP server's response is larger than ${max} bytes (MCP_TOOLS_RESPONSE_MAX_BYTES)`))
      else controller.enqueue(chunk)
    },
  })
  return new Response(response.body.pipeThrough(limit), { status: response.status, statusText: response.statusText, headers: response.headers })
}

export interface GuardedFetch extends FetchLike {
  /** The last 401 answer's WWW-Authenticate header, if a request was refused so. */
  readonly unauthorized?: string
}

/** The fetch the MCP SDK is handed: each URL checked, no redirects followed, bodies capped. */
export function guardedFetch(http: HttpClient, policy: RemotePolicy): GuardedFetch {
  const state: { unauthorized?: string } = {}
  const fetchFn = async (input: string | URL, init: RequestInit = {}) => {
    const url = parseServerUrl(String(input))
    // Connects to the address the check resolved, so a second lookup cannot answer differently (DNS rebinding).
    const address = await guardServerUrl(url, policy)
    const direct = new URL(url)
    direct.hostname = address.includes(':') ? `[${address}]` : address
    const headers = new Headers(init.headers)
    headers.set('host', url.host)
    const named = parseHostAddress(url.hostname) === undefined
    const response = await http.request(direct, {
      ...init,
      headers,
      // The certificate is checked against the server's name, not the pinned address.
      ...(url.protocol === 'https:' && named && { tls: { serverName: url.hostname } }),
      redirect: 'manual',
      retries: 0,
      timeoutMs: policy.timeoutMs,
      upstream: 'MCP server',
    } as HttpRequestInit)
    if (response.status === 401) state.unauthorized = response.headers.get('www-authenticate') ?? ''
    if (response.status >= 300 && response.status < 400) {
      await response.body?.cancel()
      return new Response(null, { status: 502, statusText: 'redirect refused' })
    }
    return capped(response, policy.responseMaxBytes)
  }
  return Object.defineProperty(fetchFn, 'unauthorized', { get: () => state.unauthorized }) as GuardedFetch
}

// The SDK's client and its schemas take a while to load: loaded at the first use.
const clientRuntime = lazily(async () => {
  const [{ Client }, { StreamableHTTPClientTransport }] = await Promise.all([
    import('@modelcontextprotocol/sdk/client/index.js'),
    import('@modelcontextprotocol/sdk/client/streamableHttp.js'),
  ])
  return { Client, StreamableHTTPClientTransport }
})

/**
 * Connects (initialize), runs `use`, and closes. `token` is sent as the bearer token of every request. Each use
 * is its own short session: nothing of one user's session is kept for another's calls.
 */
export async function withClient<T>(
  target: { url: string; token?: string; fetch: FetchLike; signal: AbortSignal; timeoutMs: number },
  use: (client: Client, options: { signal: AbortSignal; timeout: number }) => Promise<T>,
): Promise<T> {
  const { Client, StreamableHTTPClientTransport } = await clientRuntime()
  const headers: Record<string, string> = target.token ? { authorization: `Bearer ${target.token}` } : {}
  const transport = new StreamableHTTPClientTransport(new URL(target.url), {
    fetch: target.fetch,
    requestInit: { headers },
    reconnectionOptions: { maxReconnectionDelay: 1000, initialReconnectionDelay: 1000, reconnectionDelayGrowFactor: 1, maxRetries: 0 },
  })
  const client = new Client({ name: pkg.name, version: pkg.version }, { capabilities: {} })
  const options = { signal: target.signal, timeout: target.timeoutMs }
  try {
    await client.connect(transport, options)
    return await use(client, options)
  } finally {
    await client.close().catch(() => undefined)
  }
}
