/**
 * One organisation's code index in memory: Orama for BM25 full-text search, filters and the stored
 * chunks, and a vector store beside it, both addressed by slot. Everything here is synchronous, so a
 * change is never seen half-applied.
 */
import { insert, load, remove, save, search, type RawData } from '@orama/orama'
import { countedTermsOf, primeCountedTerms, weightedQueryTerms, type CountedTerms } from '../terms/index.ts'
import { CHUNK_BM25, FIELD_BOOST, FILE_BM25, MEANING_SHARE, REPOSITORY_FIT } from '../tuning.ts'
import { nearestSteps, runToEnd, VectorStore, type Meaning, type MeaningBatch, type ScoredSlot, type ScoringPart, type VectorQuery } from '../vectors/index.ts'
import {
  countInRepository,
  createChunkDatabase,
  loadChunkDatabase,
  postingsSweepPending,
  repositoryLength,
  repositoryLikelihoods,
  sweepPostings,
  trimPostings,
  uncountInRepository,
  wholeFileScores,
  type ChunkDatabase,
  type ChunkDocument,
  type PreparedTables,
} from './orama.ts'

/** A chunk ready to store: its place, its text and its vector. */
export interface IndexedChunk {
  startLine: number
  endLine: number
  content: string
  symbols: string[]
  vector: Float32Array
  /** The content's index terms, when counted already (on the preparation Worker). */
  counted?: CountedTerms
}

export interface FileChunks {
  repositoryId: string
  repositoryName: string
  path: string
  /** The importer's language name, or undefined. */
  language: string | undefined
  chunks: IndexedChunk[]
  /** This file's change as encodeChange writes it, when encoded already (on the preparation Worker). */
  encoded?: Uint8Array
}

/** What the index holds of one repository, recorded when an import finishes indexing a commit. */
export interface RepositoryRecord {
  commit: string
  /** EmbeddingProvider.id of the chunks' vectors, and their length (0 when the repository has no chunk). */
  embeddings: string
  dimensions: number
  /** The repository's chunks at that moment; any other count means the index changed without a record. */
  chunks: number
}

/** What a search may look at. Absent fields do not filter. */
export interface ChunkFilter {
  repositoryIds?: ReadonlySet<string>
  /** Lower-case language names. */
  languages?: ReadonlySet<string>
  pathPrefix?: string
}

export class OrgIndex {
  private readonly db: ChunkDatabase
  /** Created with the first vector, whose length every later one must have. */
  private vectorStore: VectorStore | undefined
  private readonly chunks: (ChunkDocument | undefined)[] = []
  /** Slots free to take: no posting list holds an entry of their last chunk. */
  private readonly freeSlots: number[] = []
  /**
   * Slots given up whose last chunk's entries may still be in the postings, free once swept (sweepRemoved): an id
   * taken again before then makes the postings sweep every list touched since, at once (PostingLists.add).
   */
  private readonly releasedSlots: number[] = []
  /** repositoryId -> path -> slots of that file's chunks. */
  private readonly files = new Map<string, Map<string, number[]>>()
  private readonly repositories: Map<string, RepositoryRecord>
  private meaning: Meaning | undefined
  /** changeCount when the source of the space in use was read; undefined until a space is learnt or found impossible. */
  private meaningAt: number | undefined
  /** changeCount when the source of the space being learnt was read. */
  private sourceAt = 0
  /** Slots changed while a space is being learnt: their vectors in it are of older text, dropped when it arrives. */
  private changedWhileLearning: Set<number> | undefined
  /** Chunks stored or removed, ever. */
  private changes = 0
  /** changeCount when a chunk was last stored in or taken out of each slot (0: not since this index was made). */
  private slotChangedAt = new Float64Array(0)

  constructor(restored?: { db: ChunkDatabase; vectors: VectorStore | undefined; repositories?: [string, RepositoryRecord][]; untracked?: boolean }) {
    this.db = restored?.db ?? createChunkDatabase()
    this.vectorStore = restored?.vectors
    this.repositories = new Map(restored?.repositories)
    if (restored && !restored.untracked) {
      for (const doc of Object.values(this.storedDocuments())) if (doc) this.track(doc)
      this.findFreeSlots()
    }
  }

  private findFreeSlots(): void {
    for (let slot = 0; slot < this.chunks.length; slot++) if (!this.chunks[slot]) this.freeSlots.push(slot)
  }

