/**
 * The Orama database behind one organisation's full-text search: Orama's document store, enum filters
 * (repository, language, path), search pipeline and save/load, with two components of our own through
 * Orama's component API:
 * - a tokenizer that speaks code (see terms/terms.ts);
 * - an index component whose string fields keep an inverted index of term -> (chunk, occurrences), scored
 *   with Orama's BM25 formula and parameters on exact terms. Orama's own string index stores a term
 *   frequency object per document, whose lookups cost close to a microsecond per matching chunk, looks
 *   terms up by copying each posting list with an includes() check per entry (quadratic for a word like
 *   "request", which is in thousands of chunks of code), and drops repeated words, so a word used ten
 *   times weighs as much as one used once. Identifiers are already split into their words, so prefix
 *   expansion is not needed; the vectors cover partial and misspelt words. Its postings are packed into typed
 *   arrays (postings.ts), and its enum fields filter through a column of value numbers (enum-index.ts)
 *   rather than a Set of ids per value: together a kilobyte and more less per chunk.
 */
import { components, create, load, type AnyOrama, type RawData, type Tokenizer } from '@orama/orama'
import { countedTermsOf, countTerms, queryTerms, weightedQueryTerms } from '../terms/index.ts'
import { COMMON_SYNONYM } from '../tuning.ts'
import { EnumIndex, type SavedEnumIndex } from './enum-index.ts'
import { PostingLists } from './postings.ts'

export const chunkSchema = {
  repositoryId: 'enum',
  language: 'enum',
  path: 'enum',
  pathText: 'string',
  symbols: 'string',
  content: 'string',
} as const

/** One chunk as Orama stores it; the fields outside the schema are stored, not indexed. */
export interface ChunkDocument {
  /** The slot number as a string: ids are reused with slots, so Orama's id table stays as small as the index. */
  id: string
  slot: number
  repositoryId: string
  repositoryName: string
  path: string
  /** Lower-case language name for filtering; empty when unknown. */
  language: string
  /** The language as the importer named it; empty when unknown. */
  languageName: string
  startLine: number
  endLine: number
  /** The path again, as a tokenized field (its words rank files whose path matches the query). */
  pathText: string
  symbols: string
  content: string
}

export type ChunkDatabase = AnyOrama

const codeTokenizer: Tokenizer = {
  language: 'english',
  normalizationCache: new Map(),
  tokenize: (raw) => queryTerms(raw),
}

// Orama's index store, typed loosely: its generic signatures do not survive being wrapped.
type IndexStore = {
  sharedInternalDocumentStore: { internalIdToId: string[] }
  avgFieldLength: Record<string, number | undefined>
  fieldLengths: Record<string, Record<number, number | undefined>>
  searchablePropertiesWithTypes: Record<string, string>
  indexes: Record<string, { type: string; node: unknown; isArray: boolean }>
  /** Ours: one inverted index per string field. */
  postings: Record<string, PostingLists>
  repositories: RepositoryStatistics
}

/**
 * Each repository's chunks and, per field, their summed lengths: what a question's fit to each repository
 * (repositoryLikelihoods) and a file's length within its own repository are weighed from.
 */
interface RepositoryStatistics {
  numbers: Map<string, number>
  /** Internal id -> repository number, -1 when not counted. */
  of: Int32Array
  chunks: number[]
  /** Field -> summed length of the field by repository number. */
  lengths: Record<string, number[]>
}

const noRepositories = (): RepositoryStatistics => ({ numbers: new Map(), of: new Int32Array(1024).fill(-1), chunks: [], lengths: {} })

type Database = { data: { index: IndexStore }; internalDocumentIDStore: { idToInternalId: Map<string, number> } }

