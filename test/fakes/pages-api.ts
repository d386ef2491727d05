/**
 * A fake of the GitHub REST endpoints pages publishing calls, with GitHub's paths, bodies and refusals:
 *
 * - GET /user (+ X-OAuth-Scopes)
 * - GET /repos/{owner}/{repo} (with `permissions` for the caller; a private repository the caller
 *   cannot see is 404, as on GitHub)
 * - POST /user/repos (201; 422 when the name exists on the account)
 * - GET /repos/{owner}/{repo}/pages (404 until enabled), POST (201; 409 when already enabled; 422 when
 *   the branch does not exist), PUT (204; cname and source) — writes need admin rights (403). The
 *   site's `html_url` is where GitHub serves it: the repository's custom domain, else the owner's
 *   (`pagesDomains`: a custom domain on `<owner>.github.io` moves project sites under it), else
 *   `<owner>.github.io`, at the root for the user site and under /<name>/ for a project site.
 * - POST /repos/{owner}/{repo}/pulls (201 with `number`, `html_url`; 422 "Validation Failed" when a
 *   branch is missing or an open pull request already exists for the head) — needs push rights (403)
 *
 * Every call needs `Authorization: Bearer <token>` (or `token <token>`) that `accountOf` knows; anything
 * else is 401 "Bad credentials". Tests steer it: repositories and who may do what, one-off failures.
 */
import { startFakeServer, type FakeServer } from './server.ts'

export interface FakeGitHubAccount {
  login: string
  id: number
  scopes?: string[]
}

export type FakeAccess = 'admin' | 'push' | 'pull'

export interface FakePagesSite {
  branch: string
  path: string
  cname: string | null
  buildType: 'legacy' | 'workflow'
}

export interface FakePullRequest {
  number: number
  title: string
  body: string | null
  /** Branch name, without the owner. */
  head: string
  base: string
  htmlUrl: string
  /** Who opened it. */
  user: string
  draft: boolean
}

export interface FakeRepository {
  owner: string
  name: string
  private: boolean
  /** Access of accounts other than the owner, by login. */
  access: Record<string, FakeAccess>
  pages: FakePagesSite | undefined
  pulls: FakePullRequest[]
}

export interface FakePagesApiOptions {
  /** The account a token belongs to; undefined is a token GitHub would refuse. */
  accountOf(token: string): FakeGitHubAccount | undefined
  /** Called after POST /user/repos creates a repository (tests create its git side here). */
  onCreate?(repository: FakeRepository): void
  /** Whether the repository has the branch; Pages cannot be enabled for a missing one. Default: always. */
  branchExists?(repository: FakeRepository, branch: string): boolean
}

export interface FakePagesApi extends FakeServer {
  /** By lower-cased `owner/name`. */
  readonly repositories: Map<string, FakeRepository>
  /** An account's custom Pages domain, by lower-cased login. */
  readonly pagesDomains: Map<string, string>
  /** Pages answers leave `html_url` out (as older GitHub Enterprise servers do). */
  omitHtmlUrl: boolean
  addRepository(owner: string, name: string, options?: Partial<Pick<FakeRepository, 'private' | 'access' | 'pages'>>): FakeRepository
  repository(owner: string, name: string): FakeRepository | undefined
  /** The next `count` calls of `method` to a path matching `path` answer `status`. */
  fail(method: string, path: RegExp, status: number, count?: number): void
  /** Successful Pages writes: POST (enable) and PUT (update). */
  readonly pagesEnabled: number
  readonly pagesUpdated: number
  readonly repositoriesCreated: number
}

const json = (body: unknown, status = 200, headers: Record<string, string> = {}) =>
  new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json; charset=utf-8', ...headers } })

const DOCS = 'https://docs.github.com/rest'
const message = (text: string, status: number) => json({ message: text, documentation_url: DOCS, status: String(status) }, status)

const key = (owner: string, name: string) => `${owner}/${name}`.toLowerCase()

