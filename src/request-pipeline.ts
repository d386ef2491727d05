import { Elysia, ValidationError } from 'elysia'
import { isFormContentType, isJsonContentType, isMultipartContentType, parseFormBody, parseJsonBody, readBodyText, TAKES_MULTIPART } from './body.ts'
import { AppError, problemResponse } from './errors.ts'
import { holdUntilGuarded, routePattern, type GuardContext, type RouteGuards } from './guards.ts'
import type { Lifecycle } from './lifecycle.ts'
import type { Logger } from './log.ts'
import { DATABASE_RETRY_AFTER_SECONDS, isDatabaseUnavailable } from './storage/outage.ts'
import type { Caller } from './auth/caller.ts'
import { summarise, validationProblems } from './validation.ts'

/** What the pipeline knows about a request, kept beside it rather than on the context. */
export interface RequestMeta {
  readonly id: string
  readonly startedAt: number
  /**
   * Client address after applying the trusted-proxy rule, looked up on first read: the socket peer costs a
   * system call, which most authenticated requests never need. Read it while the request is open.
   */
  readonly clientIp: string
  /** The address if something read it, for the access log; undefined otherwise. */
  readonly knownClientIp: string | undefined
  /** The body exactly as received, for routes that verify signatures over it. */
  rawBody?: string
  /** Status of an error response, for the access log. */
  errorStatus?: number
  /** Set by a WebSocket route once Bun switched the connection: logged as 101. */
  switchedProtocols?: boolean
  /** Who made the request, once authenticated; filled by the access layer. */
  principal?: Caller
}

// Kept on the request itself: a symbol-keyed property is cheaper than a WeakMap on the hot path.
const META = Symbol('requestMeta')
type WithMeta = Request & { [META]?: RequestMeta }

export function requestMeta(request: Request): RequestMeta {
  return ((request as WithMeta)[META] ??= new Meta(crypto.randomUUID(), performance.now(), request, undefined))
}

/** How a request's client address is learnt; one per pipeline, shared by every request. */
interface AddressLookup {
  peerAddress?: (request: Request) => string | undefined
  trustedProxies: readonly string[]
}

class Meta implements RequestMeta {
  rawBody?: string
  errorStatus?: number
  switchedProtocols?: boolean
  principal?: Caller
  #clientIp: string | undefined
  // Dropped once the address is known, so a long-lived request (a WebSocket's upgrade) holds nothing more.
  #request: Request | undefined
  #lookup: AddressLookup | undefined
  constructor(
    readonly id: string,
    readonly startedAt: number,
    request: Request,
    lookup: AddressLookup | undefined,
  ) {
    this.#request = request
    this.#lookup = lookup
  }
  get clientIp(): string {
    if (this.#clientIp === undefined) {
      const request = this.#request!
      const lookup = this.#lookup
      this.#clientIp = lookup ? clientAddress(peerOf(lookup, request), request.headers.get('x-forwarded-for'), lookup.trustedProxies) : 'unknown'
      this.#request = this.#lookup = undefined
    }
    return this.#clientIp
  }
  get knownClientIp(): string | undefined {
    return this.#clientIp
  }
}

// A request the server no longer knows (its connection gone) has no peer to name, never an error.
function peerOf(lookup: AddressLookup, request: Request): string | undefined {
  try {
    return lookup.peerAddress?.(request)
  } catch {
    return undefined
  }
}

const CLIENT_REQUEST_ID = /^[A-Za-z0-9._:-]{1,64}$/

/**
 * The client address: the socket peer, unless the peer is a trusted proxy, in which case
 * the right-most X-Forwarded-For entry that is not itself a trusted proxy.
 */
export function clientAddress(peer: string | undefined, forwardedFor: string | null, trustedProxies: readonly string[]): string {
  const direct = peer ?? 'unknown'
  if (!forwardedFor || !trustedProxies.includes(direct)) return direct
  const hops = forwardedFor
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
  for (let i = hops.length - 1; i >= 0; i--) if (!trustedProxies.includes(hops[i]!)) return hops[i]!
  return direct
}

/** Lists the methods registered for a path, for 405 answers, and the routes that take HTML forms. */
export class RouteIndex {
  private patterns: { regex: RegExp; methods: Set<string> }[] = []
  private formRoutes = new Set<string>()
  private multipartRoutes = new Set<string>()

