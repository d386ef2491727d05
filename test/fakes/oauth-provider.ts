/**
 * A fake OAuth provider: a small but real OAuth 2.0 authorization server plus the APIs the
 * integrations call, on one Bun server. Paths are the real providers' own:
 *
 * - GitHub: GET /login/oauth/authorize, POST /login/oauth/access_token (refusals are 200 with `error`,
 *   as GitHub does), GET /user (+ X-OAuth-Scopes), DELETE /applications/:client_id/grant
 * - Supabase: GET /v1/oauth/authorize, POST /v1/oauth/token, GET /v1/organizations, GET /v1/projects,
 *   POST /v1/oauth/revoke
 * - Generic (GitLab-like): GET /oauth/authorize, POST /oauth/token, POST /oauth/revoke (RFC 7009),
 *   GET /api/v4/user
 *
 * The authorization server enforces what real ones do: registered client and exact redirect_uri,
 * PKCE S256 required, codes single-use and short-lived (a replayed code also revokes what it issued),
 * client authentication, rotating single-use refresh tokens. Tests steer it: who approves, token
 * lifetime, revoking or expiring everything, API failures.
 */
import { startFakeServer, type RecordedRequest } from './server.ts'

export interface FakeAccount {
  id: number
  login: string
  name: string
  organizations: { id: string; name: string }[]
  projects: { id: string; name: string; organization_id: string; region: string; status: string }[]
}

export interface FakeClient {
  secret: string
  /** The one redirect URI registered for the app, compared exactly. */
  redirectUri: string
}

type Style = 'github' | 'supabase' | 'generic'

interface Grant {
  id: number
  clientId: string
  account: FakeAccount
  scopes: string[]
  revoked: boolean
}

interface Code {
  grant: Grant
  redirectUri: string
  challenge: string
  expiresAt: number
  used: boolean
}

interface IssuedToken {
  grant: Grant
  kind: 'access' | 'refresh'
  expiresAt?: number
  used?: boolean
}

export interface FakeOAuthProvider {
  readonly url: string
  readonly requests: RecordedRequest[]
  /** The provider user who approves the next authorisation. */
  account: FakeAccount
  /** The user's answer at the consent screen. */
  decision: 'approve' | 'deny'
  /** Access token lifetime; undefined issues non-expiring tokens without refresh tokens (classic GitHub OAuth apps). */
  accessTokenTtlSeconds: number | undefined
  /** Delay before answering a refresh grant, so concurrent callers overlap. */
  refreshDelayMs: number
  /** The next API calls answer this status instead (count, then back to normal). */
  failApi(status: number, count: number, retryAfter?: string): void
  /**
   * The next `count` refresh_token grants answer this instead, the refresh token untouched: `error` as a JSON body
   * (RFC 6749 5.2), none for a bare status. A GitHub-style 200 carries the error member, as GitHub does.
   */
  failRefresh(failure: { status: number; error?: string }, count?: number): void
  /** Awaited by each refresh_token grant before its token is looked up: the test decides who reaches the provider first. */
  beforeRefresh?: () => Promise<void>
  /** Awaited by each refresh_token grant after its token was rotated, before the answer is sent. */
  beforeRefreshAnswer?: () => Promise<void>
  /** Token endpoint calls by grant type. */
  readonly grants: { authorization_code: number; refresh_token: number }
  /** API calls (GET /user, organisations, projects, account) received, every retry included. */
  readonly apiCalls: number
  /** Every token string issued, for scanning logs, responses and tables. */
  readonly issuedTokens: string[]
  /** The access tokens among them, in order (a refresh token's text cannot tell it from an access token's). */
  readonly issuedAccessTokens: string[]
  /** Revocation requests received (each verified and applied). */
  readonly revocations: number
  /** The user revokes every grant at the provider. */
  revokeAll(): void
  /** Every access token issued so far stops working (refresh tokens still do). */
  expireAccessTokens(): void
  /** Follows an authorization URL as the browser would; answers the Location it is sent to. */
  authorize(authorizationUrl: string): Promise<string>
  close(): Promise<void>
}

export const defaultAccount: FakeAccount = {
  id: 4242,
  login: 'octo-dev',
  name: 'Octo Dev',
  organizations: [{ id: 'org-fake-1', name: 'Fake Org' }],
  projects: [{ id: 'proj-fake-1', name: 'Fake Project', organization_id: 'org-fake-1', region: 'eu-west-1', status: 'ACTIVE_HEALTHY' }],
}

