/**
 * Publishing a site to GitHub Pages: everything about the input is checked first (`prepare`), then
 * `run` makes sure the repository exists, commits the site on the branch's tip, pushes it and switches
 * Pages on for the branch. A publish that fails after the push says so (`pushed: true`); it is never
 * answered as a success.
 */
import { AppError } from '../../src/errors.ts'
import type { HttpClient } from '../../src/http.ts'
import type { Logger } from '../../src/log.ts'
import type { UsageMeter } from '../../src/usage/meter.ts'
import { openWorkspace, type CommitAuthor, type FileChange, type Remote } from './git-commit.ts'
import { createGitHttp } from './git-http.ts'
import { DEFAULT_BRANCH, DEFAULT_MESSAGE, type ProgressEvent, type PublishAnswer, type PublishBody } from './schemas.ts'
import { CONNECT_ROUTE, createPagesApi, type PagesApi, type Repository } from './pages-api.ts'
import { buildSite, type InlineFile, type ReadFile, type SiteFile, type SiteLimits, type SiteOptions } from './site-validation.ts'
import { normaliseDirectory, type ImportService } from '../imports/index.ts'
import { branchProblem } from '../../src/branch-names.ts'
import { parseTarget, publicUrl, repositoryProblem, type PublishTarget } from './target.ts'
import type { HttpClient as GitHttpClient } from 'isomorphic-git'
import type { Caller } from '../../src/auth/caller.ts'

export interface PublisherOptions {
  /** Where the user's GitHub token comes from. */
  integrations: { tokenFor(userId: string, provider: string): Promise<string | undefined> }
  meter: Pick<UsageMeter, 'record'>
  logger: Logger
  /** Where a site given as `source` (an import and a directory) is read from. */
  imports?: Pick<ImportService, 'readFiles'>
  /** Client of the REST API calls (GITHUB_API_URL). */
  http: HttpClient
  apiUrl: string
  /** Base of the git remotes: `<gitUrl>/<owner>/<name>.git` (CODEHOST_GIT_URL, default https://github.com). */
  gitUrl: string
  limits: SiteLimits
  /** Longest wait for each git HTTP request. Default 60000 (PUBLISH_GIT_TIMEOUT_MS). */
  gitTimeoutMs?: number
  /** Replaces the git HTTP client (tests). */
  gitHttp?: GitHttpClient
}

export type { Caller, FileChange }

/** A change to a repository on the code host, proposed as a new branch and a pull request. */
export interface ChangeProposal {
  /** The git URL the files came from (an import's repository); it must be on CODEHOST_GIT_URL. */
  repositoryUrl: string
  /** The branch the base commit was taken from; null for the repository's default branch. */
  baseBranch: string | null
  baseCommit: string
  /** The new branch; a push to an existing one is refused unless it fast-forwards. */
  branch: string
  changes: readonly FileChange[]
  message: string
  title: string
  body: string
  /** Opens the pull request as a draft. Default false. */
  draft?: boolean
}

export interface ProposedChange {
  repository: string
  branch: string
  /** The pushed commit, whose parent is the base commit. */
  commit: string
  base: { branch: string; commit: string }
  pullRequest: { number: number; url: string }
}

/** Receives each step as it is done; a returned promise is waited for before the next step. */
export type ProgressListener = (event: ProgressEvent) => void | Promise<void>

export interface PublishJob {
  readonly target: PublishTarget
  run(onProgress?: ProgressListener): Promise<PublishAnswer>
}

/** The size of branch a fetch may bring back: the branch holds at least the previous site. */
const fetchCap = (limits: SiteLimits) => Math.max(64 * 1024 * 1024, 4 * limits.maxBytes)