  get vectors(): VectorStore | undefined {
    return this.vectorStore
  }

  get chunkCount(): number {
    return (this.db.data.docs as unknown as { count: number }).count
  }

  /** Counts every chunk stored or removed: a search that gave way in between sees whether its slots still hold. */
  get changeCount(): number {
    return this.changes
  }

  /** Whether the slot holds what it held when changeCount was `count`. */
  unchangedSince(slot: number, count: number): boolean {
    return (this.slotChangedAt[slot] ?? 0) <= count
  }

  /**
   * Whether the term space should be learnt (again): never learnt, or chunks changed since. Always from the whole
   * index as it is, so that a process that loads it later learns the same space and answers the same.
   */
  get meaningStale(): boolean {
    if (this.changedWhileLearning) return false
    return this.meaningAt === undefined ? this.chunkCount > 0 : this.changes !== this.meaningAt
  }

  /**
   * Every chunk's text, for learning a space, in batches of about `maxChars` characters read as they are asked
   * for, so a large index is read between other work; changes from the first batch on are noted until
   * adoptMeaning.
   */
  *meaningSource(maxChars: number): Generator<MeaningBatch> {
    this.changedWhileLearning = new Set()
    this.sourceAt = this.changes
    let slots: number[] = []
    let repositoryIds: string[] = []
    let contents: string[] = []
    let chars = 0
    for (let slot = 0; slot < this.chunks.length; slot++) {
      const doc = this.chunks[slot]
      if (!doc) continue
      slots.push(slot)
      repositoryIds.push(doc.repositoryId)
      contents.push(doc.content)
      chars += doc.content.length
      if (chars < maxChars) continue
      yield { slots: Int32Array.from(slots), repositoryIds, contents }
      slots = []
      repositoryIds = []
      contents = []
      chars = 0
    }
    if (slots.length > 0) yield { slots: Int32Array.from(slots), repositoryIds, contents }
  }

  /**
   * Takes the space learnt from meaningSource's chunks, with their vectors in it (none when there was too little
   * code to learn from). Chunks changed since have no vector in it until the next space, learnt right after:
   * embedding thousands of them here would hold up the event loop.
   */
  adoptMeaning(learnt: Meaning | undefined): void {
    const changed = this.changedWhileLearning ?? new Set<number>()
    this.changedWhileLearning = undefined
    this.meaning = learnt
    this.meaningAt = this.sourceAt
    if (learnt) for (const slot of changed) learnt.clear(slot)
  }

  /** Forgets a space being learnt (it failed): the index stays stale, and the next one starts from a fresh source. */
  abandonMeaning(): void {
    this.changedWhileLearning = undefined
  }

  private noteChange(slot: number): void {
    this.changes++
    if (slot >= this.slotChangedAt.length) {
      const wider = new Float64Array(Math.max(slot + 1, this.slotChangedAt.length * 2, 1024))
      wider.set(this.slotChangedAt)
      this.slotChangedAt = wider
    }
    this.slotChangedAt[slot] = this.changes
    this.changedWhileLearning?.add(slot)
  }

  chunk(slot: number): ChunkDocument | undefined {
    return this.chunks[slot]
  }

  /** Replaces every chunk of the file (none left when `chunks` is empty). Answers how many were stored. */
  replaceFile(file: FileChunks): number {
    // Checked before anything changes: a refused file leaves the index as it was.
    const dimensions = this.vectorStore?.dimensions ?? file.chunks[0]?.vector.length
    for (const chunk of file.chunks)
      if (chunk.vector.length !== dimensions) throw new Error(`vector has ${chunk.vector.length} dimensions, the index ${dimensions}`)
    // Before this file's own chunks are released, which leaves a sweep pending again.
    if (this.releasedSlots.length > 0 && !this.sweepPending) this.freeReleasedSlots()
    this.removePath(file.repositoryId, file.path)
    const slots: number[] = []
    // One string per file, not per chunk.
    const language = file.language ? file.language.toLowerCase() : ''
    for (const chunk of file.chunks) {
      const slot = this.freeSlots.pop() ?? this.chunks.length
      const doc: ChunkDocument = {
        id: String(slot),
        slot,
        repositoryId: file.repositoryId,
        repositoryName: file.repositoryName,
        path: file.path,
        language,
        languageName: file.language ?? '',
        startLine: chunk.startLine,
        endLine: chunk.endLine,
        pathText: file.path,
        symbols: chunk.symbols.join(' '),
        content: chunk.content,
      }
      this.vectorStore ??= new VectorStore(chunk.vector.length)
      this.vectorStore.set(slot, chunk.vector)
      // Counted once for both the full-text index and the term space.
      const counted = chunk.counted ?? countedTermsOf(doc.content)
      primeCountedTerms(doc.content, counted)
      this.meaning?.set(slot, doc.repositoryId, counted)
      this.noteChange(slot)
      insert(this.db, doc)
      this.track(doc)
      slots.push(slot)
    }
    return slots.length
  }

