/**
 * Outbound HTTP for every adapter (model provider, OAuth, payments, search): timeouts, retries of
 * idempotent requests, and errors that name the upstream without leaking credentials. Also the
 * address guard that keeps user-supplied URLs (repository import, webhooks) off internal networks.
 */
import { AppError } from './errors.ts'

export interface HttpClientOptions {
  /** How long to wait for the response headers. Default 15000. */
  timeoutMs?: number
  /** Extra attempts for idempotent requests. Default 2. */
  retries?: number
  /** A Retry-After longer than this ends the retries and the response is returned. Default 30. */
  maxRetryAfterSeconds?: number
  fetch?: typeof fetch
  sleep?: (ms: number) => Promise<void>
}

export interface HttpRequestInit extends RequestInit {
  timeoutMs?: number
  retries?: number
  /** Allows retrying a method that is not idempotent by definition (a POST with an idempotency key). */
  idempotent?: boolean
  /** Name of the upstream in error messages ("model provider"). Default: the URL's host. */
  upstream?: string
}

export interface HttpClient {
  /** Answers the final response whatever its status; throws AppError only when no response came. */
  request(url: string | URL, init?: HttpRequestInit): Promise<Response>
}

const IDEMPOTENT_METHODS = new Set(['GET', 'HEAD', 'PUT', 'DELETE', 'OPTIONS'])
const RETRYABLE_STATUS = new Set([429, 502, 503, 504])
const BACKOFF_BASE_MS = 250

/** Retry-After as milliseconds (delta seconds or an HTTP-date), or undefined when absent or unreadable. */
function retryAfterMs(header: string | null): number | undefined {
  if (header === null) return undefined
  const value = header.trim()
  if (/^\d+$/.test(value)) return Number(value) * 1000
  const at = Date.parse(value)
  return Number.isNaN(at) ? undefined : Math.max(0, at - Date.now())
}

// Equal jitter: at least half the exponential step, so retries from many clients spread without collapsing to zero.
function backoffMs(attempt: number): number {
  const step = BACKOFF_BASE_MS * 2 ** attempt
  return step / 2 + Math.random() * (step / 2)
}

// Bun's fetch errors carry the full URL (query string included) in `path`; only a code and a short
// message are kept, and the error itself is never attached as a cause.
function describeFailure(error: unknown): string {
  const code = (error as { code?: unknown })?.code
  if (typeof code === 'string' && code) return code
  return error instanceof Error ? error.name : 'network error'
}

// The injected sleep cannot be interrupted, and a caller that gave up must not wait out a long Retry-After.
async function pause(sleep: (ms: number) => Promise<void>, ms: number, signal: AbortSignal | null | undefined): Promise<void> {
  if (!signal) return sleep(ms)
  signal.throwIfAborted()
  const { promise: aborted, reject } = Promise.withResolvers<never>()
  const onAbort = () => reject(signal.reason)
  signal.addEventListener('abort', onAbort, { once: true })
  try {
    await Promise.race([sleep(ms), aborted])
  } finally {
    signal.removeEventListener('abort', onAbort)
  }
}

export function createHttpClient(options: HttpClientOptions = {}): HttpClient {
  const doFetch = options.fetch ?? fetch
  const sleep = options.sleep ?? ((ms: number) => Bun.sleep(ms))
  const maxRetryAfterMs = (options.maxRetryAfterSeconds ?? 30) * 1000

  return {
    async request(url, init = {}) {
      const { timeoutMs = options.timeoutMs ?? 15_000, retries, idempotent, upstream, signal: callerSignal, ...fetchInit } = init
      const target = new URL(url)
      const method = (fetchInit.method ?? 'GET').toUpperCase()
      // A stream body is consumed by the first attempt and cannot be sent again.
      const replayable = !(fetchInit.body instanceof ReadableStream)
      const maxRetries = (idempotent ?? IDEMPOTENT_METHODS.has(method)) && replayable ? (retries ?? options.retries ?? 2) : 0
      const name = upstream ?? target.host
      // Origin and path only: the query string and headers may hold keys and tokens.
      const where = `${method} ${target.origin}${target.pathname}`

      for (let attempt = 0; ; attempt++) {
        // The deadline covers the wait for headers, not the body: a streamed completion legitimately
        // outlasts it (an AbortSignal.timeout would cut the body too). The caller's signal covers both.
        const deadline = new AbortController()
        const timer = setTimeout(() => deadline.abort(), timeoutMs)
        let response: Response
        try {
          const signal = callerSignal ? AbortSignal.any([callerSignal, deadline.signal]) : deadline.signal
          response = await doFetch(target, { ...fetchInit, signal })
        } catch (error) {
          if (callerSignal?.aborted) throw callerSignal.reason
          // Not retried: an upstream that did not answer in time is unlikely to in the next attempt,
          // and the caller's wait would multiply.
          if (deadline.signal.aborted) throw new AppError('upstream_timeout', `${name} did not answer within ${timeoutMs} ms (${where})`)
          if (attempt >= maxRetries) throw new AppError('upstream_error', `${name} is unreachable: ${describeFailure(error)} (${where})`)
          await pause(sleep, backoffMs(attempt), callerSignal)
          continue
        } finally {
          clearTimeout(timer)
        }

        if (!RETRYABLE_STATUS.has(response.status) || attempt >= maxRetries) return response
        const asked = retryAfterMs(response.headers.get('retry-after'))
        if (asked !== undefined && asked > maxRetryAfterMs) return response
        // Released so the connection can go back to the keep-alive pool.
        await response.body?.cancel()
        await pause(sleep, asked ?? backoffMs(attempt), callerSignal)
      }
    },
  }
}

