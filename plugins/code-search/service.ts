/**
 * The code index: one index per organisation, fed by repository import and searched by the route, the
 * chat's code_search tool and the agents (see types.ts for the contract).
 *
 * Indexes live in memory and are loaded from their snapshot on first use. They are saved when an import
 * ends (indexFiles answers once its changes are in a snapshot), at least every five snapshot delays while
 * a long import runs, and one snapshot delay after other changes (see persistence.ts). Every change is
 * also kept in a list until a snapshot holds it, so when another process sharing the database has saved
 * a newer snapshot, this process loads that one and applies its own unsaved changes on top: changes to
 * different files of one organisation made in two processes both survive; for the same file, the later
 * save wins.
 */
import { AppError } from '../../src/errors.ts'
import type { Logger } from '../../src/log.ts'
import { InProgress, timeSlices } from '../../src/time-slices.ts'
import { chunkFile, type ChunkerOptions } from './chunker.ts'
import type { EmbeddingProvider } from './embeddings/provider.ts'
import type { QueryExpander } from './expansion.ts'
import { languageOfPath } from './languages.ts'
import { OrgIndex, type ChunkFilter, type FileChunks } from './org-index.ts'
import { chunkPreparer, discardChunkPreparer, type PreparationRequest, type PreparedBatch } from './preparation.ts'
import { rankingSteps, toEnd } from './ranking.ts'
import { applyChange, decodeChanges, encodeChange, type Change } from './changes.ts'
import { decodeSnapshot, decodeSnapshotHeader, decodeSnapshotTail, encodeSegment, type SnapshotLayout, type SnapshotStore, type SnapshotVersion } from './persistence.ts'
import { buildSnippet, snippetTerms } from './snippet.ts'
import type { CodeIndex, CodeSearchQuery, CodeSearchResult, IndexFilesInput, SearchMode } from './types.ts'
import { termSpaceLearner } from './term-space-learner.ts'
import {
  COMPACT_AFTER_BYTES,
  INDEX_SLICE_MS,
  PREPARE_BATCH_CHARS,
  PREPARE_IN_FLIGHT,
  PREPARE_IN_WORKER_FROM,
  SEARCH_PRIORITY_MS,
  SEARCH_SLICE_MS,
  TERM_SPACE_BATCH_CHARS,
} from './tuning.ts'
import type { ScoredSlot } from './vectors.ts'

export interface CodeIndexOptions {
  embeddings: EmbeddingProvider
  /** Where indexes are saved; without one they live in memory only. */
  snapshots?: SnapshotStore
  logger?: Logger
  /** Quiet time after a change before the index is saved. Default 2000 (CODE_INDEX_SNAPSHOT_DELAY_MS). */
  snapshotDelayMs?: number
  /** How often a search checks the database for a newer snapshot. Default 2000 (CODE_INDEX_REFRESH_MS); 0 checks every time. */
  refreshIntervalMs?: number
  /** Chunks embedded per call. Default 64. */
  embedBatchSize?: number
  /**
   * Segments appended to an organisation's snapshot since its base, in bytes, beyond which a Worker
   * rewrites it as one base (also when they outweigh half the base). Default 8 MiB.
   */
  compactAfterBytes?: number
  /**
   * With offline embeddings, an indexFiles call whose files total at least this many bytes (IndexFilesInput.totalBytes)
   * is chunked and embedded on a Worker thread while the event loop inserts (preparation.ts). Default 16 MiB: below
   * that, copying to and from the Worker costs about what it saves. 0 always, Infinity never.
   */
  prepareInWorkerFrom?: number
  /** Milliseconds a search runs before other work may run between its steps. Default 3; 0 gives way at every step. */
  searchSliceMs?: number
  /** Milliseconds of indexing between two turns of the event loop. Default 4; 0 gives way after every file. */
  indexSliceMs?: number
  chunker?: ChunkerOptions
  now?: () => number
  /** Writes code a question describes, searched beside the question (CODE_SEARCH_EXPANSION_MODEL); see expansion.ts. */
  expandQuery?: QueryExpander
}