  load(routes: readonly { method: string; path: string; hooks?: { parse?: unknown } }[]): void {
    // A route takes application/x-www-form-urlencoded only when it says so: `parse: ['json', 'urlencoded']`.
    this.formRoutes = new Set(routes.filter((r) => declaresParser(r.hooks?.parse, 'urlencoded')).map((r) => `${r.method} ${r.path}`))
    // A route takes multipart/form-data only when its parser is `multipartBody(limit)`, which reads it with its own cap.
    this.multipartRoutes = new Set(routes.filter((r) => declaresMultipart(r.hooks?.parse)).map((r) => `${r.method} ${r.path}`))
    const byPath = new Map<string, Set<string>>()
    // OPTIONS routes are the CORS preflight's catch-all (`/*`), answered before routing: they say nothing of a path.
    for (const r of routes.filter((route) => route.method !== 'OPTIONS')) {
      if (!byPath.has(r.path)) byPath.set(r.path, new Set())
      byPath.get(r.path)!.add(r.method)
    }
    this.patterns = [...byPath].map(([path, methods]) => ({
      regex: routePattern(path),
      methods,
    }))
  }

  takesForm(method: string, route: string): boolean {
    return this.formRoutes.has(`${method} ${route}`)
  }

  takesMultipart(method: string, route: string): boolean {
    return this.multipartRoutes.has(`${method} ${route}`)
  }

  allowed(pathname: string): string[] {
    const methods = new Set<string>()
    for (const p of this.patterns) if (p.regex.test(pathname)) for (const m of p.methods) methods.add(m)
    if (methods.has('GET')) methods.add('HEAD')
    return [...methods].filter((m) => m !== 'WS' && m !== 'ALL').sort()
  }
}

function declaresMultipart(parse: unknown): boolean {
  const listed = Array.isArray(parse) ? parse : parse ? [parse] : []
  return listed.some((p) => {
    const fn = (p as { fn?: unknown })?.fn ?? p
    return typeof fn === 'function' && TAKES_MULTIPART in fn
  })
}

function declaresParser(parse: unknown, name: string): boolean {
  const listed = Array.isArray(parse) ? parse : parse ? [parse] : []
  return listed.some((p) => p === name || (p as { fn?: unknown })?.fn === name)
}

export interface RequestPipelineOptions {
  logger: Logger
  /** Largest JSON body accepted, in bytes. */
  bodyLimitBytes: number
  /** Proxies whose X-Forwarded-For is believed. Default none. */
  trustedProxies?: readonly string[]
  /** Filled by createApp once every route is registered. */
  routeIndex: RouteIndex
  /** The routes' guard hooks, run before the body is read; filled by createApp once every route is registered. */
  routeGuards?: RouteGuards
  /** Told of every request (metrics, tracing); unset, nothing is called. */
  observer?: RequestObserver
  /**
   * While it drains, every response carries `Connection: close`, so a proxy pools no connection the shutdown would
   * close under it. Every request is counted: shutdown closes the listener once a poll of the sockets brings none.
   */
  lifecycle?: Pick<Lifecycle, 'draining' | 'requestsArrived'>
  /**
   * The socket peer's address: `(request) => app.server?.requestIP(request)?.address`. Unset (in-process
   * tests), every peer is `unknown`. Not read from the hook's context: a hook that names `server` makes Elysia
   * define a getter on every request's context, which cost more than the lookup.
   */
  peerAddress?: (request: Request) => string | undefined
  /**
   * `always`: every request's address is looked up and logged. `when-used` (default): the access log names it when
   * the request read it (sign-in, anonymous rate limits, payments) and for every refused or failed request.
   */
  logClientAddress?: 'always' | 'when-used'
}

/** Hears of each request as it arrives and once its response is handed to the server. */
export interface RequestObserver {
  /** Before any route code runs: tracing opens the request's span here. */
  started?(request: Request): void
  /** `route` is the matched pattern (`/api/chat/:id`), empty when none matched. */
  finished(request: Request, route: string, status: number, durationMs: number): void
}

/** Longest request target (path and query) served; longer ones answer 414. */
export const MAX_URL_BYTES = 8 * 1024
/** Largest request head (target plus headers) served; larger ones answer 431. */
export const MAX_HEADER_BYTES = 16 * 1024

