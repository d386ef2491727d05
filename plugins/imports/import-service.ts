/**
 * Repository imports as a service: starting one (checked and claimed before anything connects), running it in
 * the background within a concurrency limit, reading its state, and following its progress events.
 *
 * An import belongs to the process that started it, which writes a heartbeat every few seconds. One whose
 * heartbeat is stale (its process died or was stopped) is marked failed with `import_interrupted`, at start-up,
 * periodically, and whenever it is read; importing again resumes from what the workspace already holds (the
 * fetched objects and, when it is consistent, the checked-out tree), so nothing is downloaded twice.
 */
import { rm } from 'node:fs/promises'
import type { Lifecycle } from '../../src/lifecycle.ts'
import { AppError } from '../../src/errors.ts'
import type { Logger } from '../../src/log.ts'
import type { Database } from '../../src/storage/database.ts'
import type { UsageMeter } from '../../src/usage/meter.ts'
import type { CodeIndex } from '../code-search/index.ts'
import { readImportFiles, type ImportFiles, type ImportFilesRequest } from './import-files.ts'
import type { ImportSettings, TokenSource } from './import-job.ts'
import { isBinary, languageOf } from './analysis/languages.ts'
import { ImportStore, type ImportRecord, type RepositoryRecord } from './import-store.ts'
import { ACTIVE_STATUSES, type ImportBody, type ImportStatus, type ImportView } from './schemas.ts'
import { followEvents } from '../../src/event-log/index.ts'
import { createProgressLog, progressText, ProgressReporter, type ProgressEvent } from './progress-log.ts'
import { guardRepositoryUrl, locateRepository, type UrlPolicy } from './repository-url.ts'
import { organisationRoot, workspaceFor } from './workspace.ts'
import { isomorphicGit } from './git.ts'
import type { Caller } from '../../src/auth/caller.ts'
import { lazily } from '../../src/lazy.ts'

export type { TokenSource } from './import-job.ts'

// Fetching, checkout, analysis and reading for the index: loaded by the first import rather than at start-up.
const importJob = lazily(() => import('./import-job.ts'))

export interface ImportServiceOptions {
  db: Database
  /** Refuses new long work while the process drains (503 with Retry-After, so a proxy sends it elsewhere). */
  admission?: Pick<Lifecycle, 'admitLongWork'>
  /** Receives the files of every import (plugins/search). */
  codeIndex: CodeIndex
  /** Workspaces live under `<dataDir>/imports`. */
  dataDir: string
  settings: ImportSettings & {
    /** IMPORT_ALLOW_HOSTS. */
    allowHosts: readonly string[]
    /** Imports running at once in this process. Default 2. */
    concurrency?: number
  }
  /** Stored tokens for private repositories (`deps.integrations`); without it only public repositories import. */
  tokens?: TokenSource
  logger: Logger
  /** Name resolution for the address checks. Default the system resolver. */
  lookup?: UrlPolicy['lookup']
  /** How often a running import proves it is alive. Default 5000. */
  heartbeatMs?: number
  /** A heartbeat older than this marks the import interrupted. Default three heartbeats. */
  staleAfterMs?: number
  fetch?: typeof fetch
  /** Each succeeded import is recorded as one `import` usage event. */
  meter?: Pick<UsageMeter, 'record'>
  /** How long after creation isomorphic-git is loaded, ahead of the first import. Default 2000. */
  preloadGitAfterMs?: number
  /** Told how each import run here ended (metrics). */
  onImportEnd?: (status: 'succeeded' | 'failed') => void
}

export type { Caller }

export interface ImportEvent {
  id: number
  event: string
  data: unknown
}

