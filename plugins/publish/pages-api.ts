/**
 * The GitHub REST calls publishing makes with the user's token: who the token belongs to, the
 * repository (created on the user's account when missing), and the Pages site of a branch.
 */
import { AppError } from '../../src/errors.ts'
import type { HttpClient } from '../../src/http.ts'

export interface Repository {
  fullName: string
  private: boolean
  /** What the token may do there; GitHub includes it for authenticated calls. */
  permissions: { admin: boolean; push: boolean } | undefined
}

export interface PagesSite {
  /** The branch published from, or undefined for a site built by a workflow. */
  branch: string | undefined
  path: string
  cname: string | null
  buildType: string | undefined
  /** Where GitHub serves the site (`html_url`), when it says. */
  htmlUrl: string | undefined
}

export interface PagesApiOptions {
  http: HttpClient
  /** GITHUB_API_URL */
  apiUrl: string
  timeoutMs?: number
}

/** Where to connect GitHub, named in the refusals. */
export const CONNECT_ROUTE = 'POST /api/integrations/github/auth'

const UPSTREAM = 'GitHub'

const record = (value: unknown): Record<string, unknown> => (value && typeof value === 'object' ? (value as Record<string, unknown>) : {})

async function bodyOf(response: Response): Promise<Record<string, unknown>> {
  const text = await response.text()
  try {
    return record(JSON.parse(text))
  } catch {
    return {}
  }
}

/** An absolute http(s) URL, or undefined: only such an address is handed on as the site's. */
function httpUrl(value: unknown): string | undefined {
  if (typeof value !== 'string') return undefined
  try {
    const url = new URL(value)
    return url.protocol === 'https:' || url.protocol === 'http:' ? url.toString() : undefined
  } catch {
    return undefined
  }
}

