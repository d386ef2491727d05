/**
 * The site as one git commit, with isomorphic-git in a throwaway bare repository: fetch the branch's
 * tip (depth 1) so the new commit has it as parent, write the site as a whole new tree, and push
 * without force, so a branch that moved since the fetch is refused rather than overwritten.
 */
import * as fs from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Errors, HttpClient, TreeEntry } from 'isomorphic-git'
import { AppError } from '../../src/errors.ts'
import { lazily } from '../../src/lazy.ts'
import { ResponseTooLargeError, watchFailures } from './git-http.ts'
import type { SiteFile } from './site-validation.ts'

export interface Remote {
  /** `<CODEHOST_GIT_URL>/<owner>/<name>.git` */
  url: string
  token: string
  /** `owner/name`, for messages. */
  repository: string
}

export interface CommitAuthor {
  name: string
  email: string
}

export interface Workspace {
  readonly gitdir: string
  /** Whether the remote has a branch `branch`, asked without fetching anything. */
  hasBranch(remote: Remote, branch: string): Promise<boolean>
  /** The branch tip fetched, or undefined when the branch does not exist yet. */
  fetchPrevious(remote: Remote, branch: string): Promise<{ commit: string; tree: string } | undefined>
  /** Writes the site as a tree and, unless that tree is the parent's, a commit on top of `parent`. */
  commitSite(
    site: readonly SiteFile[],
    options: { parent?: { commit: string; tree: string }; message: string; author: CommitAuthor },
  ): Promise<{ commit: string; tree: string; unchanged: boolean }>
  push(remote: Remote, branch: string, commit: string): Promise<void>
  /**
   * Fetches `commit` from `branch` (its tip, or within the branch's recent history) and the name of the
   * remote's default branch; undefined when the branch no longer reaches the commit.
   */
  fetchCommit(remote: Remote, branch: string | null, commit: string): Promise<{ branch: string; tree: string } | undefined>
  /** A commit on `parent` whose tree is the parent's with `changes` (null content deletes the file); file modes are kept. */
  commitChanges(parent: string, changes: readonly FileChange[], options: { message: string; author: CommitAuthor }): Promise<string>
  remove(): Promise<void>
}

export interface FileChange {
  path: string
  /** The new content, or null when the file is deleted. */
  bytes: Uint8Array | null
}

/** How deep a fetch looks for a base commit behind the branch tip. */
const BASE_SEARCH_DEPTH = 200

const FILE_MODE = '100644'
const TREE_MODE = '040000'

const REMOTE = 'origin'

// Loaded with the first publish, not at start-up.
const isomorphicGit = lazily(() => import('isomorphic-git'))

const onAuthWith = (token: string) => () => ({ username: 'x-access-token', password: token })

