/**
 * How code text becomes search terms. Identifiers are split into their words (`parseHttpConfig`,
 * `parse_http_config` and `ParseHTTPConfig` all give parse, http, config), the compound is kept too so
 * an exact identifier ranks first, and words are stemmed so "parsing" finds `parseConfig`. The full-text
 * index, the query, the hashed embeddings and the snippet marks all use these functions, so they agree
 * on what a term is.
 */
// The stemmer alone: the package's entry (and its components entry) would load the rest of Orama with it at start-up.
import { stemmer } from '../../../node_modules/@orama/orama/dist/esm/components/tokenizer/english-stemmer.js'

// Letters, digits and underscores in any script; `$` joins JavaScript identifiers.
const UNICODE_RUN = /[\p{L}\p{N}_$]+/gu
// Within a run: an upper-case acronym not followed by lower case (HTTP in HTTPServer), a capitalised or
// lower-case word, or a number.
const PART = /\p{Lu}+(?!\p{Ll})|\p{Lu}?\p{Ll}+|\p{N}+|\p{Lo}+/gu

/** Words too common in prose and code to tell chunks apart; dropped from terms and features. */
// biome-ignore format: a word list, filled line by line: prose words, then code's keywords
export const STOP_WORDS: ReadonlySet<string> = new Set([
  'a', 'an', 'and', 'are', 'as', 'at', 'be', 'by', 'for', 'from', 'has', 'have', 'in', 'into', 'is', 'it', 'its', 'of', 'on',
  'or', 'that', 'the', 'then', 'this', 'to', 'was', 'were', 'will', 'with',
  'const', 'let', 'var', 'return', 'import', 'export', 'self', 'def', 'fn', 'func', 'else', 'if', 'new',
])

const MIN_LENGTH = 2
const MAX_LENGTH = 40

// What Orama's English tokenizer stems with; typed `any` in its declarations.
const englishStemmer = stemmer as (word: string) => string
const stems = new Map<string, string>()
const STEM_CACHE_LIMIT = 100_000

/** The stem of a lower-case word; numbers and short words are their own stem. Cached: vocabularies repeat. */
export function stem(word: string): string {
  let stemmed = stems.get(word)
  if (stemmed === undefined) {
    stemmed = word.length > 3 && !/\d/.test(word) ? englishStemmer(word) : word
    if (stems.size >= STEM_CACHE_LIMIT) stems.clear()
    stems.set(word, stemmed)
  }
  return stemmed
}

const usable = (word: string) => word.length >= MIN_LENGTH && word.length <= MAX_LENGTH && !STOP_WORDS.has(word)

/**
 * Calls `visit` for every word of `text`: each identifier's parts (lower case) and, when it has
 * several parts, the whole identifier (lower case, without `_` and `$`, `compound` true). Stop words and words shorter
 * than 2 or longer than 40 characters are skipped.
 */
export function forEachWord(text: string, visit: (word: string, compound: boolean) => void): void {
  forEachWordSpan(text, (_start, _end, word, compound) => visit(word, compound))
}

/**
 * forEachWord with each word's place in `text` (end exclusive), for marking matches. Parts come
 * before their compound, whose span is the whole identifier without leading or trailing `_`/`$`.
 */
export function forEachWordSpan(text: string, visit: (start: number, end: number, word: string, compound: boolean) => void): void {
  scan(text, (start, end, entry, compound) => visit(start, end, entry.word, compound))
}

/**
 * A lower-case word met before, found again by a hash of the text's characters, so the indexing hot path
 * neither slices nor lower-cases the text nor hashes a new string for a word it has seen: in code most words
 * repeat. Stop words are kept too, marked unusable.
 */
interface Word {
  readonly word: string
  readonly hash: number
  readonly usable: boolean
  /** Its term as a part (its stem) and as a compound (itself), once asked for. */
  partTerm: Term | undefined
  compoundTerm: Term | undefined
  next: Word | undefined
}

/**
 * One distinct index term, the same object wherever the term occurs in texts tokenized since the vocabulary was
 * last renewed, so the index's hot paths keep what they know of a term on it rather than in maps keyed by its text.
 */
export interface Term {
  readonly text: string
  /** Scratch for counting a text's occurrences of the term. */
  seenIn: number
  count: number
  /** The hashed embeddings' buckets of the term at `bucketsOf` dimensions (embeddings/hashed.ts). */
  buckets: Int32Array | undefined
  bucketsOf: number
  /** Its number in the preparation Worker's messages, valid while `wireEpoch` is the Worker's (indexing/preparation.ts). */
  wireId: number
  wireEpoch: number
}

let terms = new Map<string, Term>()

const newTerm = (text: string): Term => ({ text, seenIn: 0, count: 0, buckets: undefined, bucketsOf: 0, wireId: -1, wireEpoch: 0 })

/** The vocabulary's term of that text. */
export function termOf(text: string): Term {
  let term = terms.get(text)
  if (!term) terms.set(text, (term = newTerm(text)))
  return term
}