export function createPagesApi(options: PagesApiOptions) {
  const { http, apiUrl } = options

  async function call(token: string, method: string, path: string, body?: unknown): Promise<{ status: number; body: Record<string, unknown> }> {
    const response = await http.request(`${apiUrl}${path}`, {
      method,
      upstream: UPSTREAM,
      timeoutMs: options.timeoutMs,
      headers: {
        accept: 'application/vnd.github+json',
        'x-github-api-version': '2022-11-28',
        // GitHub refuses API calls without a User-Agent.
        'user-agent': 'realtime-ai-backend',
        authorization: `Bearer ${token}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    })
    const answer = { status: response.status, body: await bodyOf(response) }
    if (response.status === 401)
      throw new AppError('codehost_not_connected', `GitHub refused the connected account's token; connect GitHub again at ${CONNECT_ROUTE}`, {
        extensions: { provider: 'github', connect: CONNECT_ROUTE },
      })
    const limited = response.status === 429 || (response.status === 403 && response.headers.get('x-ratelimit-remaining') === '0')
    if (limited) {
      const retryAfter = response.headers.get('retry-after')
      throw new AppError('unavailable', 'GitHub is rate limiting the connected account; try again later', {
        headers: retryAfter ? { 'retry-after': retryAfter } : undefined,
        extensions: { provider: 'github' },
      })
    }
    if (response.status === 403)
      throw new AppError('codehost_forbidden', `GitHub refused ${method} ${path.split('?')[0]}: ${String(answer.body.message ?? 'forbidden')}`, {
        extensions: { provider: 'github', status: 403 },
      })
    if (response.status >= 500)
      throw new AppError('upstream_error', `GitHub answered ${response.status} to ${method} ${path}`, {
        extensions: { provider: 'github', status: response.status },
      })
    return answer
  }

  const unexpected = (what: string, status: number, body: Record<string, unknown>) =>
    new AppError('upstream_error', `GitHub answered ${status} to ${what}${body.message ? `: ${String(body.message)}` : ''}`, {
      extensions: { provider: 'github', status },
    })

  const repositoryFrom = (body: Record<string, unknown>): Repository => {
    const permissions = record(body.permissions)
    return {
      fullName: String(body.full_name ?? ''),
      private: body.private === true,
      permissions: body.permissions ? { admin: permissions.admin === true, push: permissions.push === true } : undefined,
    }
  }

  const pagesSiteFrom = (body: Record<string, unknown>): PagesSite => {
    const source = record(body.source)
    return {
      branch: typeof source.branch === 'string' ? source.branch : undefined,
      path: typeof source.path === 'string' ? source.path : '/',
      cname: typeof body.cname === 'string' ? body.cname : null,
      buildType: typeof body.build_type === 'string' ? body.build_type : undefined,
      htmlUrl: httpUrl(body.html_url),
    }
  }

  const repoPath = (owner: string, name: string) => `/repos/${encodeURIComponent(owner)}/${encodeURIComponent(name)}`

  return {
    /** The account the token belongs to. */
    async viewer(token: string): Promise<{ login: string; id: string }> {
      const { status, body } = await call(token, 'GET', '/user')
      if (status !== 200 || typeof body.login !== 'string') throw unexpected('GET /user', status, body)
      return { login: body.login, id: String(body.id ?? '') }
    },

    /** The repository, or undefined when it does not exist (or the token cannot see it). */
    async repository(token: string, owner: string, name: string): Promise<Repository | undefined> {
      const { status, body } = await call(token, 'GET', repoPath(owner, name))
      if (status === 404) return undefined
      if (status !== 200) throw unexpected(`GET ${repoPath(owner, name)}`, status, body)
      return repositoryFrom(body)
    },

    /** Creates an empty repository on the token's own account; undefined when the name is already taken. */
    async createRepository(token: string, name: string, options: { private: boolean; description: string }): Promise<Repository | undefined> {
      const { status, body } = await call(token, 'POST', '/user/repos', { name, private: options.private, description: options.description, auto_init: false })
      if (status === 422) return undefined
      if (status !== 201) throw unexpected('POST /user/repos', status, body)
      return repositoryFrom(body)
    },

    /** The repository's Pages site, or undefined when Pages is not enabled. */
    async pagesSite(token: string, owner: string, name: string): Promise<PagesSite | undefined> {
      const { status, body } = await call(token, 'GET', `${repoPath(owner, name)}/pages`)
      if (status === 404) return undefined
      if (status !== 200) throw unexpected(`GET ${repoPath(owner, name)}/pages`, status, body)
      return pagesSiteFrom(body)
    },

    /** Enables Pages, published from the root of `branch`: the new site, or undefined when it was already enabled. */
    async enablePages(token: string, owner: string, name: string, branch: string): Promise<PagesSite | undefined> {
      const path = `${repoPath(owner, name)}/pages`
      const { status, body } = await call(token, 'POST', path, { build_type: 'legacy', source: { branch, path: '/' } })
      if (status === 409) return undefined
      if (status !== 201) throw unexpected(`POST ${path}`, status, body)
      return pagesSiteFrom(body)
    },

    /**
     * Opens a pull request of `head` into `base` (branches of this repository): its number and address, or
     * `exists` when an open one already has that head (GitHub's 422 saying so).
     */
    async openPullRequest(
      token: string,
      owner: string,
      name: string,
      pull: { head: string; base: string; title: string; body: string; draft?: boolean },
    ): Promise<{ number: number; url: string } | 'exists'> {
      const path = `${repoPath(owner, name)}/pulls`
      const { status, body } = await call(token, 'POST', path, pull)
      if (status === 201 && typeof body.number === 'number' && httpUrl(body.html_url)) return { number: body.number, url: httpUrl(body.html_url)! }
      const errors = Array.isArray(body.errors) ? body.errors.map(record) : []
      if (status === 422 && errors.some((e) => typeof e.message === 'string' && e.message.startsWith('A pull request already exists'))) return 'exists'
      throw unexpected(`POST ${path}`, status, body)
    },

    /** Points the Pages site at the root of `branch`, with `cname` (null removes the custom domain). */
    async updatePages(token: string, owner: string, name: string, site: { branch: string; cname: string | null }): Promise<void> {
      const path = `${repoPath(owner, name)}/pages`
      const { status, body } = await call(token, 'PUT', path, { build_type: 'legacy', cname: site.cname, source: { branch: site.branch, path: '/' } })
      if (status !== 204 && status !== 200) throw unexpected(`PUT ${path}`, status, body)
    },
  }
}

export type PagesApi = ReturnType<typeof createPagesApi>
