/**
 * One import from start to finish: fetch (clone the first time) under the clone deadline and byte budget,
 * check the new commit out, analyse the tree, and hand the code index the files that changed. A failed first
 * import leaves no workspace behind; a failed re-import leaves the object store and a consistent tree (or none).
 */
import { constants, existsSync } from 'node:fs'
import { lstat, readFile } from 'node:fs/promises'
import { join } from 'node:path'
import type { AuthCallback } from 'isomorphic-git'
import { AppError } from '../../src/errors.ts'
import type { Logger } from '../../src/log.ts'
import type { CodeIndex, RepositoryFile } from '../code-search/index.ts'
import { analyseTree, type FileFacts } from './analysis/analyse.ts'
import { isLockFile } from './analysis/manifests.ts'
import { checkout } from './checkout.ts'
import { describeGitFailure, fetchRepository, hasCommit } from './clone.ts'
import { createGuardedGitHttp } from './guarded-git-http.ts'
import type { ImportStore, RepositoryRecord } from './import-store.ts'
import type { ImportStatus, ImportSummary } from './schemas.ts'
import type { ProgressReporter } from './progress-log.ts'
import { diffTrees, type TreeDiff } from './tree-diff.ts'
import type { UrlPolicy } from './repository-url.ts'
import {
  ensureWorkspace,
  forgetWorktreeState,
  readWorktreeState,
  removeTree,
  removeWorkspace,
  workspaceFor,
  writeWorktreeState,
  type WorktreeState,
} from './workspace.ts'

/** Where stored tokens come from: the integrations service. */
export interface TokenSource {
  tokenFor(userId: string, provider: string): Promise<string | undefined>
}

export interface ImportSettings {
  codehostUrl: string
  codehostProvider: string
  maxRepositoryBytes: number
  maxFiles: number
  maxFileBytes: number
  cloneTimeoutMs: number
}

export interface ImportJob {
  importId: string
  orgId: string
  userId: string
  repository: RepositoryRecord
  ref?: string
  depth?: number
  /** Addresses the start-up check resolved, so the clone connects to exactly those. */
  pinned: ReadonlyMap<string, string>
  /** Shutdown: aborting fails the import as interrupted. */
  signal: AbortSignal
  reporter: ProgressReporter
  /** Latest progress, written with each heartbeat and shown by GET. */
  progress: Record<string, unknown>
}

export interface ImportEnvironment {
  store: ImportStore
  codeIndex: CodeIndex
  dataDir: string
  settings: ImportSettings
  policy: UrlPolicy
  tokens?: TokenSource
  logger: Logger
  fetch?: typeof fetch
}

/** Files larger than this are analysed but not indexed: generated bundles and data files drown search results. */
export const INDEX_MAX_FILE_BYTES = 1024 * 1024
const NOT_INDEXED = /(^|\/)(node_modules|vendor|third_party|\.venv|venv|bower_components)\/|\.min\.(js|css)$|\.map$/

export function isIndexable(path: string, facts: FileFacts | undefined): boolean {
  return !!facts && !facts.binary && facts.bytes <= INDEX_MAX_FILE_BYTES && !NOT_INDEXED.test(path) && !isLockFile(path.slice(path.lastIndexOf('/') + 1))
}

// A result that arrives after the caller stopped waiting is dropped, but the caller can still wait for it to
// settle before removing files the work may still be writing.
function abortable<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason)
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason)
    signal.addEventListener('abort', onAbort, { once: true })
    work.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort))
  })
}

const settle = (work: Promise<unknown>, ms: number) => Promise.race([work.catch(() => {}), Bun.sleep(ms)])

/**
 * Files read ahead of the index, so it never waits on the disk between two files. A read finishes only when the
 * index gives way (every few milliseconds) and the index takes a dozen files between two, so 8 left it waiting
 * for a third of them; at most this many bytes are read ahead, whatever the count.
 */
const READ_AHEAD = 64
const READ_AHEAD_BYTES = 16 * 1024 * 1024

