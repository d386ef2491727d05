/**
 * How chunks are ranked for a question, on one organisation's index. Each list (full-text, vectors) is weighed by
 * the kind of each chunk's file and, with several repositories, by how well the chunk's repository as a whole says
 * the question's words (so a question naming no repository is not ruled by the largest one; the vector list less
 * sharply, its scores already being each repository's own); hybrid fuses the two
 * lists' scores and adds a share of each chunk's whole file; with a model's code for the question, the question's
 * ranking and the code's are fused the same way. The ranking runs as a generator of steps, so a search can let
 * other work run between them.
 */
import type { ChunkFilter, OrgIndex } from '../index/index.ts'
import { EXPANSION_SHARE, FILE_PRIOR, FILE_SHARE, RANKING_DEPTH, REPOSITORY_FIT, TEXT_SHARE } from '../tuning.ts'
import type { SearchMode } from '../types.ts'
import type { ScoredSlot } from '../vectors/index.ts'

const TEST_WORDS = /\b(tests?|specs?|testing|unittest|pytest|fixtures?|mocks?)\b/i
const TEST_PATH = /(^|\/)(tests?|__tests__|specs?|testing|e2e|fixtures?)\/|(^|\/)(test_[^/]*|conftest\.py)$|[._-](test|spec)s?\.[a-z]+$|_test\.[a-z]+$/i
// Built or copied code.
const VENDORED_PATH =
  /(^|\/)(node_modules|vendor|vendored|third_party|dist|build|out|target|coverage|\.next|bower_components)\/|\.min\.[a-z]+$|\.map$|\.lock$|(^|\/)[^/]*[._-]generated\.[a-z]+$|\.pb\.go$|_pb2\.py$/i
// Type declarations and stubs: they name what is implemented elsewhere.
const DECLARATIONS_PATH = /\.d\.[cm]?ts$|\.pyi$/i
// Code that uses the library rather than defines it.
const EXAMPLE_PATH = /(^|\/)(examples?|samples?|demos?)\//i
// Only as prose: security.py or history.ts are code.
const HOUSEKEEPING_PATH = /(^|\/)(changelog|changes|history|licen[cs]e|copying|notice|authors|contributors|code_of_conduct|security)(\.(md|txt|rst|adoc))?$/i
const PROSE_PATH = /\.(md|mdx|rst|txt|html?|adoc)$/i
// Pages of a generated documentation site (mkdocs' site/, Sphinx's _build/, Jekyll's _site/).
const GENERATED_SITE = /(^|\/)(site|_site|_build)\//i

/** How much a file's kind weighs on its chunks' scores: 1 for source code, less for examples, tests, prose, type declarations, generated files. */
export function filePrior(path: string, askingForTests: boolean): number {
  if (VENDORED_PATH.test(path)) return FILE_PRIOR.vendored
  if (HOUSEKEEPING_PATH.test(path) || (GENERATED_SITE.test(path) && PROSE_PATH.test(path))) return FILE_PRIOR.housekeeping
  if (TEST_PATH.test(path)) return askingForTests ? FILE_PRIOR.source : FILE_PRIOR.test
  if (PROSE_PATH.test(path) || DECLARATIONS_PATH.test(path)) return FILE_PRIOR.proseOrDeclarations
  if (EXAMPLE_PATH.test(path)) return FILE_PRIOR.example
  return FILE_PRIOR.source
}

/** Whether the question is about tests, so test files are not held back. */
export const asksForTests = (query: string) => TEST_WORDS.test(query)

/** What one search ranks: the question, and a model's code for it when there is one, each with its vector outside text mode. */
export interface RankingQuery {
  text: string
  vector: Float32Array | undefined
  code: string | undefined
  codeVector: Float32Array | undefined
  mode: SearchMode
  filter: ChunkFilter
  limit: number
}

/**
 * The chunks best first, one step at a time; each yield is a point where other work may run. Chunks stored or
 * removed meanwhile are left out of what was found before: the answer is the index as it was at the first step,
 * without what changed since.
 */
