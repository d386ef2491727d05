/** What every search engine adapter offers, and the handling of upstream answers they share. */
import type { WebSearchProviderName } from '../settings.ts'
import { AppError } from '../../../src/errors.ts'
import type { SafeSearch, WebResult } from '../schemas.ts'

export interface ProviderQuery {
  query: string
  count: number
  safeSearch: SafeSearch
  /** Longest wait for the provider's response headers. */
  timeoutMs: number
}

export interface SearchProvider {
  readonly name: WebSearchProviderName
  search(query: ProviderQuery): Promise<WebResult[]>
}

export interface Upstream {
  name: WebSearchProviderName
  /** How errors name the provider ("Brave Search"). */
  label: string
  /** Extra explanation for statuses that mean misconfiguration (401: "check BRAVE_API_KEY"). */
  hints?: Record<number, string>
}

// The client's own errors (timeout, unreachable) name the upstream; the provider id is added so
// clients can tell engines apart without parsing the detail.
function tagged(error: AppError, upstream: Upstream): AppError {
  return new AppError(error.code, error.message, { ...error.options, extensions: { ...error.options.extensions, provider: upstream.name } })
}

/**
 * Sends the request and answers the provider's JSON body. A 429 that outlasted the client's retries
 * is 503 unavailable (passing Retry-After on), any other failure status or unreadable JSON is
 * 502 upstream_error, and the client's timeout stays 504 upstream_timeout.
 */
export async function providerJson(upstream: Upstream, send: () => Promise<Response>): Promise<unknown> {
  let response: Response
  try {
    response = await send()
  } catch (error) {
    throw error instanceof AppError ? tagged(error, upstream) : error
  }
  const extensions = { provider: upstream.name }
  if (response.status === 429) {
    await response.body?.cancel()
    const retryAfter = response.headers.get('retry-after')
    throw new AppError('unavailable', `${upstream.label} is limiting this service's requests (429); try again later`, {
      extensions,
      headers: retryAfter ? { 'retry-after': retryAfter } : undefined,
    })
  }
  if (!response.ok) {
    await response.body?.cancel()
    const hint = upstream.hints?.[response.status]
    throw new AppError('upstream_error', `${upstream.label} answered ${response.status}${hint ? `: ${hint}` : ''}`, { extensions })
  }
  const text = await response.text()
  try {
    return JSON.parse(text)
  } catch {
    throw new AppError('upstream_error', `${upstream.label} answered with malformed JSON`, { extensions })
  }
}

/** The `results` array of a provider's body; a body of another shape is the provider's failure. */
// biome-ignore lint/suspicious/noExplicitAny: each provider picks its list out of its own JSON answer
export function resultList(body: unknown, pick: (body: Record<string, any>) => unknown, upstream: Upstream): Record<string, unknown>[] {
  const list = typeof body === 'object' && body !== null && !Array.isArray(body) ? pick(body) : undefined
  if (!Array.isArray(list))
    throw new AppError('upstream_error', `${upstream.label} answered JSON without a result list`, { extensions: { provider: upstream.name } })
  // Entries without a URL cannot be cited or opened, so they are dropped rather than passed on half-empty.
  return list.filter((item): item is Record<string, unknown> => typeof item === 'object' && item !== null && typeof item.url === 'string' && item.url !== '')
}

export const textOf = (value: unknown): string => (typeof value === 'string' ? value : '')

const LOCAL_DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?$/

/**
 * An ISO 8601 instant from a provider's date, or undefined when there is none or it cannot be read
 * ("2 days ago"). Date-times without a zone (SearXNG, Brave's page_age) are taken as UTC rather
 * than as this server's local time.
 */
export function isoDate(value: unknown): string | undefined {
  if (typeof value !== 'string' || value.trim() === '') return undefined
  const raw = value.trim()
  const at = Date.parse(LOCAL_DATE_TIME.test(raw) ? `${raw}Z` : raw)
  return Number.isNaN(at) ? undefined : new Date(at).toISOString()
}

/** An optional `publishedAt` member, absent rather than undefined so answers serialise cleanly. */
export const publishedAt = (value: unknown): { publishedAt?: string } => {
  const iso = isoDate(value)
  return iso ? { publishedAt: iso } : {}
}