// A guard's failure inside the parse stage reaches onError wrapped in Elysia's ParseError; this marks it as
// the guard's, so it is answered as itself (401, 403, 429, or internal_error) and never as a parse error.
class GuardFailure extends Error {}

function headerBytes(request: Request, url: string): number {
  let total = url.length
  request.headers.forEach((value, name) => {
    total += name.length + value.length + 4
  })
  return total
}

/** A request head over the limits, as the 414 or 431 it is answered with. */
function headProblem(request: Request): AppError | undefined {
  const url = request.url
  const target = url.length - url.indexOf('/', url.indexOf('//') + 2)
  if (target > MAX_URL_BYTES)
    return new AppError('uri_too_long', `The request target is ${target} bytes; the limit is ${MAX_URL_BYTES}`, { extensions: { limitBytes: MAX_URL_BYTES } })
  const head = headerBytes(request, url)
  if (head > MAX_HEADER_BYTES)
    return new AppError('headers_too_large', `The request line and headers are ${head} bytes; the limit is ${MAX_HEADER_BYTES}`, {
      extensions: { limitBytes: MAX_HEADER_BYTES },
    })
}

/**
 * A browser's CORS preflight reaches routing only when CORS_ORIGINS is empty (the CORS plugin answers them
 * otherwise): the refusal then says which setting lets the page's origin in.
 */
function preflightHint(request: Request): string {
  const origin = request.headers.get('origin')
  if (request.method !== 'OPTIONS' || origin === null || !request.headers.has('access-control-request-method')) return ''
  return `. This is a browser's CORS preflight from ${origin.slice(0, 200)}: list that origin in CORS_ORIGINS to let its pages call the API`
}

function toAppError(code: string | number, error: unknown, request: Request, routeIndex: RouteIndex): AppError | undefined {
  if (code === 'PARSE' && (error as Error)?.cause instanceof GuardFailure)
    return toAppError('UNKNOWN', ((error as Error).cause as Error).cause, request, routeIndex)
  if (error instanceof AppError) return error
  if ((code === 'PARSE' || code === 'UNKNOWN') && (error as Error)?.cause instanceof AppError) return (error as Error).cause as AppError
  if (error instanceof ValidationError) {
    const errors = validationProblems(error)
    return new AppError('validation_failed', summarise(errors), { errors })
  }
  if (code === 'PARSE') return new AppError('invalid_json', 'Request body could not be parsed', { errors: [{ field: 'body', message: 'unparseable' }] })
  if (code === 'NOT_FOUND') {
    const path = new URL(request.url).pathname
    const allowed = routeIndex.allowed(path)
    if (allowed.length > 0 && !allowed.includes(request.method))
      return new AppError('method_not_allowed', `${request.method} is not allowed on ${path}; use ${allowed.join(', ')}${preflightHint(request)}`, {
        headers: { allow: allowed.join(', ') },
      })
    return new AppError('not_found', `No route for ${request.method} ${path}`)
  }
  // An outage, not a bug: clients and load balancers may try again once the database is back.
  if (isDatabaseUnavailable(error))
    return new AppError('unavailable', 'The database is not answering; try again shortly', {
      headers: { 'retry-after': String(DATABASE_RETRY_AFTER_SECONDS) },
      cause: error,
    })
  return undefined
}

/**
 * Request ids, JSON bodies with a size limit, one error format and the access log.
 * Registered first so that every route behind it gets the same treatment.
 */