export function* rankingSteps(index: OrgIndex, query: RankingQuery): Generator<void, ScoredSlot[]> {
  const { text, code, mode, filter } = query
  const startedAt = index.changeCount
  const unchanged = (list: ScoredSlot[]) => (index.changeCount === startedAt ? list : list.filter(({ slot }) => index.unchangedSince(slot, startedAt)))
  // Deeper than the answer: fusion lets a chunk second in both lists beat one first in only one, and the file
  // priors may move chunks up from below the limit.
  const depth = Math.max(query.limit * RANKING_DEPTH.perResult, RANKING_DEPTH.least)
  const askingForTests = asksForTests(text)
  function* rank(words: string, wordsVector: Float32Array | undefined): Generator<void, ScoredSlot[]> {
    // A search of one repository has nothing to weigh it against.
    const fit = filter.repositoryIds?.size === 1 ? NO_FIT : index.repositoryFit(words)
    const byText = mode === 'vector' ? [] : weighByFile(index, index.searchText(words, filter, depth), askingForTests, fit)
    yield
    // The vectors of a large organisation are scanned a block at a time.
    const byVector = wordsVector
      ? weighByFile(index, yield* index.searchVectorSteps(wordsVector, filter, depth, words), askingForTests, sharpened(fit, REPOSITORY_FIT.vectorSharpness))
      : []
    if (mode !== 'hybrid') return unchanged(mode === 'text' ? byText : byVector)
    yield
    return withWholeFiles(index, words, fuse(unchanged(byText), unchanged(byVector)), askingForTests, fit)
  }
  const byQuestion = yield* rank(text, query.vector)
  if (code === undefined) return unchanged(byQuestion)
  const byCode = yield* rank(code, query.codeVector)
  return convex([
    [unchanged(byQuestion), 1 - EXPANSION_SHARE],
    [unchanged(byCode), EXPANSION_SHARE],
  ])
}

const NO_FIT: ReadonlyMap<string, number> = new Map()

/** The repositories' fit at another sharpness: exp(sharpness x) from exp(REPOSITORY_FIT.sharpness x). */
function sharpened(fit: ReadonlyMap<string, number>, sharpness: number): ReadonlyMap<string, number> {
  if (fit.size === 0 || sharpness === REPOSITORY_FIT.sharpness) return fit
  const power = sharpness / REPOSITORY_FIT.sharpness
  return new Map([...fit].map(([repositoryId, weight]) => [repositoryId, weight ** power]))
}

/** Scores scaled by each chunk's file prior (tests, prose, generated files weigh less), best first. */
function weighByFile(index: OrgIndex, list: ScoredSlot[], askingForTests: boolean, fit: ReadonlyMap<string, number>): ScoredSlot[] {
  return list
    .map(({ slot, score }) => {
      const chunk = index.chunk(slot)!
      return { slot, score: score * filePrior(chunk.path, askingForTests) * (fit.get(chunk.repositoryId) ?? 1) }
    })
    .sort((a, b) => b.score - a.score)
}

// Convex fusion of scores: each list's scores are scaled to 0..1 over the list (its first 1, its last 0), and a
// chunk scores TEXT_SHARE of its text score plus the rest of its vector score, so "first in both lists" is 1.
// Unlike a fusion of ranks it keeps how far apart the scores are: a chunk far ahead in one list stays ahead
// unless the other list disagrees as strongly.
function fuse(byText: ScoredSlot[], byVector: ScoredSlot[]): ScoredSlot[] {
  return convex([
    [byText, TEXT_SHARE],
    [byVector, 1 - TEXT_SHARE],
  ])
}

/** Each list's scores scaled to 0..1 over the list and summed with its share, best first. */
function convex(lists: [ScoredSlot[], number][]): ScoredSlot[] {
  const scores = new Map<number, number>()
  for (const [list, share] of lists) {
    if (list.length === 0) continue
    const top = list[0]!.score
    const bottom = list.at(-1)!.score
    const span = top - bottom
    // A list whose scores are all equal ranks nothing above anything: each of its chunks counts in full.
    for (const { slot, score } of list) scores.set(slot, (scores.get(slot) ?? 0) + share * (span > 0 ? (score - bottom) / span : 1))
  }
  return [...scores].map(([slot, score]) => ({ slot, score })).sort((a, b) => b.score - a.score)
}

// Hybrid also weighs each chunk's file as a whole: BM25 of the file's chunks together, scaled so the best file of
// the answer scores 1, adds FILE_SHARE of it. A file that uses the question's words throughout is likelier to hold
// the answer than one with a single chunk that happens to, and in a large repository this is what whole-file BM25
// gets right and chunk scores miss.
function withWholeFiles(index: OrgIndex, query: string, fused: ScoredSlot[], askingForTests: boolean, fit: ReadonlyMap<string, number>): ScoredSlot[] {
  if (fused.length === 0) return fused
  const files = index.wholeFileScores(
    query,
    fused.map((s) => s.slot),
  )
  // Weighed by the file's kind as the chunk scores are: a test file uses the question's words throughout too.
  const share = (slot: number) => {
    const chunk = index.chunk(slot)!
    return FILE_SHARE * filePrior(chunk.path, askingForTests) * (fit.get(chunk.repositoryId) ?? 1) * (files.get(slot) ?? 0)
  }
  return fused.map(({ slot, score }) => ({ slot, score: score + share(slot) })).sort((a, b) => b.score - a.score)
}
