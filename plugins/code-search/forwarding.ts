/**
 * Searches sent to the process that owns the organisation's index (ownership.ts), so one process keeps it.
 *
 * POST /api/search is forwarded with the caller's own Authorization header: the owner authenticates and authorises
 * it again, and takes the organisation from that token, never from anything the forwarding process adds. It goes to
 * the owner's internal search route, which never forwards (no loops) and spends no rate limit (the receiving
 * process spent it); that route answers only requests signed with the secret every process shares, so a caller
 * cannot use it to skip its rate limit.
 *
 * Every other search (chat's code_search tool, the agents, the MCP server) calls CodeIndex.search, often with no
 * caller token at hand (an agent runs long after its request): it goes to the owner's scoped route with the scope
 * and query in the body, signed over a timestamp and that exact body. The scope is trusted once the signature
 * holds: the secret signing it is JWT_SECRET, with which any process of the deployment could mint the caller's
 * token anyway, so the signature proves no less than a token would. Signed over the body, a captured signature
 * names one organisation and query for one minute, never another's.
 *
 * An owner that does not answer either is taken over and the search served here.
 */
import { networkInterfaces } from 'node:os'
import { AppError, errorCodes, type ErrorCode, type FieldProblem } from '../../src/errors.ts'
import type { Logger } from '../../src/log.ts'
import type { IndexOwnership } from './ownership.ts'
import type { CodeSearchQuery, CodeSearchResult } from './types.ts'

/** The owner's route for POST /api/search forwarded to it, with the caller's token. */
export const FORWARDED_SEARCH_PATH = '/internal/code-search/search'
/** The owner's route for any other search forwarded to it, with its scope signed. */
export const SCOPED_SEARCH_PATH = '/internal/code-search/scoped-search'
const SIGNATURE_HEADER = 'x-code-search-forwarded'
/** How long a signature stays good: clocks of one deployment agree far better than this. */
const SIGNATURE_MAX_AGE_MS = 60_000
// Headers of the owner's answer that mean something to the caller.
const ANSWER_HEADERS = ['content-type', 'cache-control', 'retry-after', 'www-authenticate', 'x-code-search-partial']
// Marks what a scoped search's signature covers, so no signature made for the other route (a timestamp first) matches.
const SCOPED = 'scoped-search'

/** A search's organisation, and the user a model's tokens spent on it are metered to. */
export interface SearchScope {
  orgId: string
  userId?: string
}

/** The body of a scoped search, as signed and sent. */
export interface ScopedSearchBody {
  scope: SearchScope
  query: CodeSearchQuery
}

export interface SearchForwardingOptions {
  ownership: IndexOwnership
  /** Shared by every process of the deployment (JWT_SECRET); signs forwarded requests. */
  secret: string
  logger: Logger
  /** How long a forwarded search may take before the owner is taken for dead. Default 15 000 ms. */
  timeoutMs?: number
  /** The base URL other processes reach this one at (CODE_SEARCH_ADVERTISE_URL); default where it listens. */
  advertiseUrl?: string
}

export interface SearchForwarding {
  /** This process listens now: others may send it searches, at CODE_SEARCH_ADVERTISE_URL or where it listens. */
  listening(hostname: string, port: number): void
  /**
   * The owner's answer to the search, or undefined when it is to be served here: this process owns the index,
   * Redis cannot say who does, or the owner did not answer and this process took over.
   */
  forward(orgId: string, authorization: string | null, body: unknown): Promise<Response | undefined>
  /** Whether a request to the forwarded-search route was signed by a process of this deployment. */
  signedByPeer(headers: Headers): boolean
  /**
   * The owner's results for a search made in this process without a caller token (chat, agents, MCP), or undefined
   * when it is to be served here, as for `forward`. What the owner's search throws is thrown here as the same AppError.
   */
  search(scope: SearchScope, query: CodeSearchQuery): Promise<CodeSearchResult[] | undefined>
  /** Whether a scoped search carries a signature within its minute; checked before its body is read. */
  freshlySigned(headers: Headers): boolean
  /** Whether a scoped search was signed by a process of this deployment over exactly `rawBody`. */
  signedOver(headers: Headers, rawBody: string): boolean
}

/**
 * Listening on every interface: the machine's first external IPv4 address, which other containers of a network
 * and this host itself reach; the loopback one when there is none.
 */
function machineAddress(): string {
  for (const addresses of Object.values(networkInterfaces()))
    for (const address of addresses ?? []) if (address.family === 'IPv4' && !address.internal) return address.address
  return '127.0.0.1'
}

/** The owner's answer read whole: status, the headers that matter and the body. */
interface OwnerAnswer {
  status: number
  headers: Headers
  body: ArrayBuffer
}

const hmac = (secret: string, parts: string[]) => new Bun.CryptoHasher('sha256', secret).update(parts.join('\n')).digest('base64url')

/** The header signing a scoped search's exact `body` at `at` (ms since the epoch) with the deployment's secret. */
export function scopedSearchSignature(secret: string, body: string, at = Date.now()): Record<string, string> {
  return { [SIGNATURE_HEADER]: `${at}.${hmac(secret, [SCOPED, String(at), body])}` }
}