export interface ImportService {
  /** Checks the repository URL, claims the repository and queues the import; answers it as GET would. */
  start(caller: Caller, request: ImportBody): Promise<ImportView>
  /** The import if it belongs to the organisation. */
  get(orgId: string, importId: string): Promise<ImportView | undefined>
  /**
   * Its events after `after` (a sequence number), stored ones first, then live ones as they come; ends after the
   * final `summary` or `error`, or when `signal` aborts. Undefined when the import is not the organisation's.
   */
  follow(orgId: string, importId: string, options?: { after?: number; signal?: AbortSignal }): Promise<AsyncIterable<ImportEvent> | undefined>
  /**
   * The files under a directory of a finished import, at that import's commit. Undefined when the import is not
   * the organisation's; 409 `import_not_ready` while it runs or when it failed.
   */
  readFiles(orgId: string, importId: string, request: ImportFilesRequest): Promise<ImportFiles | undefined>
  /**
   * Rebuilds the code index of the import's repository from the import's commit: everything indexed for the
   * repository is dropped first. Undefined when the import is not the organisation's; 409 `import_not_ready`.
   */
  reindex(orgId: string, importId: string, options?: ReindexOptions): Promise<ReindexOutcome | undefined>
  /** Imports running or queued in this process. */
  readonly runningCount: number
  /** Resolves once no import runs here: a draining process lets the imports it accepted finish. */
  idle(): Promise<void>
  /** Settles when an import running in this process has finished (tests, benchmarks). */
  settled(importId: string): Promise<void>
  /** Fails the imports whose process stopped; answers how many. */
  recoverInterrupted(): Promise<number>
  /**
   * Deletes everything of the organisation's imports (an organisation's deletion): its imports running here are
   * stopped first, then its repositories, imports and progress events go, and its workspaces under DATA_DIR/imports.
   * The code index entries are the code index's to remove.
   */
  deleteOrganisation(orgId: string): Promise<{ repositories: number; imports: number; events: number }>
  /** Stops every running import (they fail as interrupted) and the timers. */
  close(): Promise<void>
}

const FOLLOW_POLL_MS = 1000
const GIT_PRELOAD_DELAY_MS = 2000

export interface ReindexOptions {
  signal?: AbortSignal
  /** Called as files are read and indexed; `files` is the number of indexable files. */
  onProgress?(progress: { stage: 'reading' | 'indexing'; filesIndexed: number; files: number }): void
}

export interface ReindexOutcome {
  repository: ImportView['repository']
  commit: string
  files: number
  chunks: number
}

export const statusUrlOf = (id: string) => `/api/codehost/imports/${id}`

interface RunningImport {
  orgId: string
  controller: AbortController
  progress: Record<string, unknown>
  done: Promise<void>
}

