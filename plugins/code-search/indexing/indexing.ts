/**
 * Indexing: an import's files become chunks with vectors, applied to the organisation's index in the order given,
 * and the commit they are at is recorded; removing a repository drops its chunks and its record.
 *
 * Chunking, offline embedding and inserting never wait on I/O: the work is cut into slices of a few milliseconds,
 * other requests run between them, and searches under way go first. A large import's files go to the preparation
 * Worker in batches: while it prepares some, the event loop inserts those it prepared before.
 */
import type { Logger } from '../../../src/log.ts'
import { type InProgress, timeSlices } from '../../../src/time-slices.ts'
import type { EmbeddingProvider } from '../embeddings/index.ts'
import type { FileChunks, IndexLifecycle, OrgState } from '../index/index.ts'
import { PREPARE_BATCH_CHARS, PREPARE_IN_FLIGHT, REMOVAL_BATCH_CHARS, REMOVAL_BATCH_CHUNKS, SEARCH_PRIORITY_MS } from '../tuning.ts'
import { renewVocabulary } from '../terms/index.ts'
import type { IndexFilesInput, RepositoryFile } from '../types.ts'
import { chunkFile, type ChunkerOptions } from './chunker.ts'
import { languageOfPath } from './languages.ts'
import { chunkPreparer, discardChunkPreparer, holdChunkPreparer, type PreparationRequest, type PreparedBatch } from './preparation.ts'

export interface IndexingOptions {
  embeddings: EmbeddingProvider
  lifecycle: IndexLifecycle
  logger: Logger
  /** Chunks embedded per call. */
  embedBatchSize: number
  /** Bytes of files from which an import is prepared on the Worker; Infinity never. */
  prepareInWorkerFrom: number
  /** Milliseconds of indexing between two turns of the event loop. */
  indexSliceMs: number
  chunker: ChunkerOptions | undefined
  /** Searches under way, which indexing waits for. */
  searches: InProgress
}

type FileToPrepare = PreparationRequest['files'][number]

/** Imports under way in this process, of any organisation: the vocabulary is renewed once there are none. */
let importsRunning = 0

/** Indexes the import's files, removes its removed paths, records its commit, and answers once that is saved. */
export async function indexFiles(options: IndexingOptions, input: IndexFilesInput): Promise<{ files: number; chunks: number }> {
  const { lifecycle, embeddings } = options
  if (lifecycle.closed) throw new Error('the code index is closed')
  const { orgId, repositoryId, signal } = input
  if (!orgId || !repositoryId) throw new Error('indexFiles needs an orgId and a repositoryId')
  const org = await lifecycle.org(orgId)
  // Changes build on the newest snapshot, so saving them does not undo another process's work.
  await lifecycle.refresh(org, true)
  const run = new IndexingRun(options, org, input)
  importsRunning++
  try {
    for await (const file of input.files) {
      signal?.throwIfAborted()
      await run.add(file)
    }
    await run.finish()
    if (input.removedPaths?.length) await removePaths(options, org, repositoryId, input.removedPaths.map(indexPath))
    if (input.commit) lifecycle.apply(org, { kind: 'commit', repositoryId, commit: input.commit, embeddings: embeddings.id })
    await run.sweep()
    await run.trimPostings()
  } finally {
    run.release()
    if (--importsRunning === 0) renewVocabulary()
  }
  // Saved before answering: the importer records the commit as indexed next, and a crash after that
  // must not leave an index older than the record.
  if (lifecycle.savesSnapshots) await lifecycle.save(org)
  lifecycle.learnMeaning(org)
  return { files: run.files, chunks: run.chunks }
}

/** Drops every chunk of the repository and its record. */
export async function removeRepository(options: IndexingOptions, orgId: string, repositoryId: string): Promise<void> {
  const { lifecycle } = options
  const org = await lifecycle.org(orgId)
  await lifecycle.refresh(org, true)
  // Its files first, between other work, then its record (and anything indexed meanwhile).
  await removePaths(options, org, repositoryId, org.index.pathsOf(repositoryId))
  lifecycle.apply(org, { kind: 'removeRepository', repositoryId })
  await lifecycle.sweep(
    org,
    timeSlices(options.indexSliceMs, () => options.searches.finished(SEARCH_PRIORITY_MS)),
  )
  // Removing a chunk counts its terms again (to find its postings): as many words as an import of it.
  if (importsRunning === 0) renewVocabulary()
  lifecycle.learnMeaning(org)
}

