/**
 * How code text becomes search terms. Identifiers are split into their words (`parseHttpConfig`,
 * `parse_http_config` and `ParseHTTPConfig` all give parse, http, config), the compound is kept too so
 * an exact identifier ranks first, and words are stemmed so "parsing" finds `parseConfig`. The full-text
 * index, the query, the hashed embeddings and the snippet marks all use these functions, so they agree
 * on what a term is.
 */
import { components } from '@orama/orama'

// Letters, digits and underscores in any script; `$` joins JavaScript identifiers.
const UNICODE_RUN = /[\p{L}\p{N}_$]+/gu
// Within a run: an upper-case acronym not followed by lower case (HTTP in HTTPServer), a capitalised or
// lower-case word, or a number.
const PART = /\p{Lu}+(?!\p{Ll})|\p{Lu}?\p{Ll}+|\p{N}+|\p{Lo}+/gu

/** Words too common in prose and code to tell chunks apart; dropped from terms and features. */
export const STOP_WORDS: ReadonlySet<string> = new Set([
  'a', 'an', 'and', 'are', 'as', 'at', 'be', 'by', 'for', 'from', 'has', 'have', 'in', 'into', 'is', 'it', 'its', 'of', 'on',
  'or', 'that', 'the', 'then', 'this', 'to', 'was', 'were', 'will', 'with',
  'const', 'let', 'var', 'return', 'import', 'export', 'self', 'def', 'fn', 'func', 'else', 'if', 'new',
])

const MIN_LENGTH = 2
const MAX_LENGTH = 40

const englishStemmer = (components.tokenizer.createTokenizer({ language: 'english', stemming: true }) as unknown as { stemmer: (word: string) => string })
  .stemmer
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

// ASCII letters, digits, `_`, `$`, and anything beyond ASCII (sorted out by unicodeRun).
const isRunChar = (c: number) => (c >= 97 && c <= 122) || (c >= 65 && c <= 90) || (c >= 48 && c <= 57) || c === 95 || c === 36 || c > 127
const isUpper = (c: number) => c >= 65 && c <= 90
const isLower = (c: number) => c >= 97 && c <= 122
const isDigit = (c: number) => c >= 48 && c <= 57

type SpanVisitor = (start: number, end: number, word: string, compound: boolean) => void

/** Parts as in PART: an acronym not followed by lower case, a capitalised or lower-case word, a number. */
function asciiRun(text: string, start: number, end: number, visit: SpanVisitor): void {
  let parts = 0
  let only = ''
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
    const word = text.slice(i, partEnd).toLowerCase()
    parts++
    only = word
    if (usable(word)) visit(i, partEnd, word, false)
    i = partEnd
  }
  if (parts > 1) compound(text, start, end, only, visit)
}

function unicodeRun(text: string, start: number, end: number, visit: SpanVisitor): void {
  for (const run of text.slice(start, end).matchAll(UNICODE_RUN)) {
    const runStart = start + run.index
    let parts = 0
    let only = ''
    for (const part of run[0].matchAll(PART)) {
      const word = part[0].toLowerCase()
      parts++
      only = word
      if (usable(word)) visit(runStart + part.index, runStart + part.index + part[0].length, word, false)
    }
    if (parts > 1) compound(text, runStart, runStart + run[0].length, only, visit)
  }
}

function compound(text: string, start: number, end: number, lastPart: string, visit: SpanVisitor): void {
  while (start < end && (text.charCodeAt(start) === 95 || text.charCodeAt(start) === 36)) start++
  while (end > start && (text.charCodeAt(end - 1) === 95 || text.charCodeAt(end - 1) === 36)) end--
  // Without separators, so parse_config and parseConfig are one compound.
  const word = text.slice(start, end).toLowerCase().replace(/[_$]/g, '')
  if (word !== lastPart && usable(word)) visit(start, end, word, true)
}

// The hashed embeddings and the full-text index tokenize the same chunk one after the other; the second
// finds the first's terms here. Keyed by the string, whose hash the engine keeps once computed.
const recentTerms = new Map<string, readonly string[]>()
const RECENT_LIMIT = 4096

/** Index terms of `text` with repeats (term frequency matters): stemmed parts, compounds as they are. */
export function termsOf(text: string): readonly string[] {
  let terms = recentTerms.get(text)
  if (terms) return terms
  const found: string[] = []
  forEachWord(text, (word, compound) => found.push(compound ? word : stem(word)))
  if (recentTerms.size >= RECENT_LIMIT) recentTerms.clear()
  recentTerms.set(text, (terms = found))
  return terms
}

/** The distinct terms of a query, in order of appearance. */
export function queryTerms(query: string): string[] {
  return [...new Set(termsOf(query))]
}