  /**
   * Whether removed chunks' entries are still in the full-text postings: every read skips them already, and
   * sweepRemoved drops them.
   */
  get sweepPending(): boolean {
    return postingsSweepPending(this.db)
  }

  /** Drops removed chunks' entries from the full-text postings, a step at a time; changes may come between steps. */
  sweepRemoved(): Generator<void> {
    return sweepPostings(this.db)
  }

  /** Gives back the room the full-text postings keep to grow, a step at a time (once an import is done adding). */
  trimPostings(): Generator<void> {
    return trimPostings(this.db)
  }

  removePath(repositoryId: string, path: string): void {
    const paths = this.files.get(repositoryId)
    const slots = paths?.get(path)
    if (!paths || !slots) return
    for (const slot of slots) this.release(slot)
    this.forgetFile(repositoryId, path)
  }

  /**
   * Removes the file's last chunks, at most `maxChunks` of them and `maxChars` characters of content (one at least):
   * a large file taken out over several turns (see removePaths in indexing.ts); the file's removal as a change then
   * removes the rest.
   */
  removeSomeChunks(repositoryId: string, path: string, maxChunks: number, maxChars: number): void {
    const slots = this.files.get(repositoryId)?.get(path)
    if (!slots) return
    let chars = 0
    for (let n = 0; n < maxChunks && slots.length > 0; n++) {
      chars += this.chunks[slots.at(-1)!]?.content.length ?? 0
      if (n > 0 && chars > maxChars) break
      this.release(slots.pop()!)
    }
    if (slots.length === 0) this.forgetFile(repositoryId, path)
  }

  /** Forgets a file whose chunks are all released, and its repository once it has no file left. */
  private forgetFile(repositoryId: string, path: string): void {
    const paths = this.files.get(repositoryId)
    paths?.delete(path)
    if (paths?.size === 0) this.files.delete(repositoryId)
  }

  /** The paths the index holds chunks of for the repository. */
  pathsOf(repositoryId: string): string[] {
    return [...(this.files.get(repositoryId)?.keys() ?? [])]
  }

  /** How many chunks the index holds of the file, and their characters of content. */
  sizeAt(repositoryId: string, path: string): { chunks: number; chars: number } {
    const slots = this.files.get(repositoryId)?.get(path) ?? []
    let chars = 0
    for (const slot of slots) chars += this.chunks[slot]?.content.length ?? 0
    return { chunks: slots.length, chars }
  }

  removeRepository(repositoryId: string): void {
    this.repositories.delete(repositoryId)
    for (const path of this.pathsOf(repositoryId)) this.removePath(repositoryId, path)
  }

  /** Records that the repository's files are those of `commit`, with vectors of `embeddings`. */
  recordCommit(repositoryId: string, commit: string, embeddings: string): void {
    this.repositories.set(repositoryId, { commit, embeddings, dimensions: this.vectorStore?.dimensions ?? 0, chunks: this.repositoryChunks(repositoryId) })
  }

  /** The repository's record, when the index still holds exactly what was recorded. */
  repository(repositoryId: string): RepositoryRecord | undefined {
    const record = this.repositories.get(repositoryId)
    return record && record.chunks === this.repositoryChunks(repositoryId) ? record : undefined
  }

  private repositoryChunks(repositoryId: string): number {
    let count = 0
    for (const slots of this.files.get(repositoryId)?.values() ?? []) count += slots.length
    return count
  }