/**
 * Removes the repository's files at `paths`, in changes of at most REMOVAL_BATCH_CHUNKS chunks and REMOVAL_BATCH_CHARS
 * characters with other work between them: as one change, a large repository's removal would hold the event loop
 * for as long as all its chunks take. A file larger than that goes a piece at a time too, its change recorded once
 * the last piece is gone.
 */
async function removePaths(options: IndexingOptions, org: OrgState, repositoryId: string, paths: readonly string[]): Promise<void> {
  const giveWay = timeSlices(options.indexSliceMs, () => options.searches.finished(SEARCH_PRIORITY_MS))
  const fits = (chunks: number, chars: number) => chunks <= REMOVAL_BATCH_CHUNKS && chars <= REMOVAL_BATCH_CHARS
  let batch: string[] = []
  let chunks = 0
  let chars = 0
  const removeBatch = async () => {
    options.lifecycle.apply(org, { kind: 'removePaths', repositoryId, paths: batch })
    batch = []
    chunks = 0
    chars = 0
    await giveWay()
  }
  for (const path of paths) {
    // The index may be replaced by a newer snapshot between two changes: what is left is taken from the one in use.
    let size = org.index.sizeAt(repositoryId, path)
    while (!fits(size.chunks, size.chars)) {
      org.index.removeSomeChunks(repositoryId, path, REMOVAL_BATCH_CHUNKS, REMOVAL_BATCH_CHARS)
      await giveWay()
      size = org.index.sizeAt(repositoryId, path)
    }
    if (batch.length > 0 && !fits(chunks + size.chunks, chars + size.chars)) await removeBatch()
    batch.push(path)
    chunks += size.chunks
    chars += size.chars
  }
  if (batch.length > 0) await removeBatch()
}

/** The commit whose files the index holds for the repository, when its record still matches what it holds. */
export async function indexedCommit(options: IndexingOptions, orgId: string, repositoryId: string): Promise<string | undefined> {
  const { lifecycle, embeddings } = options
  const org = await lifecycle.org(orgId)
  await lifecycle.refresh(org, true)
  const record = org.index.repository(repositoryId)
  if (!record || record.embeddings !== embeddings.id) return undefined
  // Vectors of another length than the index's cannot be searched together with them.
  if (record.chunks > 0 && record.dimensions !== org.index.vectors?.dimensions) return undefined
  return record.commit
}

/** A repository path as the index keys it: forward slashes, relative, no `.` or `..` segments. */
function indexPath(path: string): string {
  const clean = path.replace(/\\/g, '/').replace(/^(\.\/)+/, '')
  if (clean === '' || clean.startsWith('/') || clean.split('/').some((part) => part === '..' || part === '.' || part === ''))
    throw new Error(`not a relative repository path: ${JSON.stringify(path)}`)
  return clean
}

/** One import's files, prepared here or on the Worker and applied in the order they came. */
class IndexingRun {
  files = 0
  chunks = 0
  /** Files chunked on this thread and waiting to be embedded together. */
  private batch: FileChunks[] = []
  private batchChunks = 0
  /** Whether files go to the Worker: a large import's, until the Worker fails. */
  private onWorker: boolean
  private toPrepare: FileToPrepare[] = []
  private toPrepareChars = 0
  private readonly preparing: { files: FileToPrepare[]; prepared: Promise<PreparedBatch> }[] = []
  private readonly giveWay: () => Promise<void>
  /** Lets the preparation Worker go once this run is done with it. */
  readonly release: () => void

  constructor(
    private readonly options: IndexingOptions,
    private readonly org: OrgState,
    private readonly input: IndexFilesInput,
  ) {
    this.onWorker = (input.totalBytes ?? 0) >= options.prepareInWorkerFrom
    this.release = this.onWorker ? holdChunkPreparer() : () => {}
    this.giveWay = timeSlices(options.indexSliceMs, () => options.searches.finished(SEARCH_PRIORITY_MS))
  }

  /** Takes the import's next file. */
  async add(file: RepositoryFile): Promise<void> {
    const path = indexPath(file.path)
    const language = file.language ?? languageOfPath(path)
    if (this.onWorker) {
      this.toPrepare.push({ path, content: file.content, language })
      this.toPrepareChars += file.content.length
      if (this.toPrepareChars >= PREPARE_BATCH_CHARS) {
        this.sendToWorker()
        if (this.preparing.length >= PREPARE_IN_FLIGHT) await this.insertPrepared()
      }
      return
    }
    // The Worker failed: what was sent to it, and what waited to be, goes first.
    while (this.preparing.length > 0) await this.insertPrepared()
    const waited = this.toPrepare
    this.toPrepare = []
    for (const earlier of waited) await this.indexHere(earlier)
    await this.indexHere({ path, content: file.content, language })
  }