/**
 * A term of that text outside the vocabulary, for a caller that keeps one object per term itself (the preparation
 * Worker's term numbers): the vocabulary is renewed only as this thread tokenizes text, so what it is given
 * otherwise stays for the life of the process.
 */
export function detachedTerm(text: string): Term {
  return newTerm(text)
}

/** Terms in this thread's vocabulary. */
export function vocabularySize(): number {
  return terms.size
}

/**
 * Starts the vocabulary and its caches afresh, between texts, once the work that filled them is done (an import):
 * otherwise every word indexed stays in them for the life of the process, renewed only past WORD_LIMIT.
 */
export function renewVocabulary(): void {
  words = new Array(WORD_BUCKETS)
  wordCount = 0
  terms = new Map()
  stems.clear()
  recentTerms.clear()
  primed = undefined
}

const WORD_BUCKETS = 1 << 16
const WORD_LIMIT = 200_000
let words: (Word | undefined)[] = new Array(WORD_BUCKETS)
let wordCount = 0

type WordVisitor = (start: number, end: number, word: Word, compound: boolean) => void

// ASCII letters, digits, `_`, `$`, and anything beyond ASCII (sorted out by unicodeRun).
const isRunChar = (c: number) => (c >= 97 && c <= 122) || (c >= 65 && c <= 90) || (c >= 48 && c <= 57) || c === 95 || c === 36 || c > 127
const isUpper = (c: number) => c >= 65 && c <= 90
const isLower = (c: number) => c >= 97 && c <= 122
const isDigit = (c: number) => c >= 48 && c <= 57
const isSeparator = (c: number) => c === 95 || c === 36

const FNV_OFFSET = 0x811c9dc5
const FNV_PRIME = 0x01000193

/**
 * The word of ASCII text[start, end), lower case and without `_` and `$`, whose characters hash to `hash` and
 * number `length` (the caller hashed them as it scanned); undefined when too short or too long.
 */
function asciiWord(text: string, start: number, end: number, hash: number, length: number): Word | undefined {
  if (length < MIN_LENGTH || length > MAX_LENGTH) return undefined
  const bucket = (hash ^ (hash >>> 16)) & (WORD_BUCKETS - 1)
  for (let entry = words[bucket]; entry; entry = entry.next) {
    if (entry.hash !== hash || entry.word.length !== length) continue
    let k = 0
    for (let i = start; i < end && k >= 0; i++) {
      const c = text.charCodeAt(i)
      if (!isSeparator(c)) k = entry.word.charCodeAt(k) === (isUpper(c) ? c + 32 : c) ? k + 1 : -1
    }
    if (k === length) return entry
  }
  let word = text.slice(start, end).toLowerCase()
  if (length !== end - start) word = word.replace(/[_$]/g, '')
  return remember(word, hash, bucket)
}

function remember(word: string, hash: number, bucket: number): Word {
  wordCount++
  const entry: Word = { word, hash, usable: usable(word), partTerm: undefined, compoundTerm: undefined, next: words[bucket] }
  words[bucket] = entry
  return entry
}

/** Any word (the Unicode path), from the same table. */
function wordOfString(word: string): Word {
  let hash = FNV_OFFSET
  for (let i = 0; i < word.length; i++) hash = Math.imul(hash ^ word.charCodeAt(i), FNV_PRIME)
  const bucket = (hash ^ (hash >>> 16)) & (WORD_BUCKETS - 1)
  for (let entry = words[bucket]; entry; entry = entry.next) if (entry.hash === hash && entry.word === word) return entry
  return remember(word, hash, bucket)
}

function scan(text: string, visit: WordVisitor): void {
  // Renewed between texts only, so within one text a term is always one object.
  if (wordCount > WORD_LIMIT) {
    words = new Array(WORD_BUCKETS)
    wordCount = 0
    terms = new Map()
  }
  // A hand-written scanner for ASCII (this is the indexing hot path); runs with other characters go
  // through the Unicode regular expressions.
  const length = text.length
  let i = 0
  while (i < length) {
    let code = text.charCodeAt(i)
    if (!isRunChar(code)) {
      i++
      continue
    }
    const start = i
    let ascii = true
    while (i < length && isRunChar((code = text.charCodeAt(i)))) {
      if (code > 127) ascii = false
      i++
    }
    if (ascii) asciiRun(text, start, i, visit)
    else unicodeRun(text, start, i, visit)
  }
}