  /** BM25 over symbols, path and content; the best `k` chunks passing the filter. */
  searchText(query: string, filter: ChunkFilter, k: number): ScoredSlot[] {
    const where = this.whereClause(filter)
    if (where === null) return []
    const results = search(this.db, {
      term: query,
      properties: ['symbols', 'pathText', 'content'],
      boost: FIELD_BOOST,
      relevance: CHUNK_BM25,
      limit: k,
      ...(where ? { where } : {}),
    }) as { hits: { document: ChunkDocument; score: number }[] }
    return results.hits.map((hit) => ({ slot: hit.document.slot, score: hit.score }))
  }

  /**
   * For each chunk of `slots`, the BM25 score of its whole file for the query (its chunks' content together, and
   * the names they declare), scaled so that the best of these files scores 1; 0 for a file without the query's words.
   */
  wholeFileScores(query: string, slots: readonly number[]): Map<number, number> {
    const fileNumbers = new Map<string, number>()
    const fileOfSlot = new Map<number, number>()
    const candidates = new Map<string, number>()
    const repositoryOfFile: string[] = []
    for (const slot of slots) {
      const chunk = this.chunks[slot]
      if (!chunk) continue
      const key = `${chunk.repositoryId}\0${chunk.path}`
      let file = fileNumbers.get(key)
      if (file === undefined) {
        fileNumbers.set(key, (file = fileNumbers.size))
        repositoryOfFile.push(chunk.repositoryId)
        for (const other of this.files.get(chunk.repositoryId)?.get(chunk.path) ?? []) candidates.set(String(other), file)
      }
      fileOfSlot.set(slot, file)
    }
    // A file's length is weighed against the files of its own repository.
    const averageOf = new Map<string, number>()
    const averageFileLengths = Float64Array.from(repositoryOfFile, (repositoryId) => {
      let average = averageOf.get(repositoryId)
      if (average === undefined) averageOf.set(repositoryId, (average = this.averageFileLength(repositoryId)))
      return average
    })
    const scores = wholeFileScores(this.db, query, candidates, fileNumbers.size, averageFileLengths, FILE_BM25)
    const best = Math.max(0, ...scores)
    const scaled = new Map<number, number>()
    for (const [slot, file] of fileOfSlot) scaled.set(slot, best > 0 ? scores[file]! / best : 0)
    return scaled
  }

  /**
   * How much each repository's chunks weigh for the question, by how well the repository's code as a whole says its
   * words (repositoryLikelihoods): 1 for the best, less for the others. Empty (all weigh 1) with a single repository.
   */
  repositoryFit(query: string): Map<string, number> {
    const likelihoods = repositoryLikelihoods(this.db, query, REPOSITORY_FIT.smoothing)
    const best = Math.max(...likelihoods.values())
    const fit = new Map<string, number>()
    for (const [repositoryId, likelihood] of likelihoods) fit.set(repositoryId, Math.exp(REPOSITORY_FIT.sharpness * (likelihood - best)))
    return fit
  }

  /** Words of content in an average file of the repository. */
  private averageFileLength(repositoryId: string): number {
    return repositoryLength(this.db, repositoryId, 'content') / Math.max(1, this.files.get(repositoryId)?.size ?? 0)
  }

  /**
   * The `k` chunks whose vectors are nearest `vector`, among those passing the filter; with a learnt term space,
   * also by their similarity there to `question`.
   */
  searchVector(vector: Float32Array, filter: ChunkFilter, k: number, question?: string): ScoredSlot[] {
    return runToEnd(this.searchVectorSteps(vector, filter, k, question))
  }

  /** searchVector a block of slots at a time (nearestSteps). */
  *searchVectorSteps(vector: Float32Array, filter: ChunkFilter, k: number, question?: string): Generator<void, ScoredSlot[]> {
    const { repositoryIds, languages, pathPrefix } = filter
    const chunks = this.chunks
    if (!this.vectorStore) return []
    if (vector.length !== this.vectorStore.dimensions)
      throw new Error(`the query vector has ${vector.length} dimensions, the index ${this.vectorStore.dimensions}`)
    const parts: (VectorQuery | ScoringPart)[] = [{ store: this.vectorStore, query: vector, weight: 1 }]
    const meaning = this.meaning
    const questions = meaning && question !== undefined ? meaning.questionVectors(weightedQueryTerms(question)) : undefined
    if (meaning && questions) {
      parts[0]!.weight = 1 - MEANING_SHARE
      parts.push({
        slots: meaning.store.slots,
        weight: MEANING_SHARE,
        addScoreSteps: (weight, sums) => meaning.addScoreSteps(questions, weight, sums, repositoryIds),
      })
    }
    return yield* nearestSteps(parts, k, (slot) => {
      const doc = chunks[slot]
      return (
        doc !== undefined &&
        (!repositoryIds || repositoryIds.has(doc.repositoryId)) &&
        (!languages || languages.has(doc.language)) &&
        (!pathPrefix || doc.path.startsWith(pathPrefix))
      )
    })
  }

