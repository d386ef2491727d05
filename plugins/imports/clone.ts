/**
 * Fetching a repository into its workspace's object store with isomorphic-git. The first import and every
 * re-import take the same path: the local branch `imported` holds the last fetched commit, which is offered to
 * the server as a "have", so a re-import downloads only the objects that changed.
 */
import * as fs from 'node:fs'
import type { AuthCallback, GitProgressEvent, HttpClient } from 'isomorphic-git'
import { AppError } from '../../src/errors.ts'
import { receivePackSeparately, storePack } from './fetched-pack.ts'
import { isomorphicGit } from './git.ts'
import type { ObjectType } from './pack-index.ts'
import { objectReader } from './tree-diff.ts'

/** Local branch holding the last fetched commit; the tree is checked out by the service, never by branch name. */
export const IMPORTED_BRANCH = 'imported'

export interface FetchRepositoryOptions {
  gitdir: string
  url: string
  /** Branch or tag; default the remote's HEAD. */
  ref?: string
  /** Commits of history to fetch; default all. */
  depth?: number
  http: HttpClient
  /** isomorphic-git's object cache, shared with the diff and checkout of the same import. */
  cache: object
  onProgress?: (progress: GitProgressEvent) => void | Promise<void>
  onAuth?: AuthCallback
  /** No object of the pack may inflate past this many bytes (IMPORT_MAX_REPOSITORY_BYTES). */
  maxObjectBytes: number
  /** Stops indexing the pack. */
  signal?: AbortSignal
}

export interface FetchedRepository {
  /** The commit `ref` names, tags peeled. */
  commit: string
  /** Time spent indexing the received pack, in milliseconds. */
  packIndexMs: number
}

/** Fetches `ref` (or HEAD): downloads the objects the object store lacks, indexes and stores their pack. */
export async function fetchRepository(options: FetchRepositoryOptions): Promise<FetchedRepository> {
  const { gitdir, cache } = options
  const git = await isomorphicGit()
  const receiver = receivePackSeparately(options.http)
  await git.init({ fs, dir: gitdir, gitdir, bare: true, defaultBranch: IMPORTED_BRANCH })
  // The URL is passed on every fetch as well; the stored remote only satisfies isomorphic-git's refspec lookup.
  await git.addRemote({ fs, gitdir, remote: 'origin', url: options.url, force: true })
  const fetched = await git.fetch({
    fs,
    http: receiver.http,
    gitdir,
    cache,
    url: options.url,
    ref: IMPORTED_BRANCH,
    remoteRef: options.ref ?? 'HEAD',
    singleBranch: true,
    tags: false,
    depth: options.depth,
    onProgress: options.onProgress,
    onAuth: options.onAuth,
  })
  if (!fetched.fetchHead) throw new AppError('repository_empty', 'The repository has no commits to import')
  const pack = await receiver.take()
  const indexing = performance.now()
  let stored: ReturnType<typeof objectReader> | undefined
  if (pack)
    await storePack(gitdir, pack, {
      maxObjectBytes: options.maxObjectBytes,
      onProgress: options.onProgress,
      signal: options.signal,
      // A thin pack's deltas may rest on objects an earlier fetch stored.
      externalBase: async (oid) => {
        stored ??= objectReader(gitdir, cache)
        const found = await stored.then((read) => read(oid)).catch(() => undefined)
        return found && { type: found.type as ObjectType, content: found.content }
      },
    })
  const packIndexMs = performance.now() - indexing
  const commit = await peelToCommit(gitdir, cache, fetched.fetchHead)
  await git.writeRef({ fs, gitdir, ref: `refs/heads/${IMPORTED_BRANCH}`, value: commit, force: true })
  return { commit, packIndexMs }
}

/** An annotated tag names a tag object; the tree to check out is that of the commit it points at. */
async function peelToCommit(gitdir: string, cache: object, oid: string): Promise<string> {
  const read = await objectReader(gitdir, cache)
  for (let depth = 0; depth < 10; depth++) {
    const { type, content } = await read(oid)
    if (type === 'commit') return oid
    const target = type === 'tag' ? /^object ([0-9a-f]{40})\n/.exec(content.toString('latin1', 0, 48))?.[1] : undefined
    if (!target) break
    oid = target
  }
  throw new AppError('repository_not_found', 'The ref does not name a commit')
}

/** Whether the object store still has `commit` (with its tree), so it can be diffed against. */
export async function hasCommit(gitdir: string, cache: object, commit: string): Promise<boolean> {
  try {
    const read = await objectReader(gitdir, cache)
    const { type, content } = await read(commit)
    const tree = type === 'commit' ? /^tree ([0-9a-f]{40})\n/.exec(content.toString('latin1', 0, 46))?.[1] : undefined
    return tree !== undefined && (await read(tree)).type === 'tree'
  } catch {
    return false
  }
}

/** Turns what isomorphic-git throws into the import's error codes; AppErrors pass through. */
export function describeGitFailure(error: unknown, context: { url: string; ref?: string; hadToken: boolean }): AppError {
  if (error instanceof AppError) return error
  const code = (error as { code?: unknown })?.code
  const host = new URL(context.url).host
  switch (code) {
    case 'HttpError': {
      const status = (error as { data?: { statusCode?: number } }).data?.statusCode
      if (status === 401 || status === 403)
        return new AppError(
          'repository_access_denied',
          context.hadToken
            ? `${host} refused the stored token for this repository (${status})`
            : `${host} asks for credentials (${status}): connect the code-hosting provider to import private repositories`,
        )
      if (status === 404) return new AppError('repository_not_found', `${host} has no repository at ${context.url}`)
      return new AppError('upstream_error', `${host} answered ${status ?? 'an error'} to the clone`)
    }
    case 'NotFoundError':
      return new AppError(
        'repository_not_found',
        context.ref ? `The repository has no branch or tag named ${context.ref}` : 'The repository has no HEAD to import',
      )
    case 'UnsafeFilepathError':
      return new AppError('repository_unsafe_path', `The repository holds a path that would leave its workspace: ${(error as Error).message}`)
    case 'SmartHttpError':
      return new AppError('upstream_error', `${host} does not speak the Git smart-HTTP protocol at ${context.url}`)
    case 'RemoteCapabilityError':
      return new AppError('upstream_error', `${host} cannot serve this import: ${(error as Error).message}`)
    case 'ParseError':
    case 'InternalError':
      return new AppError('upstream_error', `${host} sent data that is not valid Git: ${(error as Error).message}`)
    default:
      // The cause is logged by the service; the message is shown to users and stays generic.
      return new AppError('internal_error', 'The import failed unexpectedly', { cause: error })
  }
}