export const SEARCH_MODES = ['hybrid', 'text', 'vector'] as const satisfies readonly SearchMode[]
export const MAX_LIMIT = 50
export const DEFAULT_LIMIT = 10
export const MAX_QUERY_LENGTH = 500

interface Loaded {
  index: OrgIndex
  /** The snapshot version `index` was loaded from or saved as; 0 before the first. */
  version: number
  /** That version's file, which the next save appends to; undefined while the index holds nothing saved. */
  file: string | undefined
  layout: SnapshotLayout | undefined
}

interface OrgState extends Loaded {
  readonly orgId: string
  /**
   * Changes applied to `index` and not yet in a saved snapshot, encoded as a segment holds them: decoded again
   * only when they must be applied on top of a newer snapshot, so a long import keeps no second copy of its
   * chunks and vectors.
   */
  pending: Uint8Array[]
  compacting: boolean
  pendingSince: number | undefined
  checkedAt: number
  timer: ReturnType<typeof setTimeout> | undefined
  /** Saves asked for and not yet done: the timer adds none while one is, which saves what is pending anyway. */
  savesInFlight: number
  /** Refreshes and saves run one at a time. */
  queue: Promise<unknown>
  refreshing: Promise<void> | undefined
  /** The term space being learnt, and whether to look again when it is: the index changed meanwhile. */
  learning: Promise<void> | undefined
  learnAgain: boolean
}

const silent: Logger = { debug() {}, info() {}, warn() {}, error() {}, child: () => silent }

const invalid = (field: string, message: string) => new AppError('validation_failed', `${field}: ${message}`, { errors: [{ field, message }] })

/** Checks a query from any caller (the route's schema checks the same) and fills in the defaults. */
export function normaliseQuery(query: CodeSearchQuery) {
  const text = typeof query.query === 'string' ? query.query.trim() : ''
  if (text === '') throw invalid('query', 'must not be blank')
  if (text.length > MAX_QUERY_LENGTH) throw invalid('query', `must be at most ${MAX_QUERY_LENGTH} characters`)
  const mode = query.mode ?? 'hybrid'
  if (!SEARCH_MODES.includes(mode)) throw invalid('mode', `must be one of ${SEARCH_MODES.join(', ')}`)
  const limit = query.limit ?? DEFAULT_LIMIT
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_LIMIT) throw invalid('limit', `must be a whole number from 1 to ${MAX_LIMIT}`)
  if (query.expand !== undefined && typeof query.expand !== 'boolean') throw invalid('expand', 'must be true or false')
  const set = (values: readonly string[] | undefined, field: string, map = (v: string) => v) => {
    if (values === undefined || values.length === 0) return undefined
    if (!Array.isArray(values) || values.some((v) => typeof v !== 'string' || v.trim() === '')) throw invalid(field, 'must be a list of non-empty strings')
    return new Set(values.map(map))
  }
  const pathPrefix = query.pathPrefix?.replace(/^(\.\/|\/)+/, '')
  const filter: ChunkFilter = {
    repositoryIds: set(query.repositoryIds, 'repositoryIds'),
    languages: set(query.languages, 'languages', (v) => v.trim().toLowerCase()),
    pathPrefix: pathPrefix ? pathPrefix : undefined,
  }
  return { text, mode, limit, filter }
}

/** A repository path as the index keys it: forward slashes, relative, no `.` or `..` segments. */
function indexPath(path: string): string {
  const clean = path.replace(/\\/g, '/').replace(/^(\.\/)+/, '')
  if (clean === '' || clean.startsWith('/') || clean.split('/').some((part) => part === '..' || part === '.' || part === ''))
    throw new Error(`not a relative repository path: ${JSON.stringify(path)}`)
  return clean
}