export function startFakePagesApi(options: FakePagesApiOptions): FakePagesApi {
  const repositories = new Map<string, FakeRepository>()
  const failures: { method: string; path: RegExp; status: number; remaining: number }[] = []
  const counts = { pagesEnabled: 0, pagesUpdated: 0, repositoriesCreated: 0 }
  const pagesDomains = new Map<string, string>()
  const state = { omitHtmlUrl: false }

  function htmlUrlOf(r: FakeRepository, site: FakePagesSite): string {
    if (site.cname) return `https://${site.cname}/`
    const userSite = `${r.owner.toLowerCase()}.github.io`
    const host = pagesDomains.get(r.owner.toLowerCase()) ?? userSite
    return r.name.toLowerCase() === userSite ? `https://${host}/` : `https://${host}/${r.name}/`
  }

  function addRepository(owner: string, name: string, extra: Partial<Pick<FakeRepository, 'private' | 'access' | 'pages'>> = {}): FakeRepository {
    const repository: FakeRepository = { owner, name, private: extra.private ?? false, access: extra.access ?? {}, pages: extra.pages, pulls: [] }
    repositories.set(key(owner, name), repository)
    return repository
  }

  function accessOf(repository: FakeRepository, login: string): FakeAccess | undefined {
    if (repository.owner.toLowerCase() === login.toLowerCase()) return 'admin'
    return repository.access[login] ?? (repository.private ? undefined : 'pull')
  }

  const repositoryBody = (r: FakeRepository, access: FakeAccess) => ({
    id: 1000 + [...repositories.values()].indexOf(r),
    name: r.name,
    full_name: `${r.owner}/${r.name}`,
    private: r.private,
    owner: { login: r.owner, type: 'User' },
    html_url: `https://github.com/${r.owner}/${r.name}`,
    default_branch: 'main',
    has_pages: r.pages !== undefined,
    permissions: { admin: access === 'admin', maintain: access === 'admin', push: access !== 'pull', triage: access !== 'pull', pull: true },
  })

  const pagesBody = (r: FakeRepository, site: FakePagesSite) => ({
    url: `http://api.github.invalid/repos/${r.owner}/${r.name}/pages`,
    status: 'built',
    cname: site.cname,
    custom_404: false,
    ...(state.omitHtmlUrl ? {} : { html_url: htmlUrlOf(r, site) }),
    build_type: site.buildType,
    source: { branch: site.branch, path: site.path },
    public: !r.private,
    https_enforced: true,
  })

  const invalid = (errors: Record<string, string>[]) =>
    json({ message: 'Validation Failed', errors, documentation_url: `${DOCS}/pulls/pulls#create-a-pull-request`, status: '422' }, 422)

  function openPull(r: FakeRepository, access: FakeAccess, login: string, body: Record<string, any> | undefined): Response {
    if (access === 'pull') return message('Resource not accessible by integration', 403)
    const title = body?.title
    const rawHead = body?.head
    const base = body?.base
    if (typeof title !== 'string' || !title) return invalid([{ resource: 'PullRequest', field: 'title', code: 'missing_field' }])
    if (typeof rawHead !== 'string' || typeof base !== 'string')
      return invalid([{ resource: 'PullRequest', field: typeof base === 'string' ? 'head' : 'base', code: 'missing_field' }])
    // `owner:branch` or, within the repository, just the branch.
    const colon = rawHead.indexOf(':')
    const head = colon < 0 ? rawHead : rawHead.slice(colon + 1)
    if (colon >= 0 && rawHead.slice(0, colon).toLowerCase() !== r.owner.toLowerCase())
      return invalid([{ resource: 'PullRequest', field: 'head', code: 'invalid' }])
    const exists = (branch: string) => !options.branchExists || options.branchExists(r, branch)
    if (!exists(base)) return invalid([{ resource: 'PullRequest', field: 'base', code: 'invalid' }])
    if (!exists(head)) return invalid([{ resource: 'PullRequest', field: 'head', code: 'invalid' }])
    if (r.pulls.some((p) => p.head === head && p.base === base))
      return invalid([{ resource: 'PullRequest', code: 'custom', message: `A pull request already exists for ${r.owner}:${head}.` }])
    const number = r.pulls.length + 1
    const pull: FakePullRequest = {
      number,
      title,
      body: typeof body?.body === 'string' ? body.body : null,
      head,
      base,
      htmlUrl: `https://github.com/${r.owner}/${r.name}/pull/${number}`,
      user: login,
      draft: body?.draft === true,
    }
    r.pulls.push(pull)
    return json(
      {
        url: `http://api.github.invalid/repos/${r.owner}/${r.name}/pulls/${number}`,
        id: 5000 + number,
        number,
        state: 'open',
        html_url: pull.htmlUrl,
        title: pull.title,
        body: pull.body,
        draft: pull.draft,
        user: { login },
        head: { label: `${r.owner}:${head}`, ref: head },
        base: { label: `${r.owner}:${base}`, ref: base },
      },
      201,
    )
  }

  async function readJson(request: Request): Promise<Record<string, any> | undefined> {
    try {
      const body = await request.json()
      return body && typeof body === 'object' ? (body as Record<string, any>) : undefined
    } catch {
      return undefined
    }
  }

  const server = startFakeServer(async (request, recorded) => {
    const method = request.method
    const path = recorded.path.split('?')[0]!
    const failure = failures.find((f) => f.remaining > 0 && f.method === method && f.path.test(path))
    if (failure) {
      failure.remaining--
      return message(`Injected failure ${failure.status}`, failure.status)
    }
    const header = request.headers.get('authorization') ?? ''
    const token = /^(?:Bearer|token) (.+)$/i.exec(header)?.[1]
    const account = token ? options.accountOf(token) : undefined
    if (!account) return message('Bad credentials', 401)

    if (method === 'GET' && path === '/user')
      return json({ login: account.login, id: account.id, name: account.login, type: 'User', html_url: `https://github.com/${account.login}` }, 200, {
        'x-oauth-scopes': (account.scopes ?? ['repo', 'read:user']).join(', '),
      })

    if (method === 'POST' && path === '/user/repos') {
      const body = await readJson(request)
      const name = body?.name
      if (typeof name !== 'string' || !/^[A-Za-z0-9._-]{1,100}$/.test(name)) return message('Repository creation failed: invalid name', 422)
      if (repositories.has(key(account.login, name))) return message('Repository creation failed: name already exists on this account', 422)
      const repository = addRepository(account.login, name, { private: body?.private === true })
      counts.repositoriesCreated++
      options.onCreate?.(repository)
      return json(repositoryBody(repository, 'admin'), 201)
    }

    const match = /^\/repos\/([^/]+)\/([^/]+)(\/pages|\/pulls)?$/.exec(path)
    const repository = match ? repositories.get(key(decodeURIComponent(match[1]!), decodeURIComponent(match[2]!))) : undefined
    const access = repository && accessOf(repository, account.login)
    if (!match) return message('Not Found', 404)
    if (!repository || !access) return message('Not Found', 404)
    if (!match[3]) return method === 'GET' ? json(repositoryBody(repository, access)) : message('Not Found', 404)
    if (match[3] === '/pulls') return method === 'POST' ? openPull(repository, access, account.login, await readJson(request)) : message('Not Found', 404)

    if (method === 'GET') return repository.pages ? json(pagesBody(repository, repository.pages)) : message('Not Found', 404)
    if (access !== 'admin') return message('Must have admin rights to Repository.', 403)
    const body = await readJson(request)
    const source = body?.source as { branch?: unknown; path?: unknown } | undefined
    const branch = typeof source?.branch === 'string' ? source.branch : undefined
    const sourcePath = source?.path === undefined ? '/' : source.path
    if (sourcePath !== '/' && sourcePath !== '/docs') return message('Invalid source path', 422)

    if (method === 'POST') {
      if (repository.pages) return message('GitHub Pages is already enabled.', 409)
      if (!branch) return message('Invalid request: source.branch is required', 422)
      if (options.branchExists && !options.branchExists(repository, branch))
        return message(`The ${branch} branch must exist before GitHub Pages can be built.`, 422)
      repository.pages = { branch, path: sourcePath, cname: null, buildType: body?.build_type === 'workflow' ? 'workflow' : 'legacy' }
      counts.pagesEnabled++
      return json(pagesBody(repository, repository.pages), 201)
    }
    if (method === 'PUT') {
      if (!repository.pages) return message('Not Found', 404)
      const cname = body?.cname
      if (cname !== undefined && cname !== null && (typeof cname !== 'string' || !/^[a-z0-9.-]+\.[a-z]+$/i.test(cname))) return message('Invalid cname', 422)
      if (branch && options.branchExists && !options.branchExists(repository, branch)) return message(`The ${branch} branch must exist.`, 422)
      repository.pages = {
        branch: branch ?? repository.pages.branch,
        path: source ? sourcePath : repository.pages.path,
        cname: cname === undefined ? repository.pages.cname : cname,
        buildType: body?.build_type === 'workflow' ? 'workflow' : body?.build_type === 'legacy' ? 'legacy' : repository.pages.buildType,
      }
      counts.pagesUpdated++
      return new Response(null, { status: 204 })
    }
    return message('Not Found', 404)
  })

  return {
    ...server,
    repositories,
    pagesDomains,
    get omitHtmlUrl() {
      return state.omitHtmlUrl
    },
    set omitHtmlUrl(value: boolean) {
      state.omitHtmlUrl = value
    },
    addRepository,
    repository: (owner, name) => repositories.get(key(owner, name)),
    fail(method, path, status, count = 1) {
      failures.push({ method, path, status, remaining: count })
    },
    get pagesEnabled() {
      return counts.pagesEnabled
    },
    get pagesUpdated() {
      return counts.pagesUpdated
    },
    get repositoriesCreated() {
      return counts.repositoriesCreated
    },
  }
}
