/**
 * Searches sent to the process that owns the organisation's index (ownership.ts), so one process keeps it.
 *
 * The forwarded request carries the caller's own Authorization header: the owner authenticates and authorises it
 * again, and takes the organisation from that token, never from anything the forwarding process adds. It goes to
 * the owner's internal search route, which never forwards (no loops) and spends no rate limit (the receiving
 * process spent it); that route answers only requests signed with the secret every process shares, so a caller
 * cannot use it to skip its rate limit. An owner that does not answer is taken over and the search served here.
 */
import { timingSafeEqual } from 'node:crypto'
import { networkInterfaces } from 'node:os'
import type { Logger } from '../../src/log.ts'
import type { IndexOwnership } from './ownership.ts'

/** The owner's route for searches forwarded to it. */
export const FORWARDED_SEARCH_PATH = '/internal/code-search/search'
const SIGNATURE_HEADER = 'x-code-search-forwarded'
/** How long a signature stays good: clocks of one deployment agree far better than this. */
const SIGNATURE_MAX_AGE_MS = 60_000
// Headers of the owner's answer that mean something to the caller.
const ANSWER_HEADERS = ['content-type', 'cache-control', 'retry-after', 'www-authenticate', 'x-code-search-partial']

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

export function createSearchForwarding(options: SearchForwardingOptions): SearchForwarding {
  const { ownership, secret, logger } = options
  const timeoutMs = options.timeoutMs ?? 15_000
  const signature = (at: string, authorization: string) => new Bun.CryptoHasher('sha256', secret).update(`${at}\n${authorization}`).digest('base64url')

  return {
    listening(hostname, port) {
      const everywhere = hostname === '0.0.0.0' || hostname === '::' || hostname === ''
      const host = everywhere ? machineAddress() : hostname.includes(':') ? `[${hostname}]` : hostname
      ownership.advertise(options.advertiseUrl ?? `http://${host}:${port}`)
    },
    async forward(orgId, authorization, body) {
      const place = await ownership.locate(orgId).catch((error) => {
        logger.warn('code index owner unknown (Redis unreachable); searching here', { orgId, err: error })
        return { here: true } as const
      })
      if (place.here) return undefined
      const at = String(Date.now())
      try {
        const answer = await fetch(new URL(FORWARDED_SEARCH_PATH, place.url), {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            ...(authorization ? { authorization } : {}),
            [SIGNATURE_HEADER]: `${at}.${signature(at, authorization ?? '')}`,
          },
          body: JSON.stringify(body),
          signal: AbortSignal.timeout(timeoutMs),
        })
        const headers = new Headers()
        for (const name of ANSWER_HEADERS) {
          const value = answer.headers.get(name)
          if (value !== null) headers.set(name, value)
        }
        return new Response(await answer.arrayBuffer(), { status: answer.status, headers })
      } catch (error) {
        await ownership.takeOver(orgId, place.holder).catch(() => false)
        logger.warn('code index owner did not answer a forwarded search; searching here', { orgId, owner: place.url, err: error })
        return undefined
      }
    },
    signedByPeer(headers) {
      const value = headers.get(SIGNATURE_HEADER)
      const dot = value?.indexOf('.') ?? -1
      if (!value || dot < 0) return false
      const at = value.slice(0, dot)
      if (!(Math.abs(Date.now() - Number(at)) <= SIGNATURE_MAX_AGE_MS)) return false
      const expected = Buffer.from(signature(at, headers.get('authorization') ?? ''))
      const given = Buffer.from(value.slice(dot + 1))
      return given.length === expected.length && timingSafeEqual(expected, given)
    },
  }
}