// ---------------------------------------------------------------------------------------------
// Address guard

export type AddressKind = 'public' | 'loopback' | 'private' | 'link-local' | 'unspecified' | 'metadata' | 'reserved'

const IPV4 = /^\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}$/
// Characters that would make the URL parser read `host` as something else (userinfo, path...).
const NOT_A_HOST = /[\s/\\?#@]/

/**
 * The canonical form of an IP literal (`127.0.0.1`, `::ffff:7f00:1`), or undefined for a name.
 * Every spelling the WHATWG URL parser accepts is understood (hex, octal, shortened and whole-number
 * IPv4, bracketed or embedded-IPv4 IPv6); these are also the spellings inet_aton accepts.
 */
export function parseHostAddress(host: string): string | undefined {
  let bare = host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host
  // A zone (`fe80::1%eth0`, as resolvers may answer) only picks an interface; the address is what counts.
  if (bare.includes(':')) bare = bare.replace(/%.*$/, '')
  if (bare === '' || NOT_A_HOST.test(bare)) return undefined
  let hostname: string
  try {
    hostname = new URL(`http://${bare.includes(':') ? `[${bare}]` : bare}/`).hostname
  } catch {
    return undefined
  }
  if (hostname.startsWith('[')) return hostname.slice(1, -1)
  return IPV4.test(hostname) ? hostname : undefined
}

function ipv4ToBigInt(address: string): bigint {
  return address.split('.').reduce((n, octet) => (n << 8n) | BigInt(octet), 0n)
}

// The URL parser's IPv6 serialisation is hex groups with at most one `::`.
function ipv6ToBigInt(address: string): bigint {
  const [head = '', tail] = address.split('::')
  const left = head ? head.split(':') : []
  const right = tail ? tail.split(':') : []
  const groups = [...left, ...Array<string>(8 - left.length - right.length).fill('0'), ...right]
  return groups.reduce((n, group) => (n << 16n) | BigInt(parseInt(group, 16)), 0n)
}

type RangeKind = AddressKind | 'embedded-ipv4' | 'six-to-four'
type Range = { base: bigint; shift: bigint; kind: RangeKind }

function ranges(width: 32 | 128, table: [string, RangeKind][]): Range[] {
  const parse = width === 32 ? ipv4ToBigInt : ipv6ToBigInt
  return table.map(([cidr, kind]) => {
    const [address = '', bits = String(width)] = cidr.split('/')
    const shift = BigInt(width - Number(bits))
    return { base: parse(address) >> shift, shift, kind }
  })
}

function matchRange(value: bigint, table: Range[]): RangeKind | undefined {
  return table.find((range) => value >> range.shift === range.base)?.kind
}

// First match wins, so single addresses come before the blocks that contain them.
const IPV4_RANGES = ranges(32, [
  ['169.254.169.254/32', 'metadata'],
  ['169.254.170.2/32', 'metadata'], // container task metadata
  ['0.0.0.0/32', 'unspecified'],
  ['0.0.0.0/8', 'reserved'],
  ['10.0.0.0/8', 'private'],
  ['100.64.0.0/10', 'private'], // carrier-grade NAT
  ['127.0.0.0/8', 'loopback'],
  ['169.254.0.0/16', 'link-local'],
  ['172.16.0.0/12', 'private'],
  ['192.0.0.0/24', 'reserved'],
  ['192.0.2.0/24', 'reserved'], // documentation
  ['192.168.0.0/16', 'private'],
  ['198.18.0.0/15', 'reserved'], // benchmarking
  ['198.51.100.0/24', 'reserved'],
  ['203.0.113.0/24', 'reserved'],
  ['224.0.0.0/4', 'reserved'], // multicast
  ['240.0.0.0/4', 'reserved'], // includes broadcast
])

const IPV6_RANGES = ranges(128, [
  ['::/128', 'unspecified'],
  ['::1/128', 'loopback'],
  ['fd00:ec2::254/128', 'metadata'],
  ['::ffff:0:0/96', 'embedded-ipv4'], // IPv4-mapped
  ['64:ff9b::/96', 'embedded-ipv4'], // NAT64 reaches the embedded IPv4 address
  ['64:ff9b:1::/48', 'private'], // local-use NAT64
  ['2002::/16', 'six-to-four'],
  ['::/96', 'reserved'], // deprecated IPv4-compatible
  ['100::/64', 'reserved'], // discard
  ['2001:db8::/32', 'reserved'], // documentation
  ['fc00::/7', 'private'], // unique local
  ['fe80::/10', 'link-local'],
  ['fec0::/10', 'private'], // deprecated site-local
  ['ff00::/8', 'reserved'], // multicast
  ['2000::/3', 'public'], // global unicast; everything else is unassigned
])

function classifyIpv4(value: bigint): AddressKind {
  // The IPv4 table has no embedded kinds.
  return (matchRange(value, IPV4_RANGES) as AddressKind | undefined) ?? 'public'
}

/** What kind of network an IP address (any spelling parseHostAddress accepts) belongs to. */
export function classifyAddress(ip: string): AddressKind {
  const canonical = parseHostAddress(ip)
  if (canonical === undefined) throw new TypeError(`not an IP address: ${ip}`)
  if (!canonical.includes(':')) return classifyIpv4(ipv4ToBigInt(canonical))
  const value = ipv6ToBigInt(canonical)
  const kind = matchRange(value, IPV6_RANGES) ?? 'reserved'
  if (kind === 'embedded-ipv4') return classifyIpv4(value & 0xffffffffn)
  // 6to4 relays deliver to the IPv4 address in bits 16-47; a public one is an ordinary 6to4 site.
  if (kind === 'six-to-four') return classifyIpv4((value >> 80n) & 0xffffffffn)
  return kind
}

export interface GuardOptions {
  /** Exact `host` or `host:port` entries let through unchecked, e.g. a local test server. */
  allowHosts?: string[]
  /** Lets private networks through (a self-hosted Git server); loopback, link-local and metadata never. */
  allowPrivate?: boolean
  /** Resolves a name to its addresses. Default: the system resolver, every address. */
  lookup?: (host: string) => Promise<string[]>
  /** What the URL is, in error messages. Default "URL". */
  label?: string
}

const describeKind: Record<Exclude<AddressKind, 'public'>, string> = {
  loopback: 'a loopback address',
  private: 'a private network address',
  'link-local': 'a link-local address',
  unspecified: 'an unspecified address',
  metadata: 'a cloud metadata address',
  reserved: 'a reserved address',
}

// Imported at the first outbound request: start-up need not load node:dns.
async function systemLookup(host: string): Promise<string[]> {
  const { lookup } = await import('node:dns/promises')
  return (await lookup(host, { all: true })).map((entry) => entry.address)
}

/**
 * Checks a user-supplied URL before the service connects to it and returns the address to connect to.
 * The name is resolved once: callers pin that address (so a second resolution cannot answer
 * differently) and guard each redirect hop again.
 */
export async function guardUrl(url: string | URL, options: GuardOptions = {}): Promise<{ url: URL; address: string }> {
  const label = options.label ?? 'URL'
  const refuse = (reason: string) => new AppError('bad_request', `${label} ${reason}`)
  let target: URL
  try {
    target = new URL(url)
  } catch {
    throw refuse('is not a valid URL')
  }
  if (target.protocol !== 'http:' && target.protocol !== 'https:') throw refuse('must use http or https')
  if (target.username || target.password) throw refuse('must not contain a username or password')

  const literal = parseHostAddress(target.hostname)
  let addresses: string[]
  if (literal) addresses = [literal]
  else {
    try {
      addresses = await (options.lookup ?? systemLookup)(target.hostname)
    } catch (error) {
      const code = (error as { code?: unknown })?.code
      if (code === 'ENOTFOUND' || code === 'ENODATA') throw refuse(`host ${target.hostname} does not resolve`)
      throw new AppError('upstream_error', `could not resolve ${target.hostname}: ${describeFailure(error)}`)
    }
  }
  const first = addresses[0]
  if (first === undefined) throw refuse(`host ${target.hostname} does not resolve`)
  const address = parseHostAddress(first) ?? first

  const allowed = options.allowHosts?.map((entry) => entry.toLowerCase()) ?? []
  if (allowed.includes(target.host) || allowed.includes(target.hostname)) return { url: target, address }

  // Every address is checked: a name with one public and one internal address would otherwise
  // reach the internal one whenever the client picks it.
  for (const address of addresses) {
    const kind = classifyAddress(address)
    if (kind === 'public' || (kind === 'private' && options.allowPrivate)) continue
    throw refuse(`resolves to ${describeKind[kind]} (${address})`)
  }
  return { url: target, address }
}