export function createImportService(options: ImportServiceOptions): ImportService {
  const { settings, logger } = options
  const store = new ImportStore(options.db)
  // A follower elsewhere finds an import whose process stopped and fails it, which ends its log.
  const log = createProgressLog(store, {
    pollMs: FOLLOW_POLL_MS,
    checkProducer: async (importId) => void (running.has(importId) || (await recoverStale())),
    logger,
  })
  const policy: UrlPolicy = { allowHosts: settings.allowHosts, lookup: options.lookup }
  const heartbeatMs = options.heartbeatMs ?? 5000
  const staleAfterMs = options.staleAfterMs ?? heartbeatMs * 3
  const concurrency = settings.concurrency ?? 2
  const running = new Map<string, RunningImport>()
  const slots: (() => void)[] = []
  let busy = 0
  let closed = false
  // Loading isomorphic-git holds the event loop for 40 ms or more: done once start-up is over, not by the first
  // import while other requests wait.
  const preloadGit = setTimeout(() => void isomorphicGit().catch(() => undefined), options.preloadGitAfterMs ?? GIT_PRELOAD_DELAY_MS)
  preloadGit.unref?.()

  /** The organisation's import when it succeeded; undefined when it is not the organisation's. */
  async function succeededImport(orgId: string, importId: string): Promise<ImportRecord | undefined> {
    const record = await store.findImport(orgId, importId)
    if (!record) return undefined
    if (record.status !== 'succeeded' || !record.commit)
      throw new AppError('import_not_ready', `Import ${importId} is ${record.status}; only a succeeded import's files can be read`, {
        extensions: { importId, status: record.status },
      })
    return record
  }

  function view(record: ImportRecord): ImportView {
    const live = running.get(record.id)?.progress
    const iso = (ms: number) => new Date(ms).toISOString()
    return {
      id: record.id,
      status: record.status,
      repository: record.repository,
      ref: record.ref,
      depth: record.depth,
      commit: record.commit,
      progress: ACTIVE_STATUSES.includes(record.status) ? ((live ?? record.progress) as ImportView['progress']) : null,
      summary: record.summary,
      error: record.error,
      statusUrl: statusUrlOf(record.id),
      createdAt: iso(record.createdAt),
      updatedAt: iso(record.updatedAt),
      finishedAt: record.finishedAt === null ? null : iso(record.finishedAt),
    }
  }

  async function acquireSlot(signal: AbortSignal): Promise<void> {
    if (busy < concurrency) {
      busy++
      return
    }
    await new Promise<void>((resolve, reject) => {
      const grant = () => {
        signal.removeEventListener('abort', onAbort)
        busy++
        resolve()
      }
      const onAbort = () => {
        slots.splice(slots.indexOf(grant), 1)
        reject(signal.reason)
      }
      signal.addEventListener('abort', onAbort, { once: true })
      slots.push(grant)
    })
  }

  function releaseSlot() {
    busy--
    slots.shift()?.()
  }

  function failureOf(error: unknown): { code: string; message: string } {
    if (error instanceof AppError && error.code !== 'internal_error') return { code: error.code, message: error.message }
    logger.error('import failed unexpectedly', { err: error instanceof AppError ? (error.cause ?? error) : error })
    return { code: 'internal_error', message: 'The import failed unexpectedly' }
  }

  async function failWithEvent(importId: string, failure: { code: string; message: string }, reporter?: ProgressReporter): Promise<void> {
    if (!(await store.fail(importId, failure))) return
    if (reporter) await reporter.emit('error', failure)
    else await log.endAbandoned(importId, progressText('error', failure))
  }

  function launch(record: ImportRecord, request: ImportBody, repository: RepositoryRecord, pinned: Map<string, string>, reporter: ProgressReporter) {
    const controller = new AbortController()
    const entry: RunningImport = { orgId: record.orgId, controller, progress: { phase: 'queued' }, done: Promise.resolve() }
    running.set(record.id, entry)
    let outcome: 'succeeded' | 'failed' = 'failed'
    entry.done = (async () => {
      try {
        await acquireSlot(controller.signal)
        try {
          const { runImport } = importJob.loaded ?? (await importJob())
          const summary = await runImport(
            {
              importId: record.id,
              orgId: record.orgId,
              userId: record.userId,
              repository,
              ref: request.ref,
              depth: request.depth,
              pinned,
              signal: controller.signal,
              reporter,
              progress: entry.progress,
            },
            { store, codeIndex: options.codeIndex, dataDir: options.dataDir, settings, policy, tokens: options.tokens, logger, fetch: options.fetch },
            async (status: ImportStatus) => {
              entry.progress.phase = status
              await store.setStatus(record.id, status, entry.progress)
              await reporter.emit('status', { status })
            },
          )
          options.meter?.record({ orgId: record.orgId, userId: record.userId, kind: 'import' })
          logger.info('import succeeded', {
            importId: record.id,
            repositoryId: repository.id,
            incremental: summary.incremental,
            files: summary.analysis.files,
            indexed: summary.index.files,
            durationMs: summary.durationsMs.total,
          })
          await store.setCommits(record.id, summary.previousCommit, summary.commit)
          if (await store.succeed(record.id, summary)) {
            outcome = 'succeeded'
            const finished = await store.findImport(record.orgId, record.id)
            await reporter.emit('summary', view(finished!))
          }
        } finally {
          releaseSlot()
        }
      } catch (error) {
        // A shutdown shows through whatever the interrupted step threw.
        const failure = failureOf(controller.signal.aborted ? controller.signal.reason : error)
        logger.warn('import failed', { importId: record.id, code: failure.code })
        await failWithEvent(record.id, failure, reporter).catch((err) => logger.error('recording an import failure failed', { err }))
      } finally {
        running.delete(record.id)
        options.onImportEnd?.(outcome)
      }
    })()
  }

  async function recoverStale(repositoryId?: string): Promise<number> {
    let count = 0
    for (const id of await store.staleImports(Date.now() - staleAfterMs, repositoryId)) {
      if (running.has(id)) continue
      await failWithEvent(id, { code: 'import_interrupted', message: 'The import stopped when the process running it did; import again to resume' })
      count++
    }
    return count
  }

  const heartbeat = setInterval(() => {
    for (const [id, entry] of running) void store.heartbeat(id, entry.progress).catch((err) => logger.warn('import heartbeat failed', { err }))
  }, heartbeatMs)
  const sweep = setInterval(() => void recoverStale().catch((err) => logger.warn('interrupted import sweep failed', { err })), staleAfterMs)
  heartbeat.unref?.()
  sweep.unref?.()
  const startup = recoverStale().catch((err) => {
    logger.warn('interrupted import sweep failed', { err })
    return 0
  })

  async function* events(importId: string, after: number, signal?: AbortSignal): AsyncGenerator<ImportEvent> {
    for await (const batch of followEvents(log, importId, after, signal ?? new AbortController().signal))
      for (const e of batch) {
        const { event, data } = JSON.parse(e.data) as ProgressEvent
        yield { id: e.seq, event, data }
      }
  }

  return {
    get runningCount() {
      return running.size
    },

    async idle() {
      while (running.size > 0) await Promise.allSettled([...running.values()].map((entry) => entry.done))
    },

    async start(caller, request) {
      if (closed) throw new AppError('unavailable', 'The service is shutting down')
      options.admission?.admitLongWork('imports')
      const location = locateRepository(request.repository, settings.codehostUrl)
      const { address } = await guardRepositoryUrl(location.cloneUrl, policy)
      const repository = await store.upsertRepository(caller.orgId, location)
      await recoverStale(repository.id)
      const importId = await store.createImport({
        orgId: caller.orgId,
        userId: caller.userId,
        repositoryId: repository.id,
        ref: request.ref,
        depth: request.depth,
      })
      if (!importId) {
        const active = await store.activeImportOf(repository.id)
        throw new AppError('import_in_progress', `${repository.name} is already being imported (${active?.id ?? 'another import'})`, {
          extensions: { importId: active?.id, statusUrl: active && statusUrlOf(active.id) },
        })
      }
      const record = (await store.findImport(caller.orgId, importId))!
      const reporter = new ProgressReporter(log, importId)
      await reporter.emit('import', {
        importId,
        status: record.status,
        repository: record.repository,
        ref: record.ref,
        depth: record.depth,
        statusUrl: statusUrlOf(importId),
      })
      launch(record, request, repository, new Map([[location.cloneUrl.host, address]]), reporter)
      return view(record)
    },

    async get(orgId, importId) {
      let record = await store.findImport(orgId, importId)
      if (record && ACTIVE_STATUSES.includes(record.status) && !running.has(importId) && record.heartbeatAt < Date.now() - staleAfterMs) {
        await recoverStale(record.repository.id)
        record = await store.findImport(orgId, importId)
      }
      return record && view(record)
    },

    async follow(orgId, importId, { after = 0, signal } = {}) {
      const record = await store.findImport(orgId, importId)
      return record ? events(importId, after, signal) : undefined
    },

    async readFiles(orgId, importId, request) {
      const record = await succeededImport(orgId, importId)
      return record && readImportFiles(workspaceFor(options.dataDir, orgId, record.repository.id).gitdir, record.commit!, request)
    },

    async reindex(orgId, importId, { signal, onProgress } = {}) {
      const record = await succeededImport(orgId, importId)
      if (!record) return undefined
      onProgress?.({ stage: 'reading', filesIndexed: 0, files: 0 })
      const read = await readImportFiles(workspaceFor(options.dataDir, orgId, record.repository.id).gitdir, record.commit!, {
        directory: '',
        maxFiles: settings.maxFiles,
        maxBytes: settings.maxRepositoryBytes,
      })
      if (read.exceeded)
        throw new AppError(
          'repository_too_large',
          `The repository at ${record.commit} has more ${read.exceeded} than IMPORT_MAX_${read.exceeded === 'files' ? 'FILES' : 'REPOSITORY_BYTES'} allows`,
        )
      signal?.throwIfAborted()
      const { isIndexable } = importJob.loaded ?? (await importJob())
      const indexable = read.files.filter((file) =>
        isIndexable(file.path, { language: languageOf(file.path), binary: isBinary(file.bytes), bytes: file.bytes.byteLength }),
      )
      const decoder = new TextDecoder()
      onProgress?.({ stage: 'indexing', filesIndexed: 0, files: indexable.length })
      await options.codeIndex.removeRepository(orgId, record.repository.id)
      const result = await options.codeIndex.indexFiles({
        orgId,
        repositoryId: record.repository.id,
        repositoryName: record.repository.name,
        files: indexable.map((file) => ({ path: file.path, content: decoder.decode(file.bytes), language: languageOf(file.path) })),
        totalBytes: indexable.reduce((sum, file) => sum + file.bytes.byteLength, 0),
        commit: record.commit!,
        signal,
        onProgress: ({ filesIndexed }) => onProgress?.({ stage: 'indexing', filesIndexed, files: indexable.length }),
      })
      return { repository: record.repository, commit: record.commit!, files: result.files, chunks: result.chunks }
    },

    async settled(importId) {
      await running.get(importId)?.done
    },

    async deleteOrganisation(orgId) {
      const stopping = [...running.values()].filter((entry) => entry.orgId === orgId)
      for (const entry of stopping) entry.controller.abort(new AppError('import_interrupted', 'The organisation was deleted'))
      await Promise.all(stopping.map((entry) => entry.done))
      const removed = await store.deleteOrganisation(orgId)
      await rm(organisationRoot(options.dataDir, orgId), { recursive: true, force: true })
      return removed
    },

    async recoverInterrupted() {
      await startup
      return recoverStale()
    },

    async close() {
      closed = true
      clearTimeout(preloadGit)
      clearInterval(heartbeat)
      clearInterval(sweep)
      await startup
      const stopping = [...running.values()]
      for (const entry of stopping) entry.controller.abort(new AppError('import_interrupted', 'The service stopped during the import; import again to resume'))
      await Promise.all(stopping.map((entry) => entry.done))
      await log.close()
    },
  }
}