  /** Orama's state and the repository records, as JSON-safe data. */
  saveDatabase(): RawData {
    return { ...save(this.db), repositories: [...this.repositories] } as RawData
  }

  static restore(raw: RawData, vectors: VectorStore | undefined): OrgIndex {
    const db = createChunkDatabase()
    load(db, raw)
    // Snapshots saved before repositories were recorded have none: their repositories are indexed again in full.
    const repositories = (raw as { repositories?: [string, RepositoryRecord][] }).repositories
    return new OrgIndex({ db, vectors, repositories })
  }

  /**
   * As restore, with the stored chunks tracked between turns of the event loop (`giveWay`, see time-slices.ts):
   * the same index, loaded without holding the loop for the whole of it. Nothing sees the index before it resolves.
   * With `prepared` (tables built as the snapshot was handed over), no step goes over every chunk at once.
   */
  static async restoreGivingWay(raw: RawData, vectors: VectorStore | undefined, giveWay: () => Promise<void>, prepared?: PreparedTables): Promise<OrgIndex> {
    const db = createChunkDatabase()
    loadChunkDatabase(db, raw, prepared)
    await giveWay()
    const repositories = (raw as { repositories?: [string, RepositoryRecord][] }).repositories
    const index = new OrgIndex({ db, vectors, repositories, untracked: true })
    // Stored chunks are keyed by internal id, from 1: in that order, as Object.values would give them.
    const stored = index.storedDocuments()
    const ids = (db as unknown as { internalDocumentIDStore: { internalIdToId: string[] } }).internalDocumentIDStore.internalIdToId.length
    for (let internalId = 1; internalId <= ids; internalId++) {
      const doc = stored[internalId]
      if (doc) index.track(doc)
      await giveWay()
    }
    index.findFreeSlots()
    return index
  }

  /**
   * Orama's `where` for the filter: undefined when nothing filters, null when nothing can match (a path
   * prefix no file has). The prefix becomes the list of matching paths, which Orama filters as an enum.
   */
  private whereClause(filter: ChunkFilter): Record<string, { in: string[] }> | undefined | null {
    const where: Record<string, { in: string[] }> = {}
    if (filter.repositoryIds) where.repositoryId = { in: [...filter.repositoryIds] }
    if (filter.languages) where.language = { in: [...filter.languages] }
    if (filter.pathPrefix !== undefined) {
      const prefix = filter.pathPrefix
      const paths = new Set<string>()
      for (const [repositoryId, files] of this.files) {
        if (filter.repositoryIds && !filter.repositoryIds.has(repositoryId)) continue
        for (const path of files.keys()) if (path.startsWith(prefix)) paths.add(path)
      }
      if (paths.size === 0) return null
      where.path = { in: [...paths] }
    }
    return Object.keys(where).length > 0 ? where : undefined
  }

  private storedDocuments(): Record<string, ChunkDocument | undefined> {
    return (this.db.data.docs as unknown as { docs: Record<string, ChunkDocument | undefined> }).docs
  }

  private track(doc: ChunkDocument): void {
    countInRepository(this.db, doc.id, doc.repositoryId)
    this.chunks[doc.slot] = doc
    let paths = this.files.get(doc.repositoryId)
    if (!paths) this.files.set(doc.repositoryId, (paths = new Map()))
    const slots = paths.get(doc.path)
    if (slots) slots.push(doc.slot)
    else paths.set(doc.path, [doc.slot])
  }

  private release(slot: number): void {
    if (!this.chunks[slot]) return
    uncountInRepository(this.db, String(slot))
    remove(this.db, String(slot))
    this.vectorStore?.clear(slot)
    this.meaning?.clear(slot)
    this.noteChange(slot)
    this.chunks[slot] = undefined
    this.releasedSlots.push(slot)
  }

  private freeReleasedSlots(): void {
    for (const slot of this.releasedSlots) this.freeSlots.push(slot)
    this.releasedSlots.length = 0
  }
}