/** Counts the stored chunk `id` in its repository's statistics (after it is inserted or loaded). */
export function countInRepository(db: ChunkDatabase, id: string, repositoryId: string): void {
  const { data, internalDocumentIDStore } = db as unknown as Database
  const internalId = internalDocumentIDStore.idToInternalId.get(id)
  if (internalId === undefined) return
  const statistics = data.index.repositories
  let number = statistics.numbers.get(repositoryId)
  if (number === undefined) {
    statistics.numbers.set(repositoryId, (number = statistics.chunks.length))
    statistics.chunks.push(0)
  }
  if (internalId >= statistics.of.length) {
    const wider = new Int32Array(Math.max(internalId + 1, statistics.of.length * 2)).fill(-1)
    wider.set(statistics.of)
    statistics.of = wider
  }
  if (statistics.of[internalId] !== -1) return
  statistics.of[internalId] = number
  statistics.chunks[number]!++
  for (const field of stringFields(data.index)) {
    const lengths = (statistics.lengths[field] ??= [])
    lengths[number] = (lengths[number] ?? 0) + (data.index.fieldLengths[field]?.[internalId] ?? 0)
  }
}

/** The summed length of the field over the repository's chunks. */
export function repositoryLength(db: ChunkDatabase, repositoryId: string, field: string): number {
  const statistics = (db as unknown as Database).data.index.repositories
  const number = statistics.numbers.get(repositoryId)
  return number === undefined ? 0 : (statistics.lengths[field]?.[number] ?? 0)
}

/**
 * How well each repository's code as a whole says the question's words: per repository, the mean over the question's
 * terms (by their weight) of the log-probability of the term in the repository's content, smoothed towards the whole
 * index's with `smoothing` words (Dirichlet). Being a probability per word, it favours no repository for its size.
 * Empty with fewer than two repositories, or when no term of the question is in the index.
 */
export function repositoryLikelihoods(db: ChunkDatabase, query: string, smoothing: number): Map<string, number> {
  const index = (db as unknown as Database).data.index
  const { of, chunks, numbers } = index.repositories
  const likelihoods = new Map<string, number>()
  const postings = index.postings.content
  const lengths = index.repositories.lengths.content
  if (!postings || !lengths || !severalRepositories(index)) return likelihoods
  let total = 0
  for (let repository = 0; repository < chunks.length; repository++) if (chunks[repository]! > 0) total += lengths[repository] ?? 0
  const sums = new Float64Array(chunks.length)
  const counts = new Float64Array(chunks.length)
  let weights = 0
  for (const [term, weight] of weightedQueryTerms(query)) {
    if (!postings.has(term)) continue
    counts.fill(0)
    let occurrences = 0
    postings.forEach(term, (id, count) => {
      const repository = of[id]!
      if (repository < 0) return
      counts[repository]! += count
      occurrences += count
    })
    if (occurrences === 0) continue
    const background = occurrences / Math.max(1, total)
    weights += weight
    for (let repository = 0; repository < chunks.length; repository++)
      sums[repository]! += weight * Math.log((counts[repository]! + smoothing * background) / ((lengths[repository] ?? 0) + smoothing))
  }
  if (weights === 0) return likelihoods
  for (const [repositoryId, repository] of numbers) if (chunks[repository]! > 0) likelihoods.set(repositoryId, sums[repository]! / weights)
  return likelihoods
}

/** Takes the stored chunk `id` out of its repository's statistics (before it is removed). */
export function uncountInRepository(db: ChunkDatabase, id: string): void {
  const { data, internalDocumentIDStore } = db as unknown as Database
  const internalId = internalDocumentIDStore.idToInternalId.get(id)
  const statistics = data.index.repositories
  if (internalId === undefined || internalId >= statistics.of.length || statistics.of[internalId] === -1) return
  const number = statistics.of[internalId]!
  statistics.of[internalId] = -1
  statistics.chunks[number]!--
  for (const field of stringFields(data.index)) statistics.lengths[field]![number]! -= data.index.fieldLengths[field]?.[internalId] ?? 0
}

/** Postings as saved: per field, [term, [id, count, id, count, ...]]. */
type SavedPostings = Record<string, [string, number[]][]>

// Matches beyond this many are not ranked: the service never asks for more than 150.
const MAX_MATCHES = 1000
let scratch = new Float64Array(1024)

/** BM25's idf (Orama's formula) of a term held by `documents` of `docsCount` chunks. */
const inverseFrequency = (documents: number, docsCount: number) => Math.log(1 + (docsCount - documents + 0.5) / (documents + 0.5))

