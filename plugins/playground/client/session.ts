/**
 * The page's sign-in, as a cookie session (`X-Session: cookie`, see /docs/authentication#sessions-in-the-services-own-pages):
 * the refresh token lives in an HttpOnly cookie this script never sees, the access token in this page's memory
 * only. On load the page asks POST /auth/refresh for a new access token, so a reload (or the page after setup)
 * finds the session without a password; nothing is kept in localStorage or sessionStorage.
 */

export interface Session {
  accessToken: string
  email: string
  role: string
}

interface SessionTokens {
  accessToken: string
  expiresIn: number
  user: { email: string; role: string }
}

/** Cookie mode: the service reads and sets the session cookie only for requests that ask so, from its own pages. */
const COOKIE_MODE = { 'x-session': 'cookie' }
// The access token is renewed this long before it expires.
const RENEW_EARLY_SECONDS = 60

let current: Session | undefined
let renewal: ReturnType<typeof setTimeout> | undefined
const endListeners: (() => void)[] = []

/** The problem+json `detail` of a refused request, or its status line. */
export async function problemText(response: Response): Promise<string> {
  const body = (await response.json().catch(() => undefined)) as { detail?: unknown; title?: unknown } | undefined
  const detail = typeof body?.detail === 'string' ? body.detail : typeof body?.title === 'string' ? body.title : ''
  return `${response.status}${detail ? `: ${detail}` : ` ${response.statusText}`}`
}

/**
 * A refresh token is single-use, so two tabs of the page must not present the same cookie at once (the second
 * would look like a replayed token and end the session): each call holds a lock every tab of the origin shares.
 */
function oneTabAtATime<T>(call: () => Promise<T>): Promise<T> {
  return navigator.locks ? navigator.locks.request('playground-session', call) : call()
}

function start(tokens: SessionTokens): Session {
  current = { accessToken: tokens.accessToken, email: tokens.user.email, role: tokens.user.role }
  clearTimeout(renewal)
  renewal = setTimeout(renew, Math.max(tokens.expiresIn - RENEW_EARLY_SECONDS, 5) * 1000)
  return current
}

function end() {
  current = undefined
  clearTimeout(renewal)
}

/** A new access token from the session cookie, or undefined when there is no session (or it ended). */
async function refreshFromCookie(): Promise<Session | undefined> {
  const response = await oneTabAtATime(() => fetch('/auth/refresh', { method: 'POST', headers: COOKIE_MODE }))
  if (!response.ok) return undefined
  return start((await response.json()) as SessionTokens)
}

async function renew() {
  const session = await refreshFromCookie().catch(() => undefined)
  if (session) return
  end()
  for (const listener of endListeners) listener()
}

/** Called when the session ends by itself (signed out in another tab, revoked, expired). */
export function onSessionEnd(listener: () => void): void {
  endListeners.push(listener)
}

/** The session the browser already has (a reload, or the page after setup), if any. */
export function resume(): Promise<Session | undefined> {
  return refreshFromCookie().catch(() => undefined)
}

export async function signIn(email: string, password: string): Promise<Session> {
  const response = await oneTabAtATime(() =>
    fetch('/auth/login', {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...COOKIE_MODE },
      body: JSON.stringify({ email, password }),
    }),
  )
  if (!response.ok) throw new Error(await problemText(response))
  return start((await response.json()) as SessionTokens)
}

/** Ends the session on the service (its tokens revoked, the cookie cleared) and forgets it here. */
export async function signOut(): Promise<void> {
  end()
  await oneTabAtATime(() => fetch('/auth/logout', { method: 'POST', headers: COOKIE_MODE })).catch(() => undefined)
}

/** The access token of the signed-in user. */
export function accessToken(): string {
  if (!current) throw new Error('Sign in first')
  return current.accessToken
}