async function* readIndexFiles(tree: string, paths: string[], files: Map<string, FileFacts>): AsyncGenerator<RepositoryFile> {
  const read = async (path: string): Promise<RepositoryFile | undefined> => {
    const absolute = join(tree, path)
    // The tree was checked out by this import; lstat and O_NOFOLLOW still make sure a link is never read through.
    const stat = await lstat(absolute)
    if (!stat.isFile()) return undefined
    const content = await readFile(absolute, { encoding: 'utf8', flag: constants.O_RDONLY | constants.O_NOFOLLOW })
    return { path, content, language: files.get(path)?.language }
  }
  const ahead: { bytes: number; reading: Promise<RepositoryFile | undefined> }[] = []
  let aheadBytes = 0
  let next = 0
  const fill = () => {
    while (next < paths.length && ahead.length < READ_AHEAD && (ahead.length === 0 || aheadBytes < READ_AHEAD_BYTES)) {
      const path = paths[next++]!
      const reading = read(path)
      // Its failure is thrown when its turn comes, not reported as unhandled before.
      reading.catch(() => {})
      const bytes = files.get(path)?.bytes ?? 0
      ahead.push({ bytes, reading })
      aheadBytes += bytes
    }
  }
  fill()
  while (ahead.length > 0) {
    const { bytes, reading } = ahead.shift()!
    const file = await reading
    aheadBytes -= bytes
    fill()
    if (file) yield file
  }
}

