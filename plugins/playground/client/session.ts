/**
 * Signing in against POST /auth/login. The tokens live in this page's memory only: a reload signs out,
 * and nothing is left in storage for another page of the origin to read.
 */

export interface Session {
  accessToken: string
  refreshToken: string
  email: string
  role: string
}

let current: Session | undefined

/** The problem+json `detail` of a refused request, or its status line. */
export async function problemText(response: Response): Promise<string> {
  const body = (await response.json().catch(() => undefined)) as { detail?: unknown; title?: unknown } | undefined
  const detail = typeof body?.detail === 'string' ? body.detail : typeof body?.title === 'string' ? body.title : ''
  return `${response.status}${detail ? `: ${detail}` : ` ${response.statusText}`}`
}

export async function signIn(email: string, password: string): Promise<Session> {
  const response = await fetch('/auth/login', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email, password }),
  })
  if (!response.ok) throw new Error(await problemText(response))
  const pair = (await response.json()) as { accessToken: string; refreshToken: string; user: { email: string; role: string } }
  current = { accessToken: pair.accessToken, refreshToken: pair.refreshToken, email: pair.user.email, role: pair.user.role }
  return current
}

/** Revokes the refresh token (best effort) and forgets the session. */
export async function signOut(): Promise<void> {
  const session = current
  current = undefined
  if (session)
    await fetch('/auth/logout', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ refreshToken: session.refreshToken }),
    }).catch(() => undefined)
}

/** The access token of the signed-in user. */
export function accessToken(): string {
  if (!current) throw new Error('Sign in first')
  return current.accessToken
}