export function createCodeIndex(options: CodeIndexOptions): CodeIndex {
  const { embeddings, snapshots } = options
  const logger = options.logger ?? silent
  const now = options.now ?? Date.now
  const snapshotDelayMs = options.snapshotDelayMs ?? 2000
  const refreshIntervalMs = options.refreshIntervalMs ?? 2000
  const embedBatchSize = options.embedBatchSize ?? 64
  const compactAfterBytes = options.compactAfterBytes ?? COMPACT_AFTER_BYTES
  const prepareInWorkerFrom = embeddings.hashedDimensions === undefined ? Infinity : (options.prepareInWorkerFrom ?? PREPARE_IN_WORKER_FROM)
  const states = new Map<string, Promise<OrgState>>()
  const queryVectors = new Map<string, Float32Array>()
  let closed = false
  const closing = new AbortController()

  /** The snapshot the database names, read and decoded; a file pruned while we looked is looked up again. */
  async function loadSnapshot(orgId: string, named: SnapshotVersion): Promise<Loaded> {
    let snapshot = named
    for (let attempt = 1; ; attempt++) {
      try {
        const { header, index, layout } = decodeSnapshot(await snapshots!.read(orgId, snapshot))
        if (header.embeddings !== embeddings.id) {
          logger.warn('code index snapshot made with other embeddings; starting empty, re-import the repositories', {
            orgId,
            snapshot: header.embeddings,
            configured: embeddings.id,
          })
          // No file to append to: the next save writes a whole one.
          return { version: snapshot.version, file: undefined, layout: undefined, index: new OrgIndex() }
        }
        return { version: snapshot.version, file: snapshot.file, layout, index }
      } catch (error) {
        const missing = (error as NodeJS.ErrnoException).code === 'ENOENT'
        const newer = missing ? await snapshots!.current(orgId) : undefined
        if (!missing || !newer || attempt >= 3) throw error
        snapshot = newer
      }
    }
  }

  function state(orgId: string): Promise<OrgState> {
    let pending = states.get(orgId)
    if (!pending) {
      pending = (async () => {
        const named = await snapshots?.current(orgId)
        const loaded: Loaded = named ? await loadSnapshot(orgId, named) : { version: 0, file: undefined, layout: undefined, index: new OrgIndex() }
        if (named) logger.info('code index loaded', { orgId, version: loaded.version, chunks: loaded.index.chunkCount })
        return {
          orgId,
          ...loaded,
          pending: [],
          compacting: false,
          savesInFlight: 0,
          pendingSince: undefined,
          checkedAt: now(),
          timer: undefined,
          queue: Promise.resolve(),
          refreshing: undefined,
          learning: undefined,
          learnAgain: false,
        } satisfies OrgState
      })()
      void pending.then(learnMeaning, () => undefined)
      // A failed load is tried again by the next caller rather than remembered.
      pending.catch(() => states.delete(orgId))
      states.set(orgId, pending)
    }
    return pending
  }

  function serially<T>(org: OrgState, task: () => Promise<T>): Promise<T> {
    const run = org.queue.then(task, task)
    org.queue = run.catch(() => undefined)
    return run
  }

  /** Replaces the index with the newer snapshot `named`, with this process's unsaved changes on top. */
  async function adopt(org: OrgState, named: SnapshotVersion): Promise<void> {
    if (await adoptTail(org, named)) return
    const loaded = await loadSnapshot(org.orgId, named)
    applyPending(org, loaded.index)
    Object.assign(org, loaded)
    learnMeaning(org)
    logger.info('code index reloaded: another process saved a newer snapshot', { orgId: org.orgId, version: loaded.version })
  }

  /**
   * When the newer snapshot is ours with segments appended, applies only those (and our unsaved changes
   * again on top): the cost of what changed, not of decoding the whole index. False when it must be read whole.
   */
  async function adoptTail(org: OrgState, named: SnapshotVersion): Promise<boolean> {
    if (!org.layout) return false
    const tail = await snapshots!
      .read(org.orgId, named)
      .then((bytes) => decodeSnapshotTail(bytes, org.layout!))
      .catch(() => undefined)
    if (!tail || tail.header.embeddings !== embeddings.id) return false
    for (const change of tail.changes) applyChange(org.index, change)
    applyPending(org, org.index)
    Object.assign(org, { version: named.version, file: named.file, layout: tail.layout })
    learnMeaning(org)
    logger.info('code index reloaded: another process saved a newer snapshot', { orgId: org.orgId, version: named.version, changes: tail.changes.length })
    return true
  }

  /** Loads a newer snapshot if the database names one; `always` skips the refresh interval. */
  function refresh(org: OrgState, always: boolean): Promise<void> {
    if (!snapshots || (!always && now() - org.checkedAt < refreshIntervalMs)) return Promise.resolve()
    // Stamped first: while the database is unreachable, searches do not all wait on it.
    org.checkedAt = now()
    org.refreshing ??= serially(org, async () => {
      const named = await snapshots.current(org.orgId)
      if (named && named.version > org.version) await adopt(org, named)
    }).finally(() => (org.refreshing = undefined))
    return org.refreshing
  }

  /**
   * Learns the organisation's term space on the learner's Worker when the index has none or has changed since
   * (OrgIndex.meaningStale): after each import, one at a time, changes made meanwhile leading to one more. With
   * offline embeddings only, since a model's own vectors carry meaning.
   */
  function learnMeaning(org: OrgState): void {
    if (embeddings.hashedDimensions === undefined || closed) return
    if (org.learning) {
      org.learnAgain = true
      return
    }
    const index = org.index
    if (!index.meaningStale) return
    org.learning = termSpaceLearner()
      .learn(index.meaningSource(TERM_SPACE_BATCH_CHARS), closing.signal)
      .then(
        (learnt) => {
          // A newer snapshot replaced the index meanwhile: it learns its own.
          if (org.index === index) index.adoptMeaning(learnt)
          logger.debug('code index term space learnt', { orgId: org.orgId, chunks: index.chunkCount, terms: learnt?.space.rows.size ?? 0 })
        },
        (error) => {
          index.abandonMeaning()
          if (!closed) logger.warn('code index term space not learnt; vector search uses the embeddings alone', { orgId: org.orgId, err: error })
        },
      )
      .finally(() => {
        org.learning = undefined
        if (org.learnAgain || org.index !== index) {
          org.learnAgain = false
          learnMeaning(org)
        }
      })
  }

  function apply(org: OrgState, change: Change): void {
    applyChange(org.index, change)
    if (!snapshots) return
    org.pending.push(encodeChange(change))
    org.pendingSince ??= now()
    scheduleSave(org)
  }

  /** This process's unsaved changes, applied to `index` (a newer snapshot just loaded). */
  function applyPending(org: OrgState, index: OrgIndex): void {
    for (const encoded of org.pending) for (const change of decodeChanges(encoded)) applyChange(index, change)
  }

  function scheduleSave(org: OrgState, delayMs = snapshotDelayMs): void {
    if (closed) return
    clearTimeout(org.timer)
    // Debounced, but a long import still saves at least every five delays.
    const overdue = org.pendingSince !== undefined && now() - org.pendingSince >= 5 * snapshotDelayMs
    org.timer = setTimeout(() => org.savesInFlight === 0 && void save(org).catch(() => undefined), overdue ? 0 : delayMs)
    org.timer.unref?.()
  }

  /** Saves the pending changes now; on failure they stay pending and a retry is scheduled. */
  function save(org: OrgState): Promise<void> {
    clearTimeout(org.timer)
    org.timer = undefined
    org.savesInFlight++
    const saving = serially(org, async () => {
      for (let attempt = 1; org.pending.length > 0; attempt++) {
        const saved = org.pending.length
        const vectors = org.index.vectors
        const chain = org.layout?.chain ?? crypto.randomUUID()
        const header = {
          orgId: org.orgId,
          version: org.version + 1,
          embeddings: embeddings.id,
          dimensions: vectors?.dimensions ?? 0,
          slots: vectors?.slots ?? 0,
          chunks: org.index.chunkCount,
          savedAt: now(),
          chain,
        }
        // Only the changes since the last save, already encoded; appended to that save's file.
        const fresh = org.file === undefined
        const pieces = encodeSegment(org.pending.slice(0, saved), header, fresh)
        const bytes = pieces.reduce((sum, piece) => sum + piece.length, 0)
        const claimed = await snapshots!.commit(org.orgId, org.version, pieces, org.file)
        if (claimed) {
          const layout = org.layout ?? { chain, sections: 0, baseBytes: 0, segmentBytes: fresh ? -8 : 0 }
          Object.assign(org, { ...claimed, layout: { ...layout, sections: layout.sections + 1, segmentBytes: layout.segmentBytes + bytes } })
          org.pending.splice(0, saved)
          org.pendingSince = org.pending.length > 0 ? now() : undefined
          logger.debug('code index saved', { orgId: org.orgId, version: org.version, chunks: org.index.chunkCount, bytes })
          if (org.pending.length > 0) scheduleSave(org)
          compactLater(org)
          return
        }
        // Another process saved this version first: build on its snapshot and try again.
        if (attempt >= 5) throw new Error(`another process saved first ${attempt} times in a row`)
        const named = await snapshots!.current(org.orgId)
        if (named) await adopt(org, named)
      }
    })
    saving.then(
      () => org.savesInFlight--,
      () => org.savesInFlight--,
    )
    return saving.catch((error) => {
      logger.error('code index snapshot failed; will retry', { orgId: org.orgId, err: error })
      scheduleSave(org, Math.max(snapshotDelayMs, 1000) * 5)
      throw error
    })
  }

  /** Has a Worker rewrite the snapshot as one base once its segments weigh enough; claimed unless a save came first. */
  function compactLater(org: OrgState): void {
    const { layout, file } = org
    if (closed || !snapshots?.compact || org.compacting || !layout || !file) return
    if (layout.segmentBytes < Math.max(compactAfterBytes, layout.baseBytes / 2)) return
    org.compacting = true
    const from = { version: org.version, file }
    snapshots
      .compact(org.orgId, from)
      .then((compacted) =>
        serially(org, async () => {
          // Segments saved while the Worker ran are appended to its base as they are.
          const current = org.layout!
          if (current.chain !== layout.chain || !org.file) return
          const saved = fileBytes(current) - fileBytes(layout)
          const tail = saved === 0 ? [] : [(await snapshots.read(org.orgId, { version: org.version, file: org.file })).subarray(fileBytes(layout))]
          const claimed = await snapshots.commit(org.orgId, org.version, [compacted, ...tail])
          if (!claimed) return
          const chain = decodeSnapshotHeader(compacted).chain
          const baseBytes = compacted.length - 8
          Object.assign(org, { ...claimed, layout: { chain, sections: 1 + current.sections - layout.sections, baseBytes, segmentBytes: current.segmentBytes - layout.segmentBytes } })
          logger.debug('code index compacted', { orgId: org.orgId, version: org.version, bytes: fileBytes(org.layout!) })
        }),
      )
      .catch((error) => logger.warn('code index compaction failed', { orgId: org.orgId, err: error }))
      .finally(() => (org.compacting = false))
  }

  const fileBytes = (layout: SnapshotLayout) => 8 + layout.baseBytes + layout.segmentBytes

  async function queryVector(text: string): Promise<Float32Array> {
    let vector = queryVectors.get(text)
    if (!vector) {
      ;[vector] = (await embeddings.embed([text])) as [Float32Array]
      if (queryVectors.size >= 1000) queryVectors.delete(queryVectors.keys().next().value!)
      queryVectors.set(text, vector)
    }
    return vector
  }

  const searches = new InProgress()

  return {
    async indexFiles(input: IndexFilesInput) {
      if (closed) throw new Error('the code index is closed')
      const { orgId, repositoryId, repositoryName, signal } = input
      if (!orgId || !repositoryId) throw new Error('indexFiles needs an orgId and a repositoryId')
      const org = await state(orgId)
      // Changes build on the newest snapshot, so saving them does not undo another process's work.
      await refresh(org, true)
      let files = 0
      let chunks = 0
      let batch: FileChunks[] = []
      let batchChunks = 0
      // Chunking, offline embedding and indexing never wait on I/O: the work is cut into slices of a few
      // milliseconds, and other requests run between them.
      const giveWay = timeSlices(options.indexSliceMs ?? INDEX_SLICE_MS, () => searches.finished(SEARCH_PRIORITY_MS))
      const flush = async () => {
        const texts = batch.flatMap((file) => file.chunks.map((chunk) => chunk.content))
        const vectors = texts.length > 0 ? await embeddings.embed(texts, { signal }) : []
        signal?.throwIfAborted()
        await giveWay()
        let at = 0
        for (const file of batch) {
          for (const chunk of file.chunks) chunk.vector = vectors[at++]!
          apply(org, { kind: 'file', file })
          files++
          chunks += file.chunks.length
          await giveWay()
        }
        batch = []
        batchChunks = 0
        input.onProgress?.({ filesIndexed: files, chunksIndexed: chunks })
      }
      // A large import's files go to the preparation Worker in batches: while it prepares some, the event loop
      // inserts those it prepared before.
      let onWorker = (input.totalBytes ?? 0) >= prepareInWorkerFrom
      let toPrepare: PreparationRequest['files'] = []
      let toPrepareChars = 0
      const preparing: { files: PreparationRequest['files']; prepared: Promise<PreparedBatch> }[] = []
      const sendToWorker = () => {
        const preparer = chunkPreparer()
        const request = { repositoryId, repositoryName, encode: snapshots !== undefined, dimensions: embeddings.hashedDimensions!, chunker: options.chunker }
        const prepared = preparer.prepare(request, toPrepare)
        // A failed Worker is replaced for the next import; this one learns of it when the batch's turn comes.
        prepared.catch(() => discardChunkPreparer(preparer))
        preparing.push({ files: toPrepare, prepared })
        toPrepare = []
        toPrepareChars = 0
      }
      // A file chunked and embedded on this thread, in a batch applied in order.
      const indexHere = async (file: PreparationRequest['files'][number]) => {
        const pieces = chunkFile(file.path, file.content, file.language, options.chunker)
        batch.push({ repositoryId, repositoryName, path: file.path, language: file.language, chunks: pieces.map((piece) => ({ ...piece, vector: new Float32Array(0) })) })
        batchChunks += pieces.length
        if (batchChunks >= embedBatchSize) await flush()
        else await giveWay()
      }
      const insertPrepared = async () => {
        const { files: sent, prepared } = preparing.shift()!
        const ready = await prepared.catch((error) => {
          if (onWorker) logger.warn('code index: the chunk preparation worker failed; indexing on the event loop', { err: error })
          onWorker = false
          return undefined
        })
        if (!ready) {
          for (const file of sent) await indexHere(file)
          return
        }
        // Files batched here after a failure go first, so files are applied in the order given.
        if (batch.length > 0) await flush()
        signal?.throwIfAborted()
        for (const [i, file] of sent.entries()) {
          const { chunks: fileChunks, encoded } = ready.file(i)
          apply(org, { kind: 'file', file: { repositoryId, repositoryName, path: file.path, language: file.language, chunks: fileChunks, encoded } })
          files++
          chunks += fileChunks.length
          await giveWay()
        }
        input.onProgress?.({ filesIndexed: files, chunksIndexed: chunks })
      }
      for await (const file of input.files) {
        signal?.throwIfAborted()
        const path = indexPath(file.path)
        const language = file.language ?? languageOfPath(path)
        if (onWorker) {
          toPrepare.push({ path, content: file.content, language })
          toPrepareChars += file.content.length
          if (toPrepareChars >= PREPARE_BATCH_CHARS) {
            sendToWorker()
            if (preparing.length >= PREPARE_IN_FLIGHT) await insertPrepared()
          }
          continue
        }
        // The Worker failed: what was sent to it, and what waited to be, goes first.
        while (preparing.length > 0) await insertPrepared()
        const waited = toPrepare
        toPrepare = []
        for (const earlier of waited) await indexHere(earlier)
        await indexHere({ path, content: file.content, language })
      }
      if (batch.length > 0) await flush()
      if (toPrepare.length > 0) sendToWorker()
      while (preparing.length > 0) await insertPrepared()
      if (input.removedPaths?.length) apply(org, { kind: 'removePaths', repositoryId, paths: input.removedPaths.map(indexPath) })
      if (input.commit) apply(org, { kind: 'commit', repositoryId, commit: input.commit, embeddings: embeddings.id })
      // Saved before answering: the importer records the commit as indexed next, and a crash after that
      // must not leave an index older than the record.
      if (snapshots) await save(org)
      learnMeaning(org)
      return { files, chunks }
    },

    async removeRepository(orgId, repositoryId) {
      const org = await state(orgId)
      await refresh(org, true)
      apply(org, { kind: 'removeRepository', repositoryId })
      learnMeaning(org)
    },

    async meaningLearnt(orgId) {
      const org = await state(orgId)
      while (org.learning) await org.learning
    },

    async indexedCommit(orgId, repositoryId) {
      const org = await state(orgId)
      await refresh(org, true)
      const record = org.index.repository(repositoryId)
      if (!record || record.embeddings !== embeddings.id) return undefined
      // Vectors of another length than the index's cannot be searched together with them.
      if (record.chunks > 0 && record.dimensions !== org.index.vectors?.dimensions) return undefined
      return record.commit
    },

    async search(scope, query): Promise<CodeSearchResult[]> {
      const { text, mode, limit, filter } = normaliseQuery(query)
      const org = await state(scope.orgId)
      // A search answers from what this process has when the database cannot say whether it is current.
      await refresh(org, false).catch((error) => logger.warn('code index version check failed', { orgId: scope.orgId, err: error }))
      // The model writes while the question is embedded.
      const expansion = options.expandQuery && query.expand !== false ? options.expandQuery(text, scope.userId === undefined ? undefined : { orgId: scope.orgId, userId: scope.userId }) : undefined
      const vector = mode === 'text' ? undefined : await queryVector(text)
      const code = await expansion
      const codeVector = code !== undefined && mode !== 'text' ? await queryVector(code) : undefined
      // Read after the awaits: a refresh may have swapped the index.
      const index = org.index
      // A search of a large index takes several milliseconds: other requests run between its steps rather than wait
      // for all of it, and indexing waits until it ends (SEARCH_PRIORITY_MS). Should the index change meanwhile, the
      // slots found so far may name other chunks: the ranking is done again, at once.
      const giveWay = timeSlices(options.searchSliceMs ?? SEARCH_SLICE_MS)
      const changeCount = index.changeCount
      const ranking = () => rankingSteps(index, { text, vector, code, codeVector, mode, filter, limit })
      let ranked: ScoredSlot[] | undefined
      searches.started()
      try {
        const steps = ranking()
        let step = steps.next()
        while (!step.done) {
          await giveWay()
          if (index.changeCount !== changeCount) break
          step = steps.next()
        }
        if (step.done) ranked = step.value
      } finally {
        searches.ended()
      }
      ranked ??= toEnd(ranking())
      const terms = snippetTerms(text)
      return ranked.slice(0, limit).map(({ slot, score }) => {
        const chunk = index.chunk(slot)!
        return {
          repositoryId: chunk.repositoryId,
          repositoryName: chunk.repositoryName,
          path: chunk.path,
          language: chunk.languageName || undefined,
          startLine: chunk.startLine,
          endLine: chunk.endLine,
          snippet: buildSnippet(chunk.content, terms),
          score: Math.round(score * 10_000) / 10_000,
        }
      })
    },

    async close() {
      if (closed) return
      closed = true
      // A closed index takes no more changes: a space still being learnt for it would go unused.
      closing.abort(new Error('the code index is closed'))
      const orgs = await Promise.allSettled([...states.values()])
      for (const result of orgs) {
        if (result.status !== 'fulfilled') continue
        const org = result.value
        clearTimeout(org.timer)
        if (snapshots && org.pending.length > 0) await save(org).catch(() => undefined)
        await org.queue
      }
      snapshots?.close?.()
    },
  }
}