/** Parts as in PART: an acronym not followed by lower case, a capitalised or lower-case word, a number. */
function asciiRun(text: string, start: number, end: number, visit: WordVisitor): void {
  let parts = 0
  let last: Word | undefined
  let runHash = FNV_OFFSET
  let runLength = 0
  let i = start
  while (i < end) {
    const c = text.charCodeAt(i)
    let partEnd = i + 1
    if (isUpper(c)) {
      while (partEnd < end && isUpper(text.charCodeAt(partEnd))) partEnd++
      if (partEnd < end && isLower(text.charCodeAt(partEnd))) {
        // HTTPServer: the acronym ends before the last capital, which starts the next word.
        if (partEnd - i > 1) partEnd--
        else while (partEnd < end && isLower(text.charCodeAt(partEnd))) partEnd++
      }
    } else if (isLower(c)) {
      while (partEnd < end && isLower(text.charCodeAt(partEnd))) partEnd++
    } else if (isDigit(c)) {
      while (partEnd < end && isDigit(text.charCodeAt(partEnd))) partEnd++
    } else {
      i++
      continue
    }
    // The part's hash, and the compound's, which is every part's characters in a row.
    let hash = FNV_OFFSET
    for (let k = i; k < partEnd; k++) {
      const lower = text.charCodeAt(k) | 32
      hash = Math.imul(hash ^ lower, FNV_PRIME)
      runHash = Math.imul(runHash ^ lower, FNV_PRIME)
    }
    runLength += partEnd - i
    parts++
    last = asciiWord(text, i, partEnd, hash, partEnd - i)
    if (last?.usable) visit(i, partEnd, last, false)
    i = partEnd
  }
  if (parts < 2) return
  while (start < end && isSeparator(text.charCodeAt(start))) start++
  while (end > start && isSeparator(text.charCodeAt(end - 1))) end--
  // Without separators, so parse_config and parseConfig are one compound.
  const whole = asciiWord(text, start, end, runHash, runLength)
  if (whole?.usable && whole !== last) visit(start, end, whole, true)
}

function unicodeRun(text: string, start: number, end: number, visit: WordVisitor): void {
  for (const run of text.slice(start, end).matchAll(UNICODE_RUN)) {
    const runStart = start + run.index
    let parts = 0
    let only = ''
    for (const part of run[0].matchAll(PART)) {
      const word = part[0].toLowerCase()
      parts++
      only = word
      const entry = wordOfString(word)
      if (entry.usable) visit(runStart + part.index, runStart + part.index + part[0].length, entry, false)
    }
    if (parts > 1) compound(text, runStart, runStart + run[0].length, only, visit)
  }
}

function compound(text: string, start: number, end: number, lastPart: string, visit: WordVisitor): void {
  while (start < end && isSeparator(text.charCodeAt(start))) start++
  while (end > start && isSeparator(text.charCodeAt(end - 1))) end--
  // Without separators, so parse_config and parseConfig are one compound.
  const word = text.slice(start, end).toLowerCase().replace(/[_$]/g, '')
  const entry = wordOfString(word)
  if (word !== lastPart && entry.usable) visit(start, end, entry, true)
}

/** A text's index terms, each once, with how often it occurs. */
export interface CountedTerms {
  /** In order of first occurrence. */
  readonly terms: readonly Term[]
  readonly counts: Int32Array
  /** Every occurrence, repeats included: the text's length in terms. */
  readonly occurrences: number
}

// The hashed embeddings and the full-text index tokenize the same chunk one after the other; the second
// finds the first's terms here. Keyed by the string, whose hash the engine keeps once computed.
const recentTerms = new Map<string, CountedTerms>()
const RECENT_LIMIT = 4096
let countings = 0

const termOfWord = (word: Word, compound: boolean) => (compound ? (word.compoundTerm ??= termOf(word.word)) : (word.partTerm ??= termOf(stem(word.word))))

// Terms counted elsewhere (the preparation Worker) for the next text to be indexed.
let primed: { text: string; counted: CountedTerms } | undefined

/** Hands `countedTermsOf` the terms of `text`, counted elsewhere, for its next call on that text. */
export function primeCountedTerms(text: string, counted: CountedTerms): void {
  primed = { text, counted }
}

/** Index terms of `text`, counted: stemmed parts and compounds as they are (term frequency matters). */
export function countedTermsOf(text: string): CountedTerms {
  if (primed?.text === text) {
    const { counted } = primed
    primed = undefined
    return counted
  }
  let found = recentTerms.get(text)
  if (found) return found
  found = countTerms(text)
  if (recentTerms.size >= RECENT_LIMIT) recentTerms.clear()
  recentTerms.set(text, found)
  return found
}

/** countedTermsOf without its cache of recent texts, for a text counted once. */
export function countTerms(text: string): CountedTerms {
  const stamp = ++countings
  const terms: Term[] = []
  let occurrences = 0
  scan(text, (_start, _end, word, compound) => {
    const term = termOfWord(word, compound)
    if (term.seenIn !== stamp) {
      term.seenIn = stamp
      term.count = 0
      terms.push(term)
    }
    term.count++
    occurrences++
  })
  return { terms, counts: Int32Array.from(terms, (term) => term.count), occurrences }
}

/** Index terms of `text` with repeats, in order: stemmed parts, compounds as they are. */
export function termsOf(text: string): string[] {
  const list: string[] = []
  scan(text, (_start, _end, word, compound) => list.push(termOfWord(word, compound).text))
  return list
}

/** The distinct terms of a query, in order of appearance. */
export function queryTerms(query: string): string[] {
  return [...new Set(termsOf(query))]
}