export function createPublisher(options: PublisherOptions) {
  const { integrations, meter, logger } = options
  const api: PagesApi = createPagesApi({ http: options.http, apiUrl: options.apiUrl })
  const gitHttp = options.gitHttp ?? createGitHttp({ timeoutMs: options.gitTimeoutMs ?? 60_000, maxResponseBytes: fetchCap(options.limits) })
  // Publishes to one branch run one after the other in this process, so they never race each other.
  const queues = new Map<string, Promise<unknown>>()

  function serialised<T>(key: string, work: () => Promise<T>): Promise<T> {
    const previous = queues.get(key) ?? Promise.resolve()
    const next = previous.catch(() => {}).then(work)
    const tail = next.catch(() => {})
    queues.set(key, tail)
    void tail.then(() => {
      if (queues.get(key) === tail) queues.delete(key)
    })
    return next
  }

  /** The repository, created on the token's account when it is missing and the owner is that account. */
  async function ensureRepository(
    token: string,
    target: PublishTarget,
    login: string,
    makePrivate: boolean,
  ): Promise<{ repository: Repository; created: boolean }> {
    const existing = await api.repository(token, target.owner, target.name)
    if (existing) return { repository: existing, created: false }
    if (target.owner.toLowerCase() !== login.toLowerCase())
      throw new AppError(
        'repository_not_found',
        `GitHub has no repository ${target.owner}/${target.name} the connected account (${login}) can see; repositories are only created on that account`,
        {
          extensions: { repository: `${target.owner}/${target.name}`, account: login },
        },
      )
    const created = await api.createRepository(token, target.name, { private: makePrivate, description: 'Published site' })
    if (created) return { repository: created, created: true }
    // 422: the name was taken in between (another publish); use what is there now.
    const raced = await api.repository(token, target.owner, target.name)
    if (!raced)
      throw new AppError('upstream_error', `GitHub refused to create ${target.owner}/${target.name} and does not show it either`, {
        extensions: { provider: 'github' },
      })
    return { repository: raced, created: false }
  }

  /**
   * Pages on for the branch's root, with the site's custom domain (or none), and where GitHub says the
   * site is served (PUT answers no body, so the site is read again after an update).
   */
  async function ensurePages(token: string, target: PublishTarget): Promise<{ pages: PublishAnswer['pages']; htmlUrl: string | undefined }> {
    const cname = target.customDomain ?? null
    const site = await api.pagesSite(token, target.owner, target.name)
    const update = async (pages: PublishAnswer['pages']) => {
      await api.updatePages(token, target.owner, target.name, { branch: target.branch, cname })
      return { pages, htmlUrl: (await api.pagesSite(token, target.owner, target.name))?.htmlUrl }
    }
    if (!site) {
      const enabled = await api.enablePages(token, target.owner, target.name, target.branch)
      if (enabled && !cname) return { pages: 'enabled', htmlUrl: enabled.htmlUrl }
      // The custom domain is set by an update; so is a site someone enabled in between (409).
      return update(enabled ? 'enabled' : 'updated')
    }
    if (site.branch === target.branch && site.path === '/' && site.cname === cname && site.buildType !== 'workflow')
      return { pages: 'unchanged', htmlUrl: site.htmlUrl }
    return update('updated')
  }

  async function publish(
    caller: Caller,
    token: string,
    target: PublishTarget,
    site: SiteFile[],
    body: PublishBody,
    progress: ProgressListener,
  ): Promise<PublishAnswer> {
    const repository = `${target.owner}/${target.name}`
    const viewer = await api.viewer(token)
    const { repository: repo, created } = await ensureRepository(token, target, viewer.login, body.private ?? false)
    if (repo.permissions && !repo.permissions.push)
      throw new AppError('codehost_forbidden', `The connected account (${viewer.login}) cannot push to ${repository}`, {
        extensions: { repository, account: viewer.login },
      })
    await progress({ stage: 'repository', repository, created })

    const remote: Remote = { url: `${options.gitUrl}/${target.owner}/${target.name}.git`, token, repository }
    const author: CommitAuthor = { name: viewer.login, email: `${viewer.id ? `${viewer.id}+` : ''}${viewer.login}@users.noreply.github.com` }
    const workspace = await openWorkspace(gitHttp)
    let previous: { commit: string; tree: string } | undefined
    let commit: { commit: string; unchanged: boolean }
    try {
      previous = await workspace.fetchPrevious(remote, target.branch)
      await progress({ stage: 'fetched', previousCommit: previous?.commit ?? null })
      commit = await workspace.commitSite(site, { parent: previous, message: body.message ?? DEFAULT_MESSAGE, author })
      await progress({ stage: 'committed', commit: commit.commit, unchanged: commit.unchanged })
      if (!commit.unchanged) {
        await workspace.push(remote, target.branch, commit.commit)
        await progress({ stage: 'pushed', commit: commit.commit })
      }
    } finally {
      await workspace.remove().catch((err) => logger.warn('publish workspace not removed', { err, gitdir: workspace.gitdir }))
    }

    let pages: PublishAnswer['pages']
    let htmlUrl: string | undefined
    try {
      ;({ pages, htmlUrl } = await ensurePages(token, target))
    } catch (error) {
      if (!(error instanceof AppError)) throw error
      // The branch holds the site, but it is not served as asked: an error, with what did happen.
      throw new AppError(error.code, `${repository}@${target.branch} holds commit ${commit.commit}, but GitHub Pages could not be set up: ${error.message}`, {
        ...error.options,
        extensions: { ...error.options.extensions, repository, commit: commit.commit, pushed: !commit.unchanged },
      })
    }
    // GitHub's own address (an account's custom domain moves every project site); built only when it gives none.
    const url = htmlUrl ?? publicUrl(target)
    await progress({ stage: 'pages', pages, url })

    meter.record({ orgId: caller.orgId, userId: caller.userId, kind: 'publish' })
    logger.info('site published', { repository, branch: target.branch, commit: commit.commit, unchanged: commit.unchanged, pages, userId: caller.userId })
    return {
      repository,
      branch: target.branch,
      commit: commit.commit,
      previousCommit: previous?.commit ?? null,
      unchanged: commit.unchanged,
      url,
      repositoryCreated: created,
      pages,
      files: site.length,
      bytes: site.reduce((sum, file) => sum + file.bytes.byteLength, 0),
    }
  }

  function onlyOneSource(body: PublishBody): void {
    if ((body.files === undefined) === (body.source === undefined)) {
      const message = body.files === undefined ? 'give the site as files or as source' : 'give files or source, not both'
      throw new AppError('validation_failed', `files: ${message}`, {
        errors: [
          { field: 'files', message },
          { field: 'source', message },
        ],
      })
    }
  }

  /** The checked site, from the inline files or from an import's directory. */
  async function siteOf(caller: Caller, body: PublishBody, site: SiteOptions): Promise<SiteFile[]> {
    onlyOneSource(body)
    if (body.files) return buildSite(body.files, options.limits, site)
    const source = body.source!
    const directory = normaliseDirectory('source.directory', source.directory ?? '')
    const read = options.imports && (await options.imports.readFiles(caller.orgId, source.importId, { directory, ...options.limits }))
    if (!read)
      throw new AppError('not_found', `source.importId: no import ${source.importId} in this organisation`, {
        errors: [{ field: 'source.importId', message: 'no such import in this organisation' }],
      })
    const where = `${source.importId}:${directory || '/'}`
    if (read.exceeded === 'files')
      throw new AppError('site_too_large', `${where} holds more than ${options.limits.maxFiles} files; at most ${options.limits.maxFiles} can be published`, {
        extensions: { maxFiles: options.limits.maxFiles },
      })
    if (read.exceeded === 'bytes')
      throw new AppError('site_too_large', `${where} holds more than ${options.limits.maxBytes} bytes; at most ${options.limits.maxBytes} can be published`, {
        extensions: { maxBytes: options.limits.maxBytes },
      })
    if (read.files.length === 0)
      throw new AppError('invalid_site', `${where} holds no files at commit ${read.commit}`, {
        errors: [{ field: 'source.directory', message: 'holds no files' }],
      })
    const files: (InlineFile | ReadFile)[] = read.files
    return buildSite(files, options.limits, { ...site, fieldOf: (_, path) => `source(${path})`, siteField: 'source.directory' })
  }

  /** owner/name of a git URL on the code host, or undefined for another host. */
  function codeHostRepository(url: string): { owner: string; name: string } | undefined {
    const prefix = `${options.gitUrl.replace(/\/+$/, '')}/`
    if (!url.startsWith(prefix)) return undefined
    const parts = url
      .slice(prefix.length)
      .replace(/\/+$/, '')
      .replace(/\.git$/, '')
      .split('/')
    if (parts.length !== 2 || repositoryProblem(parts.join('/'))) return undefined
    return { owner: parts[0]!, name: parts[1]! }
  }

  /** Where a proposal goes and with which token; refused as the request's fault or the connection's. */
  async function proposalTarget(caller: Caller, proposal: Pick<ChangeProposal, 'repositoryUrl' | 'branch'>) {
    const where = codeHostRepository(proposal.repositoryUrl)
    if (!where)
      throw new AppError(
        'validation_failed',
        `${proposal.repositoryUrl} is not a repository on the code host (${options.gitUrl}); only those can get a pull request`,
        {
          errors: [{ field: 'push', message: 'the repository is not on the code host' }],
        },
      )
    const problem = branchProblem(proposal.branch)
    if (problem) throw new AppError('validation_failed', `branch: ${problem}`, { errors: [{ field: 'branch', message: problem }] })
    const token = await integrations.tokenFor(caller.userId, 'github')
    if (!token)
      throw new AppError('codehost_not_connected', `Connect GitHub first: ${CONNECT_ROUTE} starts the connection`, {
        extensions: { provider: 'github', connect: CONNECT_ROUTE },
      })
    const repository = `${where.owner}/${where.name}`
    const remote: Remote = { url: `${options.gitUrl}/${where.owner}/${where.name}.git`, token, repository }
    return { where, token, repository, remote }
  }

  const branchExists = (repository: string, branch: string) =>
    new AppError('branch_exists', `${repository} has a branch ${branch} already; a change is proposed on a new branch, so name another one`, {
      extensions: { repository, branch },
    })

  /** Refuses with `branch_exists` when the repository has the branch already: asked before any work is done. */
  async function ensureBranchFree(caller: Caller, proposal: Pick<ChangeProposal, 'repositoryUrl' | 'branch'>): Promise<void> {
    const { remote, repository } = await proposalTarget(caller, proposal)
    const workspace = await openWorkspace(gitHttp)
    try {
      if (await workspace.hasBranch(remote, proposal.branch)) throw branchExists(repository, proposal.branch)
    } finally {
      await workspace.remove().catch((err) => logger.warn('proposal workspace not removed', { err, gitdir: workspace.gitdir }))
    }
  }

  async function proposeChange(caller: Caller, proposal: ChangeProposal): Promise<ProposedChange> {
    const { where, token, repository, remote } = await proposalTarget(caller, proposal)
    const viewer = await api.viewer(token)
    const author: CommitAuthor = { name: viewer.login, email: `${viewer.id ? `${viewer.id}+` : ''}${viewer.login}@users.noreply.github.com` }
    const workspace = await openWorkspace(gitHttp)
    let commit: string
    let baseBranch: string
    try {
      // Made since the task began: still never overwritten, and said as such.
      if (await workspace.hasBranch(remote, proposal.branch)) throw branchExists(repository, proposal.branch)
      const base = await workspace.fetchCommit(remote, proposal.baseBranch, proposal.baseCommit)
      if (!base)
        throw new AppError(
          'conflict',
          `${repository} no longer reaches commit ${proposal.baseCommit} from ${proposal.baseBranch ?? 'its default branch'}; import it again`,
          {
            extensions: { repository, commit: proposal.baseCommit },
          },
        )
      baseBranch = proposal.baseBranch ?? base.branch
      commit = await workspace.commitChanges(proposal.baseCommit, proposal.changes, { message: proposal.message, author })
      await workspace.push(remote, proposal.branch, commit)
    } finally {
      await workspace.remove().catch((err) => logger.warn('proposal workspace not removed', { err, gitdir: workspace.gitdir }))
    }
    const opened = await api.openPullRequest(token, where.owner, where.name, {
      head: proposal.branch,
      base: baseBranch,
      title: proposal.title,
      body: proposal.body,
      draft: proposal.draft === true,
    })
    if (opened === 'exists')
      throw new AppError('conflict', `${repository}@${proposal.branch} holds commit ${commit}, but a pull request from that branch is already open`, {
        extensions: { repository, branch: proposal.branch, commit },
      })
    logger.info('change proposed', { repository, branch: proposal.branch, commit, pullRequest: opened.number, userId: caller.userId })
    return { repository, branch: proposal.branch, commit, base: { branch: baseBranch, commit: proposal.baseCommit }, pullRequest: opened }
  }

  return {
    proposeChange,
    ensureBranchFree,

    /**
     * Checks the request and the connection without calling GitHub: 422 `validation_failed` or
     * `invalid_site`, 413 `site_too_large`, 409 `codehost_not_connected`.
     */
    async prepare(caller: Caller, body: PublishBody): Promise<PublishJob> {
      const target = parseTarget(body, DEFAULT_BRANCH)
      const site = await siteOf(caller, body, { requireIndex: body.requireIndex, customDomain: target.customDomain })
      const token = await integrations.tokenFor(caller.userId, 'github')
      if (!token)
        throw new AppError('codehost_not_connected', `Connect GitHub first: ${CONNECT_ROUTE} starts the connection`, {
          extensions: { provider: 'github', connect: CONNECT_ROUTE },
        })
      const bytes = site.reduce((sum, file) => sum + file.bytes.byteLength, 0)
      return {
        target,
        run: async (onProgress = () => {}) => {
          await onProgress({ stage: 'accepted', repository: `${target.owner}/${target.name}`, branch: target.branch, files: site.length, bytes })
          const key = `${target.owner.toLowerCase()}/${target.name.toLowerCase()}\u0000${target.branch}`
          return serialised(key, () => publish(caller, token, target, site, body, onProgress))
        },
      }
    },
  }
}

export type Publisher = ReturnType<typeof createPublisher>