  /** Indexes every file still batched here, waiting to be sent or sent to the Worker. */
  async finish(): Promise<void> {
    if (this.batch.length > 0) await this.flush()
    if (this.toPrepare.length > 0) this.sendToWorker()
    while (this.preparing.length > 0) await this.insertPrepared()
    // A batch the Worker could not prepare was indexed here: its files are batched, not yet applied.
    if (this.batch.length > 0) await this.flush()
  }

  /** Sweeps the postings of the chunks this import replaced or removed, between other work as the import went. */
  sweep(): Promise<void> {
    return this.options.lifecycle.sweep(this.org, this.giveWay)
  }

  /** Gives back the room the index's postings kept to grow during the import, between other work. */
  async trimPostings(): Promise<void> {
    for (const _ of this.org.index.trimPostings()) await this.giveWay()
  }

  /** A file chunked and embedded on this thread, in a batch applied in order. */
  private async indexHere(file: FileToPrepare): Promise<void> {
    const { repositoryId, repositoryName } = this.input
    const pieces = chunkFile(file.path, file.content, file.language, this.options.chunker)
    this.batch.push({
      repositoryId,
      repositoryName,
      path: file.path,
      language: file.language,
      chunks: pieces.map((piece) => ({ ...piece, vector: new Float32Array(0) })),
    })
    this.batchChunks += pieces.length
    if (this.batchChunks >= this.options.embedBatchSize) await this.flush()
    else await this.giveWay()
  }

  /** Embeds the batch's chunks in one call and applies its files. */
  private async flush(): Promise<void> {
    const { signal } = this.input
    const texts = this.batch.flatMap((file) => file.chunks.map((chunk) => chunk.content))
    const vectors = texts.length > 0 ? await this.options.embeddings.embed(texts, { signal }) : []
    signal?.throwIfAborted()
    await this.giveWay()
    let at = 0
    for (const file of this.batch) {
      for (const chunk of file.chunks) chunk.vector = vectors[at++]!
      this.options.lifecycle.apply(this.org, { kind: 'file', file })
      this.files++
      this.chunks += file.chunks.length
      await this.giveWay()
    }
    this.batch = []
    this.batchChunks = 0
    this.input.onProgress?.({ filesIndexed: this.files, chunksIndexed: this.chunks })
  }

  private sendToWorker(): void {
    const { embeddings, lifecycle, chunker } = this.options
    const { repositoryId, repositoryName } = this.input
    const preparer = chunkPreparer()
    const request = { repositoryId, repositoryName, encode: lifecycle.savesSnapshots, dimensions: embeddings.hashedDimensions!, chunker }
    const prepared = preparer.prepare(request, this.toPrepare)
    // A failed Worker is replaced for the next import; this one learns of it when the batch's turn comes.
    prepared.catch(() => discardChunkPreparer(preparer))
    this.preparing.push({ files: this.toPrepare, prepared })
    this.toPrepare = []
    this.toPrepareChars = 0
  }

  /** Applies the Worker's oldest batch; should the Worker have failed, indexes its files here instead. */
  private async insertPrepared(): Promise<void> {
    const { repositoryId, repositoryName, signal } = this.input
    const { files: sent, prepared } = this.preparing.shift()!
    const ready = await prepared.catch((error) => {
      if (this.onWorker) this.options.logger.warn('code index: the chunk preparation worker failed; indexing on the event loop', { err: error })
      this.onWorker = false
      return undefined
    })
    if (!ready) {
      for (const file of sent) await this.indexHere(file)
      return
    }
    // Files batched here after a failure go first, so files are applied in the order given.
    if (this.batch.length > 0) await this.flush()
    signal?.throwIfAborted()
    for (const [i, file] of sent.entries()) {
      const { chunks: fileChunks, encoded } = ready.file(i)
      this.options.lifecycle.apply(this.org, {
        kind: 'file',
        file: { repositoryId, repositoryName, path: file.path, language: file.language, chunks: fileChunks, encoded },
      })
      this.files++
      this.chunks += fileChunks.length
      await this.giveWay()
    }
    this.input.onProgress?.({ filesIndexed: this.files, chunksIndexed: this.chunks })
  }
}