/** A fresh bare repository in the system temp directory. */
export async function openWorkspace(client: HttpClient): Promise<Workspace> {
  const { http, takeFailure } = watchFailures(client)
  const git = await isomorphicGit()
  const gitdir = await mkdtemp(join(tmpdir(), 'pages-publish-'))
  await git.init({ fs, gitdir, bare: true, defaultBranch: 'main' }).catch(async (error: unknown) => {
    await rm(gitdir, { recursive: true, force: true })
    throw error
  })

  /** Runs a git operation, turning what the provider answered (or how the transport failed) into the service's errors. */
  async function gitCall<T>(remote: Remote, access: 'read' | 'write', operation: () => Promise<T>): Promise<T> {
    takeFailure()
    try {
      return await operation()
    } catch (error) {
      throw gitError(git.Errors, takeFailure() ?? error, remote, access)
    }
  }

  /** Writes `files` (paths relative to this directory) as nested trees; answers the root tree id. */
  async function writeTree(files: readonly { path: string; oid: string; mode?: string; type?: TreeEntry['type'] }[]): Promise<string> {
    const blobs: TreeEntry[] = []
    const children = new Map<string, { path: string; oid: string; mode?: string; type?: TreeEntry['type'] }[]>()
    for (const file of files) {
      const slash = file.path.indexOf('/')
      if (slash < 0) blobs.push({ mode: file.mode ?? FILE_MODE, path: file.path, oid: file.oid, type: file.type ?? 'blob' })
      else {
        const name = file.path.slice(0, slash)
        const list = children.get(name) ?? []
        list.push({ ...file, path: file.path.slice(slash + 1) })
        children.set(name, list)
      }
    }
    const trees: TreeEntry[] = []
    for (const [name, list] of children) trees.push({ mode: TREE_MODE, path: name, oid: await writeTree(list), type: 'tree' })
    return git.writeTree({ fs, gitdir, tree: [...blobs, ...trees] })
  }

  return {
    gitdir,

    async hasBranch(remote, branch) {
      // getRemoteInfo2 lists refs flat: getRemoteInfo nests them by `/`, so `fix/sum` is not a key there.
      const info = await gitCall(remote, 'read', () => git.getRemoteInfo2({ http, url: remote.url, onAuth: onAuthWith(remote.token), protocolVersion: 1 }))
      return (info.refs ?? []).some((ref) => ref.ref === `refs/heads/${branch}`)
    },

    async fetchPrevious(remote, branch) {
      const onAuth = onAuthWith(remote.token)
      const info = await gitCall(remote, 'read', () => git.getRemoteInfo({ http, url: remote.url, onAuth }))
      if (!info.refs?.heads?.[branch]) return undefined
      // fetch records the tip under refs/remotes/<remote>/, which needs a configured remote.
      await git.addRemote({ fs, gitdir, remote: REMOTE, url: remote.url, force: true })
      const fetched = await gitCall(remote, 'read', () =>
        git.fetch({ fs, http, gitdir, remote: REMOTE, ref: branch, remoteRef: branch, singleBranch: true, depth: 1, tags: false, onAuth }),
      )
      const commit = fetched.fetchHead
      if (!commit) return undefined
      const { commit: parsed } = await git.readCommit({ fs, gitdir, oid: commit })
      return { commit, tree: parsed.tree }
    },

    async commitSite(site, { parent, message, author }) {
      const written: { path: string; oid: string }[] = []
      for (const file of site) written.push({ path: file.path, oid: await git.writeBlob({ fs, gitdir, blob: file.bytes }) })
      const tree = await writeTree(written)
      // Same tree as the branch tip: a new commit would change nothing but the history.
      if (parent && parent.tree === tree) return { commit: parent.commit, tree, unchanged: true }
      const commit = await git.commit({ fs, gitdir, message, author, committer: author, tree, parent: parent ? [parent.commit] : [], noUpdateBranch: true })
      return { commit, tree, unchanged: false }
    },

    async push(remote, branch, commit) {
      const ref = `refs/heads/${branch}`
      await git.writeRef({ fs, gitdir, ref, value: commit, force: true })
      await gitCall(remote, 'write', () => git.push({ fs, http, gitdir, url: remote.url, ref, remoteRef: ref, onAuth: onAuthWith(remote.token) }))
    },

    async fetchCommit(remote, branch, commit) {
      const onAuth = onAuthWith(remote.token)
      const info = await gitCall(remote, 'read', () => git.getRemoteInfo({ http, url: remote.url, onAuth }))
      const head = typeof info.HEAD === 'string' ? info.HEAD.replace(/^refs\/heads\//, '') : undefined
      const from = branch && info.refs?.heads?.[branch] ? branch : head
      if (!from || !info.refs?.heads?.[from]) return undefined
      await git.addRemote({ fs, gitdir, remote: REMOTE, url: remote.url, force: true })
      // The tip first; deeper only when the branch moved on since the commit.
      for (const depth of [1, BASE_SEARCH_DEPTH]) {
        await gitCall(remote, 'read', () =>
          git.fetch({ fs, http, gitdir, remote: REMOTE, ref: from, remoteRef: from, singleBranch: true, depth, tags: false, onAuth }),
        )
        const found = await git.readCommit({ fs, gitdir, oid: commit }).catch(() => undefined)
        if (found) return { branch: head ?? from, tree: found.commit.tree }
      }
      return undefined
    },

    async commitChanges(parent, changes, { message, author }) {
      const entries = new Map<string, { path: string; oid: string; mode: string; type: TreeEntry['type'] }>()
      const walk = async (oid: string, prefix: string) => {
        for (const entry of (await git.readTree({ fs, gitdir, oid })).tree) {
          const path = prefix + entry.path
          if (entry.type === 'tree') await walk(entry.oid, `${path}/`)
          else entries.set(path, { path, oid: entry.oid, mode: entry.mode, type: entry.type })
        }
      }
      const { commit: base } = await git.readCommit({ fs, gitdir, oid: parent })
      await walk(base.tree, '')
      for (const change of changes) {
        if (change.bytes === null) entries.delete(change.path)
        else {
          const oid = await git.writeBlob({ fs, gitdir, blob: change.bytes })
          entries.set(change.path, { path: change.path, oid, mode: entries.get(change.path)?.mode ?? FILE_MODE, type: 'blob' })
        }
      }
      const tree = await writeTree([...entries.values()])
      return git.commit({ fs, gitdir, message, author, committer: author, tree, parent: [parent], noUpdateBranch: true })
    },

    remove: () => rm(gitdir, { recursive: true, force: true }),
  }
}

function gitError(errors: typeof Errors, error: unknown, remote: Remote, access: 'read' | 'write'): unknown {
  const where = { repository: remote.repository }
  if (error instanceof AppError) return error
  if (error instanceof errors.PushRejectedError)
    return new AppError('push_rejected', `The branch of ${remote.repository} moved while publishing (the push was not a fast-forward); publish again`, {
      extensions: { ...where, reason: 'not_fast_forward' },
    })
  if (error instanceof errors.GitPushError) {
    const refused = Object.values(error.data.result.refs ?? {}).find((ref) => !ref.ok)?.error ?? error.data.prettyDetails
    return new AppError('push_rejected', `The code host refused the push to ${remote.repository}: ${refused.trim()}`, {
      extensions: { ...where, reason: 'refused', refusal: refused.trim() },
    })
  }
  if (error instanceof errors.HttpError) {
    const status = error.data.statusCode
    if (status === 401 || status === 403)
      return new AppError(
        'codehost_forbidden',
        `The code host refused to ${access === 'write' ? 'accept a push to' : 'read'} ${remote.repository} with the connected account's token (${status})`,
        {
          extensions: { ...where, status },
        },
      )
    if (status === 404) return new AppError('repository_not_found', `The code host has no git repository ${remote.repository}`, { extensions: where })
    return new AppError('upstream_error', `The code host's git server answered ${status} for ${remote.repository}`, { extensions: { ...where, status } })
  }
  // isomorphic-git's fetch needs the remote HEAD; GitHub points it at the first branch pushed.
  if (error instanceof errors.NotFoundError && error.data.what === 'HEAD')
    return new AppError(
      'upstream_error',
      `The default branch (HEAD) of ${remote.repository} names no existing branch; set its default branch and publish again`,
      {
        extensions: where,
      },
    )
  if (error instanceof ResponseTooLargeError)
    return new AppError('upstream_error', `The published branch of ${remote.repository} is too large to fetch (over ${error.limitBytes} bytes)`, {
      extensions: { ...where, limitBytes: error.limitBytes },
    })
  if (error instanceof DOMException && (error.name === 'TimeoutError' || error.name === 'AbortError'))
    return new AppError('upstream_timeout', `The code host's git server did not answer in time for ${remote.repository}`, { extensions: where })
  if (error instanceof TypeError || (error as { code?: string })?.code === 'ConnectionRefused')
    return new AppError('upstream_error', `The code host's git server is unreachable for ${remote.repository}`, { extensions: where })
  return error
}
