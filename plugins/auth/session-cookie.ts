/**
 * The session cookie of the service's own pages (the playground, the page after setup): the refresh token in an
 * HttpOnly, SameSite=Strict cookie whose path only the auth routes match, so page script never sees it and no
 * other route receives it. A request uses the cookie only when it says so with `X-Session: cookie` and comes
 * from a page of this origin: a cross-site form cannot set the header, and a page on another origin (another
 * port of the same host included, which SameSite counts as the same site) is refused by its Origin. Front ends
 * on other origins keep sending the refresh token in the body; CORS never allows credentials.
 */
import type { TokenPair } from '../../src/auth/access-service.ts'
import { AppError } from '../../src/errors.ts'
import { summarise } from '../../src/validation.ts'

/** The cookie's name; the path is the auth routes' prefix. */
export const SESSION_COOKIE = 'refresh_token'
export const SESSION_COOKIE_PATH = '/auth'
/** The request header that asks for cookie mode, and its one value. */
export const SESSION_HEADER = 'x-session'
export const SESSION_HEADER_VALUE = 'cookie'

/** A token pair as cookie mode answers it: the refresh token is in the cookie, not the body. */
export type CookieSessionTokens = Omit<TokenPair, 'refreshToken'>

export interface SessionCookies {
  /** Whether the request asks for cookie mode (`X-Session: cookie`); another value of the header is refused. */
  wanted(request: Request): boolean
  /** Refuses (403) a cookie-mode request that does not come from a page of this service. */
  assertSameOrigin(request: Request): void
  /** Whether the request comes from a page of this service (its Origin, and its fetch metadata where sent). */
  fromOwnPage(request: Request): boolean
  /** The refresh token the cookie carries, if any. */
  read(request: Request): string | undefined
  /** Set-Cookie for a refresh token that lives `maxAgeSeconds`. */
  set(refreshToken: string, maxAgeSeconds: number): string
  /** Set-Cookie that removes the cookie. */
  clear(): string
  /** The pair without its refresh token, and the Set-Cookie that carries it. */
  split(pair: TokenPair): { tokens: CookieSessionTokens; setCookie: string }
}

const refused = (why: string) =>
  new AppError('forbidden', `Cookie sessions are for pages this service serves: ${why}. Other clients send the refresh token in the body`)

/** Cookie values are base64url refresh tokens (`rt_…`); anything else is not ours. */
const TOKEN = /^rt_[A-Za-z0-9_-]{1,500}$/

/** A body-mode refresh or logout without a token, answered as the schema's own check would. */
export function refreshTokenRequired(): AppError {
  const errors = [{ field: 'refreshToken', message: 'is required' }]
  return new AppError('validation_failed', summarise(errors), { errors })
}

/** `publicBaseUrl` (PUBLIC_BASE_URL) names this service's own origin; Secure follows its scheme. */
export function sessionCookies(publicBaseUrl: string): SessionCookies {
  const ownOrigin = new URL(publicBaseUrl).origin
  const secure = ownOrigin.startsWith('https:') ? '; Secure' : ''
  const cookie = (value: string, maxAge: number) =>
    `${SESSION_COOKIE}=${value}; Path=${SESSION_COOKIE_PATH}; Max-Age=${maxAge}; HttpOnly; SameSite=Strict${secure}`

  function wanted(request: Request): boolean {
    const header = request.headers.get(SESSION_HEADER)
    if (header === null) return false
    if (header.trim().toLowerCase() !== SESSION_HEADER_VALUE)
      throw new AppError('validation_failed', `${SESSION_HEADER}: must be ${SESSION_HEADER_VALUE}`, {
        errors: [{ field: SESSION_HEADER, message: `must be ${SESSION_HEADER_VALUE}` }],
      })
    return true
  }

  /** Why the request is not from a page of this origin, or undefined when it is. */
  function notOwnPage(request: Request): string | undefined {
    // Fetch metadata, where the browser sends it, must agree: only a page of this very origin.
    const site = request.headers.get('sec-fetch-site')
    if (site !== null && site !== 'same-origin') return `the request came from a ${site} page`
    const origin = request.headers.get('origin')
    if (origin === null) return 'the request has no Origin header'
    if (origin === ownOrigin) return undefined
    // A page the service serves under another name than PUBLIC_BASE_URL (127.0.0.1, say) is on the host it calls.
    let host: string | undefined
    try {
      host = new URL(origin).host
    } catch {
      // `null` (a sandboxed page, a file) is no origin of ours
    }
    return host !== undefined && host === request.headers.get('host')?.toLowerCase() ? undefined : `Origin ${origin.slice(0, 200)} is not this service`
  }

  function assertSameOrigin(request: Request): void {
    const why = notOwnPage(request)
    if (why !== undefined) throw refused(why)
  }

  function read(request: Request): string | undefined {
    for (const part of (request.headers.get('cookie') ?? '').split(';')) {
      const at = part.indexOf('=')
      if (at > 0 && part.slice(0, at).trim() === SESSION_COOKIE) {
        const value = part.slice(at + 1).trim()
        return TOKEN.test(value) ? value : undefined
      }
    }
    return undefined
  }

  function split(pair: TokenPair) {
    const { refreshToken, ...tokens } = pair
    return { tokens, setCookie: cookie(refreshToken, pair.refreshExpiresIn) }
  }

  return {
    wanted,
    assertSameOrigin,
    fromOwnPage: (request: Request) => notOwnPage(request) === undefined,
    read,
    set: cookie,
    clear: () => cookie('', 0),
    split,
  }
}