/** Whether the index holds chunks of more than one repository. */
function severalRepositories(index: IndexStore): boolean {
  let repositories = 0
  for (const count of index.repositories.chunks) if (count > 0) repositories++
  return repositories > 1
}

/** A synonym in thousands of chunks and a good share of them adds little (its idf is low) and costs a long walk. */
const tooCommonSynonym = (termWeight: number, documents: number, docsCount: number) =>
  termWeight < 1 && documents > COMMON_SYNONYM.chunks && documents > docsCount / COMMON_SYNONYM.oneIn

/**
 * Orama's BM25 (the same formula and parameters) summed over the query's terms and the searched
 * fields, with field boosts and the where-clause's documents. Every document with at least one term
 * matches (Orama's default threshold); the best MAX_MATCHES come back, best first.
 */
function scoreTerms(
  index: IndexStore,
  query: string,
  _tokenizer: Tokenizer,
  _language: string | undefined,
  properties: string[],
  _exact: boolean,
  _tolerance: number,
  boost: Record<string, number | undefined>,
  relevance: { k: number; b: number; d: number },
  docsCount: number,
  allowed: Set<number> | undefined,
): [number, number][] {
  const { k, b, d } = relevance
  // Scores by internal id in a reused array, and the ids touched: much cheaper than a Map per query.
  const size = index.sharedInternalDocumentStore.internalIdToId.length + 1
  if (scratch.length < size) scratch = new Float64Array(Math.max(size, scratch.length * 2))
  const scores = scratch
  const touched: number[] = []
  // The question's words and their synonyms, weighted (terms/query.ts), rather than the tokenizer's plain terms.
  const terms = weightedQueryTerms(query)
  for (const property of properties) {
    const postings = index.postings[property]
    if (!postings) continue
    const weight = boost[property] ?? 1
    const lengths = index.fieldLengths[property]!
    const averageLength = index.avgFieldLength[property] || 1
    for (const [term, termWeight] of terms) {
      const documents = postings.documents(term)
      if (documents === 0) continue
      if (tooCommonSynonym(termWeight, documents, docsCount)) continue
      const idf = inverseFrequency(documents, docsCount)
      postings.forEach(term, (id, count) => {
        if (allowed && !allowed.has(id)) return
        const length = lengths[id] ?? 1
        const tf = count / length
        const score = (idf * (d + tf * (k + 1))) / (tf + k * (1 - b + (b * length) / averageLength))
        if (scores[id] === 0) touched.push(id)
        scores[id]! += score * weight * termWeight
      })
    }
  }
  let floor = 0
  if (touched.length > MAX_MATCHES) {
    // The MAX_MATCHES-th best score, from a numeric sort of the scores alone, which is cheap.
    const values = new Float64Array(touched.length)
    for (let i = 0; i < touched.length; i++) values[i] = scores[touched[i]!]!
    floor = values.sort()[touched.length - MAX_MATCHES]!
  }
  const ranked: [number, number][] = []
  for (const id of touched) {
    if (scores[id]! >= floor) ranked.push([id, scores[id]!])
    scores[id] = 0
  }
  return ranked.sort((x, y) => y[1] - x[1]).slice(0, MAX_MATCHES)
}

/**
 * BM25 of whole files for the query: each file's chunks' content counted together, for the files `candidates`
 * names (chunk ids -> the file's number). A chunk's id is its slot as a string. A term's idf is over chunks (the
 * postings know how many chunks hold it, not how many files). The names the file declares add `symbols` times
 * their own BM25 term, without length normalisation: a file declares as many names as it has declarations.
 * Answers one score per file number; 0 where no term occurs.
 */