export async function runImport(job: ImportJob, env: ImportEnvironment, setStatus: (status: ImportStatus) => Promise<void>): Promise<ImportSummary> {
  const { settings, store } = env
  const { repository, reporter } = job
  const started = performance.now()
  const workspace = workspaceFor(env.dataDir, job.orgId, repository.id)
  const fresh = !existsSync(join(workspace.gitdir, 'HEAD'))
  let treeDirty = false
  let pending: Promise<unknown> | undefined

  const deadline = new AbortController()
  const timer = setTimeout(
    () => deadline.abort(new AppError('import_timeout', `The clone took longer than ${settings.cloneTimeoutMs / 1000} s (IMPORT_CLONE_TIMEOUT_SECONDS)`)),
    settings.cloneTimeoutMs,
  )
  const cloneSignal = AbortSignal.any([deadline.signal, job.signal])
  const credentialOrigin = new URL(settings.codehostUrl).origin
  const http = createGuardedGitHttp({
    policy: env.policy,
    maxBytes: settings.maxRepositoryBytes,
    signal: cloneSignal,
    credentialOrigin,
    pinned: job.pinned,
    fetch: env.fetch,
  })
  let hadToken = false
  const onAuth: AuthCallback | undefined =
    env.tokens && repository.cloneUrl.startsWith(`${credentialOrigin}/`)
      ? async () => {
          const token = await env.tokens!.tokenFor(job.userId, settings.codehostProvider)
          if (!token) return undefined
          hadToken = true
          return { username: settings.codehostProvider === 'github' ? 'x-access-token' : 'oauth2', password: token }
        }
      : undefined

  try {
    if (fresh) await removeWorkspace(workspace)
    await ensureWorkspace(workspace)
    await setStatus('cloning')
    const cache = {}
    const fetching = fetchRepository({
      gitdir: workspace.gitdir,
      url: repository.cloneUrl,
      ref: job.ref,
      depth: job.depth,
      http,
      cache,
      onAuth,
      maxObjectBytes: settings.maxRepositoryBytes,
      signal: cloneSignal,
      onProgress: async ({ phase, loaded, total }) => {
        // The server repeats a phase's last line when it closes it.
        if (job.progress.phase === phase && job.progress.loaded === loaded && job.progress.total === total) return
        const changed = job.progress.phase !== phase
        Object.assign(job.progress, { phase, loaded, total, receivedBytes: http.receivedBytes })
        await reporter.throttled('clone', { ...job.progress }, changed || loaded === total)
      },
    })
    pending = fetching
    let commit: string
    let packIndexMs: number
    try {
      ;({ commit, packIndexMs } = await abortable(fetching, cloneSignal))
      if (http.failure !== undefined) throw http.failure
    } catch (error) {
      throw http.failure ?? (cloneSignal.aborted ? cloneSignal.reason : describeGitFailure(error, { url: repository.cloneUrl, ref: job.ref, hadToken }))
    }
    pending = undefined
    const fetchMs = performance.now() - started

    // The tree moves from the commit it holds to the new one, or is rebuilt when its state is unknown.
    const held = await readWorktreeState(workspace)
    const base: WorktreeState | undefined = held && (await hasCommit(workspace.gitdir, cache, held.commit)) ? held : undefined
    treeDirty = true
    await forgetWorktreeState(workspace)
    if (!base) {
      await removeTree(workspace)
      await ensureWorkspace(workspace)
    }
    const checkoutDiff = await diffTrees({ gitdir: workspace.gitdir, cache, from: base?.commit, to: commit, signal: cloneSignal })
    const checkingOut = checkout({
      gitdir: workspace.gitdir,
      tree: workspace.tree,
      cache,
      diff: checkoutDiff,
      current: base,
      commit,
      limits: settings,
      signal: cloneSignal,
      onProgress: async ({ loaded, total }) => {
        const changed = job.progress.phase !== 'Checking out files'
        Object.assign(job.progress, { phase: 'Checking out files', loaded, total, receivedBytes: http.receivedBytes })
        await reporter.throttled('clone', { ...job.progress }, changed || loaded === total)
      },
    })
    pending = checkingOut
    const state = await abortable(checkingOut, cloneSignal)
    pending = undefined
    await writeWorktreeState(workspace, state)
    treeDirty = false
    clearTimeout(timer)
    const cloneMs = performance.now() - started

    await setStatus('analysing')
    const analysisStarted = performance.now()
    Object.assign(job.progress, { phase: 'analysing', loaded: 0, total: undefined })
    const { analysis, files } = await analyseTree(workspace.tree, {
      maxFileBytes: settings.maxFileBytes,
      signal: job.signal,
      onProgress: async (progress) => {
        Object.assign(job.progress, { loaded: progress.files })
        await reporter.throttled('analysis', progress)
      },
    })
    await reporter.emit('analysis', { partial: false, ...analysis })
    const analysisMs = performance.now() - analysisStarted

    await setStatus('indexing')
    const indexingStarted = performance.now()
    // Incremental only from the commit the index itself holds: after a lost snapshot or a change of embeddings
    // it holds none, whatever the database recorded, and everything is indexed again.
    const indexedCommit = env.codeIndex.indexedCommit ? ((await env.codeIndex.indexedCommit(job.orgId, repository.id)) ?? null) : repository.indexedCommit
    const previous = indexedCommit && (await hasCommit(workspace.gitdir, cache, indexedCommit)) ? indexedCommit : null
    let indexDiff: TreeDiff | undefined
    if (previous) indexDiff = previous === base?.commit ? checkoutDiff : await diffTrees({ gitdir: workspace.gitdir, cache, from: previous, to: commit })
    const candidates = indexDiff ? indexDiff.write.map((entry) => entry.path) : [...files.keys()]
    const toIndex = candidates.filter((path) => isIndexable(path, files.get(path))).sort()
    const indexed = new Set(toIndex)
    // Paths whose old chunks must go: deleted, or changed into something that is no longer indexed.
    const removedPaths = indexDiff ? [...new Set([...indexDiff.removedFiles, ...candidates])].filter((path) => !indexed.has(path)).sort() : []
    if (!indexDiff) await env.codeIndex.removeRepository(job.orgId, repository.id)
    Object.assign(job.progress, { phase: 'indexing', loaded: 0, total: toIndex.length })
    const result = await env.codeIndex.indexFiles({
      orgId: job.orgId,
      repositoryId: repository.id,
      repositoryName: repository.name,
      files: readIndexFiles(workspace.tree, toIndex, files),
      totalBytes: toIndex.reduce((sum, path) => sum + (files.get(path)?.bytes ?? 0), 0),
      removedPaths,
      commit,
      signal: job.signal,
      onProgress: ({ filesIndexed, chunksIndexed }) => {
        Object.assign(job.progress, { loaded: filesIndexed, chunksIndexed })
        // The last file applied is told at once: what follows is the index's save.
        void reporter
          .throttled('indexing', { filesIndexed, chunksIndexed, files: toIndex.length, removed: removedPaths.length }, filesIndexed === toIndex.length)
          .catch(() => {})
      },
    })
    await reporter.emit('indexing', { filesIndexed: result.files, chunksIndexed: result.chunks, files: toIndex.length, removed: removedPaths.length })
    await store.markIndexed(repository.id, commit, analysis)
    const indexingMs = performance.now() - indexingStarted

    return {
      commit,
      previousCommit: previous,
      incremental: indexDiff !== undefined,
      receivedBytes: http.receivedBytes,
      checkout: { written: checkoutDiff.write.length, removed: checkoutDiff.removedFiles.length },
      index: { files: result.files, chunks: result.chunks, removed: removedPaths.length },
      durationsMs: {
        clone: round(cloneMs),
        fetch: round(fetchMs),
        packIndex: round(packIndexMs),
        checkout: round(cloneMs - fetchMs),
        analysis: round(analysisMs),
        indexing: round(indexingMs),
        total: round(performance.now() - started),
      },
      analysis,
    }
  } catch (error) {
    // Work that outlived the deadline may still be writing; it has to stop before its files are removed.
    if (pending) await settle(pending, 10_000)
    if (fresh) await removeWorkspace(workspace).catch((err) => env.logger.warn('workspace removal failed', { err }))
    else if (treeDirty) await removeTree(workspace).catch((err) => env.logger.warn('tree removal failed', { err }))
    throw error
  } finally {
    clearTimeout(timer)
  }
}

const round = (ms: number) => Math.round(ms * 10) / 10