const sessionHeader = {
  in: 'header' as const,
  name: 'X-Session',
  required: false,
  description: 'cookie: keep the refresh token in the session cookie (pages of this service only; needs Origin of this service)',
  schema: { type: 'string' as const, enum: [SESSION_HEADER_VALUE] },
}
const sessionCookieParameter = {
  in: 'cookie' as const,
  name: SESSION_COOKIE,
  required: false,
  description: 'The session cookie, read only with X-Session: cookie and no refreshToken in the body',
  schema: { type: 'string' as const },
}
const setCookie = (description: string) => ({ 'Set-Cookie': { description, schema: { type: 'string' as const } } })
const setsCookie = `${SESSION_COOKIE}=<refresh token>; Path=${SESSION_COOKIE_PATH}; Max-Age=<refreshExpiresIn>; HttpOnly; SameSite=Strict (and Secure when PUBLIC_BASE_URL is https)`
const cookieMode =
  'With X-Session: cookie (pages this service serves: Origin must be this service, else 403 forbidden), the refresh token is in the session cookie, not the body.'

/** The OpenAPI additions of the three routes: the X-Session header, the cookie, and Set-Cookie. */
export const SESSION_COOKIE_DOC = {
  login: {
    description: `${cookieMode} The answer then sets it.`,
    parameters: [sessionHeader],
    responses: { 200: { description: 'Signed in', headers: setCookie(`With X-Session: cookie: ${setsCookie}`) } },
  },
  refresh: {
    description: `${cookieMode} Without refreshToken in the body, the cookie's is rotated and the new one set; a cookie that no longer works is removed.`,
    parameters: [sessionHeader, sessionCookieParameter],
    responses: { 200: { description: 'The new pair', headers: setCookie(`With X-Session: cookie: ${setsCookie}`) } },
  },
  logout: {
    description: `${cookieMode} Without refreshToken in the body, the cookie's session is ended and the cookie removed (Max-Age=0).`,
    parameters: [sessionHeader, sessionCookieParameter],
    responses: { 204: { description: 'Signed out', headers: setCookie(`With X-Session: cookie: ${SESSION_COOKIE}=; Path=${SESSION_COOKIE_PATH}; Max-Age=0`) } },
  },
}

/** What the three routes need of the access service. */
interface SessionAccess {
  login(email: string, password: string, clientIp: string): Promise<TokenPair>
  refresh(refreshToken: string): Promise<TokenPair>
  logout(refreshToken: string): Promise<void>
}

interface Answer {
  headers: Record<string, unknown>
  status?: number | string
}

/**
 * POST /auth/login, /auth/refresh and /auth/logout in both modes: a refresh token in the body (answered in the
 * body), or, with `X-Session: cookie` from a page of this origin, in the session cookie.
 */
export function sessionHandlers(access: SessionAccess, cookies: SessionCookies) {
  /** Whether the request is in cookie mode; one from elsewhere is refused before anything else is done. */
  const cookieMode = (request: Request) => {
    if (!cookies.wanted(request)) return false
    cookies.assertSameOrigin(request)
    return true
  }

  async function login(request: Request, set: Answer, credentials: { email: string; password: string; clientIp: string }) {
    const inCookie = cookieMode(request)
    const pair = await access.login(credentials.email, credentials.password, credentials.clientIp)
    if (!inCookie) return pair
    const { tokens, setCookie } = cookies.split(pair)
    set.headers['set-cookie'] = setCookie
    return tokens
  }

  async function refresh(request: Request, set: Answer, bodyToken: string | undefined) {
    if (bodyToken !== undefined) return access.refresh(bodyToken)
    if (!cookieMode(request)) throw refreshTokenRequired()
    const token = cookies.read(request)
    if (token === undefined) throw new AppError('invalid_token', 'No session cookie: sign in first')
    let pair: TokenPair
    try {
      pair = await access.refresh(token)
    } catch (err) {
      // A cookie that no longer works is removed, so the page stops offering it.
      if (err instanceof AppError)
        throw new AppError(err.code, err.message, { ...err.options, headers: { ...err.options.headers, 'set-cookie': cookies.clear() } })
      throw err
    }
    const { tokens, setCookie } = cookies.split(pair)
    set.headers['set-cookie'] = setCookie
    return tokens
  }

  async function logout(request: Request, set: Answer, bodyToken: string | undefined) {
    if (bodyToken !== undefined) await access.logout(bodyToken)
    else {
      if (!cookieMode(request)) throw refreshTokenRequired()
      const token = cookies.read(request)
      if (token !== undefined) await access.logout(token)
      set.headers['set-cookie'] = cookies.clear()
    }
    set.status = 204
  }

  return { login, refresh, logout }
}