export function requestPipeline(options: RequestPipelineOptions) {
  const { logger, bodyLimitBytes, routeIndex, routeGuards, observer, lifecycle, peerAddress } = options
  const alwaysLogAddress = options.logClientAddress === 'always'
  const addressLookup: AddressLookup = { peerAddress, trustedProxies: options.trustedProxies ?? [] }
  const observeStart = observer?.started?.bind(observer)
  const runGuards = (route: string, context: GuardContext) => {
    const pending = routeGuards?.run(route, context)
    return pending?.catch((err) => {
      throw new GuardFailure('guard refused the request', { cause: err })
    })
  }

  // When mapping an error throws too (a value too deep or odd to describe), the answer is still a problem body.
  const answerError = (code: string | number, error: unknown, request: Request): Response => {
    const meta = requestMeta(request)
    // Looked up while the connection is certainly open: a refusal's access line always names its client.
    void meta.clientIp
    try {
      let appError = toAppError(code, error, request, routeIndex)
      if (!appError) {
        logger.error('unhandled error', { requestId: meta.id, method: request.method, url: new URL(request.url).pathname, err: error })
        appError = new AppError('internal_error', 'An unexpected error occurred; quote the request id when reporting it')
      }
      meta.errorStatus = appError.status
      return problemResponse(appError, meta.id)
    } catch (mappingError) {
      meta.errorStatus = 500
      try {
        logger.error('error mapping failed', { requestId: meta.id, method: request.method, code: String(code), err: mappingError })
      } catch {
        console.error(JSON.stringify({ level: 'error', msg: 'error mapping failed', requestId: meta.id }))
      }
      return problemResponse(new AppError('internal_error', 'An unexpected error occurred; quote the request id when reporting it'), meta.id)
    }
  }

  return (
    new Elysia({ name: 'request-pipeline', seed: bodyLimitBytes })
      .onRequest(({ request, set }) => {
        const given = request.headers.get('x-request-id')
        const meta = new Meta(given && CLIENT_REQUEST_ID.test(given) ? given : crypto.randomUUID(), performance.now(), request, addressLookup)
        if (alwaysLogAddress) void meta.clientIp
        ;(request as WithMeta)[META] = meta
        set.headers['x-request-id'] = meta.id
        set.headers['x-content-type-options'] = 'nosniff'
        if (lifecycle) {
          lifecycle.requestsArrived++
          if (lifecycle.draining) set.headers.connection = 'close'
        }
        const oversized = headProblem(request)
        if (oversized) {
          // Refused after the route's guards, so a guarded route still answers an anonymous caller 401 first.
          if (routeGuards?.mayBeGuarded(request.method, new URL(request.url).pathname)) holdUntilGuarded(request, oversized)
          else throw oversized
        }
        if (observeStart) observeStart(request)
      })
      // The route's guards come first: nothing of the body is read, and nothing said about it, before them.
      // Destructured, not passed whole: Elysia reads global hooks' source to learn what every route uses.
      .onParse({ as: 'global' }, async ({ request, contentType, route, set }) => {
        const guarded = runGuards(route, { request, set })
        if (guarded) await guarded
        if (!request.body) return null
        if (!isJsonContentType(contentType)) {
          // Left to the route's own parser (`multipartBody`), which counts the bytes against the route's limit.
          if (isMultipartContentType(contentType) && routeIndex.takesMultipart(request.method, route)) return undefined
          const takesForm = routeIndex.takesForm(request.method, route)
          // An HTML form posted to a route that declares it takes one (a page that works without script).
          if (takesForm && isFormContentType(contentType)) return parseFormBody(await readBodyText(request, bodyLimitBytes))
          // An empty body with no content type is simply no body.
          const text = requestMeta(request).rawBody ?? (await readBodyText(request, bodyLimitBytes))
          if (text === '' && !contentType) return null
          const expected = routeIndex.takesMultipart(request.method, route)
            ? 'multipart/form-data'
            : takesForm
              ? 'application/json or application/x-www-form-urlencoded'
              : 'application/json'
          throw new AppError('unsupported_media_type', `Content-Type must be ${expected}, got "${contentType || 'none'}"`, {
            errors: [{ field: 'content-type', message: `expected ${expected}` }],
          })
        }
        // A guard that checks a signature over the exact bytes (a peer's scoped code search) has read them already.
        const meta = requestMeta(request)
        const text = meta.rawBody ?? (await readBodyText(request, bodyLimitBytes))
        meta.rawBody = text
        return parseJsonBody(text)
      })
      .onError({ as: 'global' }, ({ code, error, request }) => answerError(code, error, request))
      .onAfterResponse({ as: 'global' }, ({ request, set, route, path }) => {
        const meta = requestMeta(request)
        const status = meta.errorStatus ?? (meta.switchedProtocols ? 101 : typeof set.status === 'number' ? set.status : 200)
        const durationMs = performance.now() - meta.startedAt
        if (observer) observer.finished(request, route, status, durationMs)
        logger.info('request', {
          requestId: meta.id,
          method: request.method,
          route: route || undefined,
          path,
          status,
          durationMs: Math.round(durationMs * 100) / 100,
          ip: meta.knownClientIp,
          userId: meta.principal?.userId,
        })
      })
  )
}