export function wholeFileScores(
  db: ChunkDatabase,
  query: string,
  candidates: ReadonlyMap<string, number>,
  fileCount: number,
  /** By file number: the average length of a file of its repository. */
  averageFileLengths: Float64Array,
  relevance: { k: number; b: number; symbols: number },
): Float64Array {
  const index = (db as unknown as { data: { index: IndexStore } }).data.index
  const idToInternalId = (db as unknown as { internalDocumentIDStore: { idToInternalId: Map<string, number> } }).internalDocumentIDStore.idToInternalId
  // Chunks held now, as chunk search counts them: ids of removed chunks stay allocated.
  const docsCount = (db.data.docs as unknown as { count: number }).count
  const ids = index.sharedInternalDocumentStore.internalIdToId.length
  // File numbers by internal id in a reused array (-1: not a candidate), since the walk below looks up every posting.
  if (fileScratch.length < ids + 1) fileScratch = new Int32Array(Math.max(ids + 1, fileScratch.length * 2)).fill(-1)
  const fileOf = fileScratch
  const marked: number[] = []
  const lengths = new Float64Array(fileCount)
  const fieldLengths = index.fieldLengths.content!
  for (const [id, file] of candidates) {
    const internalId = idToInternalId.get(id)
    if (internalId === undefined) continue
    fileOf[internalId] = file
    marked.push(internalId)
    lengths[file]! += fieldLengths[internalId] ?? 0
  }
  const scores = new Float64Array(fileCount)
  const counts = new Float64Array(fileCount)
  const { k, b } = relevance
  /** Adds each file's BM25 term for every word of the query in `field`, `normalise` giving the length part. */
  const addField = (field: string, weight: number, normalise: (file: number) => number) => {
    const postings = index.postings[field]
    if (!postings || weight === 0) return
    for (const [term, termWeight] of weightedQueryTerms(query)) {
      const documents = postings.documents(term)
      if (documents === 0) continue
      if (tooCommonSynonym(termWeight, documents, docsCount)) continue
      counts.fill(0)
      postings.forEach(term, (id, count) => {
        const file = fileOf[id]!
        if (file >= 0) counts[file]! += count
      })
      const idf = inverseFrequency(documents, docsCount)
      for (let file = 0; file < fileCount; file++) {
        const tf = counts[file]!
        if (tf === 0) continue
        scores[file]! += (weight * termWeight * idf * tf * (k + 1)) / (tf + k * normalise(file))
      }
    }
  }
  try {
    addField('content', 1, (file) => 1 - b + (b * lengths[file]!) / (averageFileLengths[file]! || 1))
    addField('symbols', relevance.symbols, () => 1)
    return scores
  } finally {
    for (const internalId of marked) fileOf[internalId] = -1
  }
}
let fileScratch = new Int32Array(1024).fill(-1)

/** Whether removed chunks' entries are still in some field's postings (PostingLists.sweep). */
export function postingsSweepPending(db: ChunkDatabase): boolean {
  return Object.values((db as unknown as Database).data.index.postings).some((postings) => postings.sweepPending)
}

/** Drops removed chunks' entries from every field's postings, giving way as it does (PostingLists.sweep). */
export function* sweepPostings(db: ChunkDatabase): Generator<void> {
  const index = (db as unknown as Database).data.index
  for (const postings of Object.values(index.postings)) yield* postings.sweep()
}

/** Trims every field's postings to their size (PostingLists.trim), giving way as it does. */
export function* trimPostings(db: ChunkDatabase): Generator<void> {
  const index = (db as unknown as Database).data.index
  for (const postings of Object.values(index.postings)) yield* postings.trim()
}

function stringFields(index: IndexStore): string[] {
  return Object.entries(index.searchablePropertiesWithTypes)
    .filter(([, type]) => type === 'string')
    .map(([name]) => name)
}

