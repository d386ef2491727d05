/**
 * Splits a file into the pieces the index stores. Where the language is known, a chunk starts at a
 * declaration (function, class, method, type; with the comments and decorators above it), small
 * neighbours are packed together and a long declaration is cut into overlapping windows. Other files
 * are cut into overlapping line windows. Line numbers are 1-based and inclusive.
 */
import { declaredName, languageOfPath, structureOf, type Structure } from './languages.ts'

export interface Chunk {
  startLine: number
  endLine: number
  content: string
  /** Names declared in the chunk, for ranking a search for a function's name. */
  symbols: string[]
}

export interface ChunkerOptions {
  /** Longest chunk in lines. Default 60. */
  maxLines?: number
  /** Longest chunk in characters. Default 4000. */
  maxChars?: number
  /** Declarations shorter than this are packed with their neighbours. Default 12. */
  minLines?: number
  /** Lines shared by consecutive windows of a long piece. Default 10. */
  overlapLines?: number
  /** Files larger than this are not indexed. Default 1 MiB. */
  maxFileBytes?: number
  /** A line longer than this marks a minified or generated file, which is not indexed. Default 2000. */
  maxLineChars?: number
}

const DEFAULTS: Required<ChunkerOptions> = { maxLines: 60, maxChars: 4000, minLines: 12, overlapLines: 10, maxFileBytes: 1 << 20, maxLineChars: 2000 }

/** Files whose content says nothing a search would want (lock files). */
const SKIPPED_NAMES = new Set([
  'package-lock.json',
  'yarn.lock',
  'pnpm-lock.yaml',
  'bun.lock',
  'bun.lockb',
  'Cargo.lock',
  'poetry.lock',
  'composer.lock',
  'go.sum',
])

/** Why a file gave no chunks, or undefined when it is indexable. */
export function unindexableReason(path: string, content: string, options: ChunkerOptions = {}): string | undefined {
  const { maxFileBytes, maxLineChars } = { ...DEFAULTS, ...options }
  if (SKIPPED_NAMES.has(path.slice(path.lastIndexOf('/') + 1))) return 'lock file'
  if (content.length > maxFileBytes) return 'too large'
  if (content.includes('\0')) return 'binary'
  let lineStart = 0
  for (;;) {
    const end = content.indexOf('\n', lineStart)
    const length = (end === -1 ? content.length : end) - lineStart
    if (length > maxLineChars) return 'minified or generated'
    if (end === -1) return undefined
    lineStart = end + 1
  }
}

interface Piece {
  start: number
  end: number // exclusive
  symbols: string[]
}

export function chunkFile(path: string, content: string, language?: string, options: ChunkerOptions = {}): Chunk[] {
  const settings = { ...DEFAULTS, ...options }
  if (unindexableReason(path, content, settings)) return []
  const lines = content.split(/\r?\n/)
  if (lines.at(-1) === '') lines.pop()
  const structure = structureOf(language) ?? structureOf(languageOfPath(path))
  const pieces = structure ? declarations(lines, structure) : [{ start: 0, end: lines.length, symbols: [] }]
  const chunks: Chunk[] = []
  for (const piece of pack(lines, pieces, settings)) {
    if (size(lines, piece.start, piece.end) <= settings.maxChars && piece.end - piece.start <= settings.maxLines) emit(lines, piece, chunks)
    else for (const window of windows(lines, piece, settings)) emit(lines, window, chunks)
  }
  return chunks
}

/** Cuts the file at each declaration line, moving the cut up over the comments and decorators above it. */
function declarations(lines: string[], structure: Structure): Piece[] {
  const cuts: { at: number; symbol?: string }[] = [{ at: 0 }]
  for (let i = 0; i < lines.length; i++) {
    const match = structure.declaration.exec(lines[i]!)
    if (!match) continue
    let at = i
    const floor = cuts.at(-1)!.at
    while (at - 1 > floor && lines[at - 1]!.trim() !== '' && structure.preamble.test(lines[at - 1]!)) at--
    const symbol = declaredName(match)
    if (at === floor) {
      if (symbol) cuts.at(-1)!.symbol ??= symbol
    } else cuts.push({ at, symbol })
  }
  return cuts.map((cut, i) => ({ start: cut.at, end: cuts[i + 1]?.at ?? lines.length, symbols: cut.symbol ? [cut.symbol] : [] }))
}

/** Packs small neighbouring pieces together, never past the chunk limits. */
function pack(lines: string[], pieces: Piece[], settings: Required<ChunkerOptions>): Piece[] {
  const packed: Piece[] = []
  let current: Piece | undefined
  for (const piece of pieces) {
    if (current) {
      const lineCount = piece.end - current.start
      const fits = lineCount <= settings.maxLines && size(lines, current.start, piece.end) <= settings.maxChars
      if (fits && current.end - current.start < settings.minLines) {
        current = { start: current.start, end: piece.end, symbols: [...current.symbols, ...piece.symbols] }
        continue
      }
      packed.push(current)
    }
    current = piece
  }
  if (current) packed.push(current)
  return packed
}

/** Overlapping windows over a piece too long for one chunk, each within the line and character limits. */
function windows(lines: string[], piece: Piece, settings: Required<ChunkerOptions>): Piece[] {
  const out: Piece[] = []
  let start = piece.start
  for (;;) {
    let end = start
    let chars = 0
    while (end < piece.end && end - start < settings.maxLines && (end === start || chars + lines[end]!.length + 1 <= settings.maxChars)) {
      chars += lines[end]!.length + 1
      end++
    }
    // The declaration's name belongs to its first window only; later windows are its body.
    out.push({ start, end, symbols: start === piece.start ? piece.symbols : [] })
    if (end >= piece.end) return out
    start = Math.max(start + 1, end - settings.overlapLines)
  }
}

function size(lines: string[], start: number, end: number): number {
  let chars = 0
  for (let i = start; i < end; i++) chars += lines[i]!.length + 1
  return chars
}

/** Adds the piece as a chunk, without the blank lines at its edges; a blank piece adds nothing. */
function emit(lines: string[], piece: Piece, chunks: Chunk[]): void {
  let { start, end } = piece
  while (start < end && lines[start]!.trim() === '') start++
  while (end > start && lines[end - 1]!.trim() === '') end--
  if (start === end) return
  chunks.push({ startLine: start + 1, endLine: end, content: lines.slice(start, end).join('\n'), symbols: piece.symbols })
}