const json = (body: unknown, status = 200, headers: Record<string, string> = {}) =>
  new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json', ...headers } })

const random = (prefix: string) => `${prefix}${Buffer.from(crypto.getRandomValues(new Uint8Array(24))).toString('base64url')}`

async function s256(verifier: string): Promise<string> {
  return Buffer.from(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(verifier))).toString('base64url')
}

const TOKEN_PREFIX: Record<Style, string> = { github: 'gho_', supabase: 'sbp_oauth_', generic: 'glpat-' }

export function startFakeOAuthProvider(clients: Record<string, FakeClient>): FakeOAuthProvider {
  const codes = new Map<string, Code>()
  const tokens = new Map<string, IssuedToken>()
  const grantsByCode = new Map<string, Grant[]>()
  let grantSeq = 0
  let apiFailure: { status: number; count: number; retryAfter?: string } | undefined
  let refreshFailure: { status: number; error?: string; count: number } | undefined
  const hooks: Pick<FakeOAuthProvider, 'beforeRefresh' | 'beforeRefreshAnswer'> = {}
  const state = {
    account: defaultAccount,
    decision: 'approve' as 'approve' | 'deny',
    accessTokenTtlSeconds: 3600 as number | undefined,
    refreshDelayMs: 0,
    grants: { authorization_code: 0, refresh_token: 0 },
    apiCalls: 0,
    issuedTokens: [] as string[],
    issuedAccessTokens: [] as string[],
    revocations: 0,
  }

  function clientFrom(request: Request, form: URLSearchParams): { id: string; client: FakeClient } | undefined {
    const header = request.headers.get('authorization')
    let id = form.get('client_id') ?? undefined
    let secret = form.get('client_secret') ?? undefined
    if (header?.startsWith('Basic ')) {
      const [user, pass] = Buffer.from(header.slice(6), 'base64').toString().split(':')
      id = decodeURIComponent(user ?? '')
      secret = decodeURIComponent(pass ?? '')
    }
    const client = id ? clients[id] : undefined
    return client && id && client.secret === secret ? { id, client } : undefined
  }

  function issue(style: Style, grant: Grant) {
    const accessToken = random(TOKEN_PREFIX[style])
    const ttl = state.accessTokenTtlSeconds
    tokens.set(accessToken, { grant, kind: 'access', expiresAt: ttl === undefined ? undefined : Date.now() + ttl * 1000 })
    state.issuedTokens.push(accessToken)
    state.issuedAccessTokens.push(accessToken)
    const body: Record<string, unknown> = {
      access_token: accessToken,
      token_type: 'bearer',
      scope: grant.scopes.join(style === 'github' ? ',' : ' '),
    }
    if (ttl !== undefined) {
      const refreshToken = random(`${TOKEN_PREFIX[style]}r_`)
      tokens.set(refreshToken, { grant, kind: 'refresh' })
      state.issuedTokens.push(refreshToken)
      Object.assign(body, { expires_in: ttl, refresh_token: refreshToken })
      if (style === 'github') body.refresh_token_expires_in = 15_811_200
    }
    return body
  }

  // GitHub answers token refusals with 200 and an error member; the others with 400 (RFC 6749 5.2).
  const refuse = (style: Style, error: string, status = 400) =>
    json({ error, error_description: `refused: ${error}` }, style === 'github' && status === 400 ? 200 : status)

  function authorizeEndpoint(style: Style, url: URL): Response {
    const q = url.searchParams
    const clientId = q.get('client_id') ?? ''
    const client = clients[clientId]
    if (!client) return json({ error: 'unknown client_id' }, 400)
    // A redirect_uri that is not the registered one is never redirected to (RFC 6749 4.1.2.1).
    if (q.get('redirect_uri') !== client.redirectUri) return json({ error: 'redirect_uri does not match the registered one' }, 400)
    const back = new URL(client.redirectUri)
    const stateParam = q.get('state')
    if (stateParam !== null) back.searchParams.set('state', stateParam)
    const challenge = q.get('code_challenge')
    if (q.get('response_type') !== 'code') back.searchParams.set('error', 'unsupported_response_type')
    else if (!challenge || q.get('code_challenge_method') !== 'S256') back.searchParams.set('error', 'invalid_request')
    else if (state.decision === 'deny') back.searchParams.set('error', 'access_denied')
    else {
      const code = random('code_')
      const scopes = (q.get('scope') ?? '').split(/[\s,]+/).filter(Boolean)
      const grant: Grant = { id: ++grantSeq, clientId, account: state.account, scopes: style === 'supabase' ? [] : scopes, revoked: false }
      codes.set(code, { grant, redirectUri: client.redirectUri, challenge, expiresAt: Date.now() + 60_000, used: false })
      back.searchParams.set('code', code)
    }
    return new Response(null, { status: 302, headers: { location: back.toString() } })
  }

  async function tokenEndpoint(style: Style, request: Request): Promise<Response> {
    const form = new URLSearchParams(await request.text())
    const caller = clientFrom(request, form)
    if (!caller) return refuse(style, 'invalid_client', 401)
    const grantType = form.get('grant_type')
    if (grantType === 'authorization_code') {
      state.grants.authorization_code++
      const codeValue = form.get('code') ?? ''
      const code = codes.get(codeValue)
      if (!code || code.grant.clientId !== caller.id || code.expiresAt < Date.now()) return refuse(style, 'invalid_grant')
      if (code.used) {
        // A replayed code revokes the tokens it already issued (RFC 6749 4.1.2).
        for (const grant of grantsByCode.get(codeValue) ?? []) grant.revoked = true
        return refuse(style, 'invalid_grant')
      }
      code.used = true
      if (form.get('redirect_uri') !== code.redirectUri) return refuse(style, 'invalid_grant')
      const verifier = form.get('code_verifier')
      if (!verifier || !/^[A-Za-z0-9._~-]{43,128}$/.test(verifier) || (await s256(verifier)) !== code.challenge) return refuse(style, 'invalid_grant')
      grantsByCode.set(codeValue, [code.grant])
      return json(issue(style, code.grant))
    }
    if (grantType === 'refresh_token') {
      state.grants.refresh_token++
      if (state.refreshDelayMs > 0) await Bun.sleep(state.refreshDelayMs)
      if (refreshFailure && refreshFailure.count > 0) {
        refreshFailure.count--
        const { status, error } = refreshFailure
        return error === undefined ? new Response('upstream trouble', { status }) : json({ error }, status)
      }
      await hooks.beforeRefresh?.()
      const held = tokens.get(form.get('refresh_token') ?? '')
      if (held?.kind !== 'refresh' || held.used || held.grant.revoked || held.grant.clientId !== caller.id) return refuse(style, 'invalid_grant')
      held.used = true // rotation: each refresh token is single-use
      const issued = issue(style, held.grant)
      await hooks.beforeRefreshAnswer?.()
      return json(issued)
    }
    return refuse(style, 'unsupported_grant_type')
  }

  function bearer(request: Request): IssuedToken | undefined {
    const header = request.headers.get('authorization') ?? ''
    const held = header.startsWith('Bearer ') ? tokens.get(header.slice(7)) : undefined
    if (held?.kind !== 'access' || held.grant.revoked || (held.expiresAt !== undefined && held.expiresAt <= Date.now())) return undefined
    return held
  }

  function api(request: Request, answer: (held: IssuedToken) => Response): Response {
    state.apiCalls++
    if (apiFailure && apiFailure.count > 0) {
      apiFailure.count--
      return json({ message: 'unavailable' }, apiFailure.status, apiFailure.retryAfter === undefined ? {} : { 'retry-after': apiFailure.retryAfter })
    }
    const held = bearer(request)
    if (!held) return json({ message: 'Bad credentials' }, 401)
    return answer(held)
  }

  function revokeGrantOf(token: string | null | undefined, clientId: string): boolean {
    const held = token ? tokens.get(token) : undefined
    if (!held || held.grant.clientId !== clientId) return false
    held.grant.revoked = true
    state.revocations++
    return true
  }

  const server = startFakeServer(async (request) => {
    const url = new URL(request.url)
    const path = url.pathname
    const method = request.method
    if (method === 'GET' && path === '/login/oauth/authorize') return authorizeEndpoint('github', url)
    if (method === 'GET' && path === '/v1/oauth/authorize') return authorizeEndpoint('supabase', url)
    if (method === 'GET' && path === '/oauth/authorize') return authorizeEndpoint('generic', url)
    if (method === 'POST' && path === '/login/oauth/access_token') return tokenEndpoint('github', request)
    if (method === 'POST' && path === '/v1/oauth/token') return tokenEndpoint('supabase', request)
    if (method === 'POST' && path === '/oauth/token') return tokenEndpoint('generic', request)

    if (method === 'GET' && path === '/user')
      return api(request, ({ grant }) =>
        json(
          {
            login: grant.account.login,
            id: grant.account.id,
            name: grant.account.name,
            type: 'User',
            avatar_url: `https://avatars.example/${grant.account.id}`,
            html_url: `https://github.example/${grant.account.login}`,
          },
          200,
          { 'x-oauth-scopes': grant.scopes.join(', ') },
        ),
      )
    if (method === 'GET' && path === '/v1/organizations') return api(request, ({ grant }) => json(grant.account.organizations))
    if (method === 'GET' && path === '/v1/projects') return api(request, ({ grant }) => json(grant.account.projects))
    if (method === 'GET' && path === '/api/v4/user')
      return api(request, ({ grant }) =>
        json({ id: grant.account.id, username: grant.account.login, name: grant.account.name, email: `${grant.account.login}@example.com` }),
      )

    const grantPath = /^\/applications\/([^/]+)\/grant$/.exec(path)
    if (method === 'DELETE' && grantPath) {
      const caller = clientFrom(request, new URLSearchParams())
      if (!caller || caller.id !== decodeURIComponent(grantPath[1]!)) return json({ message: 'Requires authentication' }, 401)
      const body = (await request.json().catch(() => ({}))) as { access_token?: string }
      return revokeGrantOf(body.access_token, caller.id) ? new Response(null, { status: 204 }) : json({ message: 'Not Found' }, 404)
    }
    if (method === 'POST' && path === '/v1/oauth/revoke') {
      const body = (await request.json().catch(() => ({}))) as { client_id?: string; client_secret?: string; refresh_token?: string }
      const client = body.client_id ? clients[body.client_id] : undefined
      if (!client || client.secret !== body.client_secret) return json({ message: 'invalid client' }, 401)
      return revokeGrantOf(body.refresh_token, body.client_id!) ? new Response(null, { status: 204 }) : json({ message: 'not found' }, 404)
    }
    if (method === 'POST' && path === '/oauth/revoke') {
      const form = new URLSearchParams(await request.text())
      const caller = clientFrom(request, form)
      if (!caller) return json({ error: 'invalid_client' }, 401)
      revokeGrantOf(form.get('token'), caller.id)
      return json({}) // RFC 7009: 200 whether or not the token was known
    }
    return json({ message: 'Not Found' }, 404)
  })

  return {
    url: server.url,
    requests: server.requests,
    get account() {
      return state.account
    },
    set account(next) {
      state.account = next
    },
    get decision() {
      return state.decision
    },
    set decision(next) {
      state.decision = next
    },
    get accessTokenTtlSeconds() {
      return state.accessTokenTtlSeconds
    },
    set accessTokenTtlSeconds(next) {
      state.accessTokenTtlSeconds = next
    },
    get refreshDelayMs() {
      return state.refreshDelayMs
    },
    set refreshDelayMs(next) {
      state.refreshDelayMs = next
    },
    failApi(status, count, retryAfter) {
      apiFailure = { status, count, retryAfter }
    },
    failRefresh(failure, count = 1) {
      refreshFailure = { ...failure, count }
    },
    get beforeRefresh() {
      return hooks.beforeRefresh
    },
    set beforeRefresh(next) {
      hooks.beforeRefresh = next
    },
    get beforeRefreshAnswer() {
      return hooks.beforeRefreshAnswer
    },
    set beforeRefreshAnswer(next) {
      hooks.beforeRefreshAnswer = next
    },
    grants: state.grants,
    get apiCalls() {
      return state.apiCalls
    },
    issuedTokens: state.issuedTokens,
    issuedAccessTokens: state.issuedAccessTokens,
    get revocations() {
      return state.revocations
    },
    revokeAll() {
      for (const held of tokens.values()) held.grant.revoked = true
    },
    expireAccessTokens() {
      for (const held of tokens.values()) if (held.kind === 'access') held.expiresAt = Date.now() - 1
    },
    async authorize(authorizationUrl) {
      const response = await fetch(authorizationUrl, { redirect: 'manual' })
      const location = response.headers.get('location')
      await response.body?.cancel()
      if (response.status !== 302 || !location) throw new Error(`the authorization server answered ${response.status} without a redirect`)
      return location
    },
    close: () => server.close(),
  }
}