function codeIndexComponent() {
  // biome-ignore lint/suspicious/noExplicitAny: Orama's index component is wrapped method by method, whatever each takes and answers
  const base = components.index.createIndex() as unknown as Record<string, (...args: any[]) => any>
  return {
    ...base,
    create(...args: unknown[]) {
      const index = base.create!(...args) as IndexStore
      // Enum fields (repository, language, path) filter through a column of value numbers, not a Set of ids per value.
      for (const entry of Object.values(index.indexes)) if (entry.type === 'Flat') entry.node = new EnumIndex()
      index.postings = Object.fromEntries(stringFields(index).map((field) => [field, new PostingLists()]))
      index.repositories = noRepositories()
      return index
    },
    insert(implementation: unknown, index: IndexStore, prop: string, id: unknown, internalId: number, value: unknown, schemaType: string, ...rest: unknown[]) {
      if (schemaType !== 'string') return base.insert!(implementation, index, prop, id, internalId, value, schemaType, ...rest)
      const docsCount = rest[2] as number
      const { terms, counts, occurrences } = countedTermsOf(value as string)
      index.avgFieldLength[prop] = ((index.avgFieldLength[prop] ?? 0) * (docsCount - 1) + occurrences) / docsCount
      index.fieldLengths[prop]![internalId] = occurrences
      // One posting per distinct term: a chunk of code repeats most of its words.
      const postings = index.postings[prop]!
      for (let i = 0; i < terms.length; i++) postings.add(terms[i]!.text, internalId, counts[i]!)
    },
    remove(implementation: unknown, index: IndexStore, prop: string, id: unknown, internalId: number, value: unknown, schemaType: string, ...rest: unknown[]) {
      if (schemaType !== 'string') return base.remove!(implementation, index, prop, id, internalId, value, schemaType, ...rest)
      const docsCount = rest[2] as number
      // Counted without the cache of recent texts: a removed chunk's text is not counted again.
      index.postings[prop]!.remove(
        internalId,
        countTerms(value as string).terms.map((term) => term.text),
      )
      base.removeDocumentScoreParameters!(index, prop, id, docsCount)
      return true
    },
    search: scoreTerms,
    save(index: IndexStore) {
      const saved: SavedPostings = {}
      for (const [field, postings] of Object.entries(index.postings)) {
        saved[field] = [...postings.saved()]
      }
      return { ...base.save!(index), postings: saved }
    },
    load(shared: unknown, raw: { postings?: Record<string, SavedPostings[string] | PostingLists>; indexes: IndexStore['indexes'] }) {
      // Enum fields are read straight into their columns (or taken as built already, see loadChunkDatabase); Orama's
      // loader keeps an index of a type it does not know as it is.
      const indexes = { ...raw.indexes }
      const enums = new Map<string, EnumIndex>()
      for (const [field, saved] of Object.entries(indexes)) {
        if (saved.type !== 'Flat') continue
        enums.set(field, saved.node instanceof EnumIndex ? saved.node : EnumIndex.fromJSON(saved.node as SavedEnumIndex))
        indexes[field] = { ...saved, type: 'Enum', node: undefined }
      }
      const index = base.load!(shared, { ...raw, indexes }) as IndexStore
      for (const [field, node] of enums) index.indexes[field] = { type: 'Flat', node, isArray: false }
      index.postings = {}
      // Counted again as the chunks are tracked (OrgIndex).
      index.repositories = noRepositories()
      for (const field of stringFields(index)) {
        const saved = raw.postings?.[field]
        index.postings[field] = saved instanceof PostingLists ? saved : PostingLists.fromSaved(saved ?? [])
      }
      return index
    },
  }
}

/**
 * The tables of a saved state that loading builds from every chunk, built already (as a snapshot is handed over a
 * piece at a time, see persistence.ts): Orama's document ids, the enum filters and the postings.
 */
export interface PreparedTables {
  ids: { internalIdToId: string[]; idToInternalId: Map<string, number> }
  enums: Record<string, EnumIndex>
  postings: Record<string, PostingLists>
}

/** Orama's load of a saved state; with `prepared`, its tables are taken as they are, so the load's cost does not grow with the index. */
export function loadChunkDatabase(db: ChunkDatabase, raw: RawData, prepared?: PreparedTables): void {
  if (!prepared) {
    load(db, raw)
    return
  }
  const saved = raw as unknown as { index: { indexes: IndexStore['indexes']; postings?: unknown } }
  const indexes = { ...saved.index.indexes }
  for (const [field, node] of Object.entries(prepared.enums)) indexes[field] = { ...indexes[field]!, node }
  load(db, { ...raw, internalDocumentIDStore: { internalIdToId: [] }, index: { ...saved.index, indexes, postings: prepared.postings } } as unknown as RawData)
  // Orama's id store is shared by its index and documents, which read it through these two fields.
  Object.assign((db as unknown as Database).internalDocumentIDStore, prepared.ids)
}

export function createChunkDatabase(): ChunkDatabase {
  return create({
    schema: chunkSchema,
    sort: { enabled: false },
    components: { tokenizer: codeTokenizer, index: codeIndexComponent() as never },
  }) as unknown as ChunkDatabase
}