/** A problem the owner answered, as the AppError it was there; one it cannot have meant is an upstream error. */
function problemFrom(answer: OwnerAnswer): AppError {
  let problem: { code?: unknown; detail?: unknown; errors?: unknown } = {}
  try {
    problem = JSON.parse(new TextDecoder().decode(answer.body))
  } catch {}
  const code = typeof problem.code === 'string' && Object.hasOwn(errorCodes, problem.code) ? (problem.code as ErrorCode) : undefined
  if (!code || errorCodes[code].status !== answer.status) return new AppError('upstream_error', `The process owning the code index answered ${answer.status}`)
  const retryAfter = answer.headers.get('retry-after')
  return new AppError(code, typeof problem.detail === 'string' ? problem.detail : errorCodes[code].title, {
    errors: Array.isArray(problem.errors) ? (problem.errors as FieldProblem[]) : undefined,
    headers: retryAfter ? { 'retry-after': retryAfter } : undefined,
  })
}

export function createSearchForwarding(options: SearchForwardingOptions): SearchForwarding {
  const { ownership, secret, logger } = options
  const timeoutMs = options.timeoutMs ?? 15_000
  const signature = (...parts: string[]) => hmac(secret, parts)
  /** Whether the header holds a signature of this minute over what `covered` lists for its timestamp; of this minute alone without. */
  const signed = (headers: Headers, covered?: (at: string) => string[]) => {
    const value = headers.get(SIGNATURE_HEADER)
    const dot = value?.indexOf('.') ?? -1
    if (!value || dot < 0) return false
    const at = value.slice(0, dot)
    if (!(Math.abs(Date.now() - Number(at)) <= SIGNATURE_MAX_AGE_MS)) return false
    if (!covered) return true
    const expected = Buffer.from(signature(...covered(at)))
    const given = Buffer.from(value.slice(dot + 1))
    return given.length === expected.length && crypto.timingSafeEqual(expected, given)
  }

  /**
   * Sends a search to the organisation's owner and reads its answer whole; undefined when it is to be served here.
   * An owner that cannot be reached, or does not answer in time, is taken over.
   */
  async function toOwner(orgId: string, path: string, headers: Record<string, string>, body: string): Promise<OwnerAnswer | undefined> {
    const place = await ownership.locate(orgId).catch((error) => {
      logger.warn('code index owner unknown (Redis unreachable); searching here', { orgId, err: error })
      return { here: true } as const
    })
    if (place.here) return undefined
    try {
      const answer = await fetch(new URL(path, place.url), {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
        body,
        signal: AbortSignal.timeout(timeoutMs),
      })
      return { status: answer.status, headers: answer.headers, body: await answer.arrayBuffer() }
    } catch (error) {
      await ownership.takeOver(orgId, place.holder).catch(() => false)
      logger.warn('code index owner did not answer a forwarded search; searching here', { orgId, owner: place.url, err: error })
      return undefined
    }
  }

  return {
    listening(hostname, port) {
      const everywhere = hostname === '0.0.0.0' || hostname === '::' || hostname === ''
      const host = everywhere ? machineAddress() : hostname.includes(':') ? `[${hostname}]` : hostname
      ownership.advertise(options.advertiseUrl ?? `http://${host}:${port}`)
    },
    async forward(orgId, authorization, body) {
      const at = String(Date.now())
      const answer = await toOwner(
        orgId,
        FORWARDED_SEARCH_PATH,
        { ...(authorization ? { authorization } : {}), [SIGNATURE_HEADER]: `${at}.${signature(at, authorization ?? '')}` },
        JSON.stringify(body),
      )
      if (!answer) return undefined
      const headers = new Headers()
      for (const name of ANSWER_HEADERS) {
        const value = answer.headers.get(name)
        if (value !== null) headers.set(name, value)
      }
      return new Response(answer.body, { status: answer.status, headers })
    },
    signedByPeer: (headers) => signed(headers, (at) => [at, headers.get('authorization') ?? '']),
    async search(scope, query) {
      const body = JSON.stringify({ scope, query } satisfies ScopedSearchBody)
      const answer = await toOwner(scope.orgId, SCOPED_SEARCH_PATH, scopedSearchSignature(secret, body), body)
      if (!answer) return undefined
      if (answer.status === 404) {
        // An owner without the route (an older version, during a rolling upgrade) or refusing the signature
        // (another JWT_SECRET): the search is still answered, from a copy here.
        logger.warn('code index owner refused a scoped search; searching here', { orgId: scope.orgId })
        return undefined
      }
      if (answer.status !== 200) throw problemFrom(answer)
      return (JSON.parse(new TextDecoder().decode(answer.body)) as { results: CodeSearchResult[] }).results
    },
    freshlySigned: (headers) => signed(headers),
    signedOver: (headers, rawBody) => signed(headers, (at) => [SCOPED, at, rawBody]),
  }
}
