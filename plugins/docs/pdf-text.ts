/**
 * Text work for the PDF export, apart from the drawing: characters the standard fonts can draw,
 * HTML entities, and lines broken to a width. Pure functions, no PDF library.
 */

/**
 * Stand-ins for characters the standard PDF fonts (WinAnsi) cannot draw but the pages use. Characters
 * the fonts do have (…, —, ×, é, “ ”) are kept; anything else becomes its base letter when it has
 * one (ő -> o), else "?".
 */
const STAND_INS: Readonly<Record<string, string>> = {
  '→': '->',
  '←': '<-',
  '↔': '<->',
  '⇒': '=>',
  '⇐': '<=',
  '⇔': '<=>',
  '↑': '^',
  '↓': 'v',
  '≥': '>=',
  '≤': '<=',
  '≠': '!=',
  '≈': '~',
  '−': '-',
  '‐': '-',
  '‑': '-',
  '‒': '-',
  '∞': 'infinity',
  '✓': '[x]',
  '✔': '[x]',
  '☑': '[x]',
  '☐': '[ ]',
  '✗': 'x',
  '✘': 'x',
  '─': '-',
  '━': '-',
  '│': '|',
  '┃': '|',
  '├': '+',
  '└': '+',
  '┌': '+',
  '┐': '+',
  '┘': '+',
  '┤': '+',
  '┬': '+',
  '┴': '+',
  '┼': '+',
  '\t': '    ',
}

// Zero-width characters and controls take no room in print.
// biome-ignore lint/suspicious/noControlCharactersInRegex: controls are what this matches
const INVISIBLE = /^[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u200b-\u200d\u2060\ufeff\u00ad]$/

/**
 * `text` with every character the fonts cannot encode replaced (see STAND_INS), so drawing it never
 * throws. `encodable` holds the code points the fonts have. Line breaks become spaces.
 */
export function printable(text: string, encodable: ReadonlySet<number>): string {
  let out = ''
  for (const char of text.normalize('NFC')) {
    const code = char.codePointAt(0)!
    if (char === '\n' || char === '\r') out += ' '
    else if (INVISIBLE.test(char)) continue
    else if (encodable.has(code)) out += char
    else if (STAND_INS[char] !== undefined) out += STAND_INS[char]
    else {
      const base = char.normalize('NFKD').replace(/\p{M}/gu, '')
      out += base !== '' && [...base].every((c) => encodable.has(c.codePointAt(0)!)) ? base : '?'
    }
  }
  return out
}

const NAMED_ENTITIES: Readonly<Record<string, string>> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", nbsp: '\u00a0' }

/** HTML entities as MDX pages write them in text (`&lt;`, `&#123;`, `&#x7d;`) decoded; unknown ones kept. */
export function decodeEntities(text: string): string {
  return text.replace(/&(#x[0-9a-f]+|#[0-9]+|[a-z]+);/gi, (whole, name: string) => {
    if (name[0] !== '#') return NAMED_ENTITIES[name.toLowerCase()] ?? whole
    const code = name[1] === 'x' || name[1] === 'X' ? Number.parseInt(name.slice(2), 16) : Number.parseInt(name.slice(1), 10)
    return code > 0 && code <= 0x10ffff ? String.fromCodePoint(code) : whole
  })
}

/** A stretch of text drawn in one style. `break` forces a new line after it (a Markdown hard break). */
export interface Run<Style> {
  readonly text: string
  readonly style: Style
  readonly break?: boolean
}

/** Measures `text` in `style`, in points. */
export type Measure<Style> = (text: string, style: Style) => number

/** One line of runs, its width in points. */
export interface Line<Style> {
  readonly runs: Run<Style>[]
  readonly width: number
}

interface Word<Style> {
  /** The word's pieces in their styles (a word may change style, as in "(`code`)"). */
  readonly parts: Run<Style>[]
  /** The spaces after it, in the style of its last piece. */
  readonly space: string
  /** A hard break follows it. */
  readonly break: boolean
}

/** Runs cut into words: breaks are allowed only at spaces (and hard breaks), never between styles. */
function wordsOf<Style>(runs: readonly Run<Style>[]): Word<Style>[] {
  const words: Word<Style>[] = []
  let parts: Run<Style>[] = []
  const end = (space: string, hard: boolean) => {
    if (parts.length > 0 || hard) words.push({ parts, space, break: hard })
    parts = []
  }
  for (const run of runs) {
    for (const piece of run.text.match(/\S+|\s+/g) ?? []) {
      if (/^\s/.test(piece)) end(piece, false)
      else parts.push({ text: piece, style: run.style })
    }
    if (run.break) end('', true)
  }
  end('', false)
  return words
}

/** The longest prefix of `text` (whole code points, at least one) that fits `room`. */
function fittingPrefix<Style>(text: string, style: Style, room: number, measure: Measure<Style>): string {
  const chars = [...text]
  let fit = 1
  while (fit < chars.length && measure(chars.slice(0, fit + 1).join(''), style) <= room) fit++
  return chars.slice(0, fit).join('')
}

/**
 * Breaks runs into lines no wider than `maxWidth`: at spaces where it can, inside a word only when the
 * word alone is wider than a line (a long URL or identifier). Spaces at the end of a line are dropped.
 */
export function wrapRuns<Style>(runs: readonly Run<Style>[], maxWidth: number, measure: Measure<Style>): Line<Style>[] {
  const lines: Line<Style>[] = []
  let current: Run<Style>[] = []
  let width = 0
  // Spaces waiting to be written before the next word on the same line.
  let pending: Run<Style> | undefined
  const push = (run: Run<Style>) => {
    const last = current.at(-1)
    if (last && last.style === run.style) current[current.length - 1] = { text: last.text + run.text, style: run.style }
    else current.push({ text: run.text, style: run.style })
    width += measure(run.text, run.style)
  }
  const endLine = () => {
    lines.push({ runs: current, width })
    current = []
    width = 0
    pending = undefined
  }
  const partsWidth = (parts: readonly Run<Style>[]) => parts.reduce((sum, part) => sum + measure(part.text, part.style), 0)
  for (const word of wordsOf(runs)) {
    const wordWidth = partsWidth(word.parts)
    const spaceWidth = pending && current.length > 0 ? measure(pending.text, pending.style) : 0
    if (current.length > 0 && width + spaceWidth + wordWidth > maxWidth) endLine()
    if (pending && current.length > 0) push(pending)
    pending = undefined
    if (width + wordWidth <= maxWidth) word.parts.forEach(push)
    else {
      // Wider than a whole line: cut where each line ends.
      for (const part of word.parts) {
        let rest = part.text
        while (rest !== '') {
          if (measure(rest, part.style) <= maxWidth - width) {
            push({ text: rest, style: part.style })
            break
          }
          if (width > 0 && measure([...rest][0]!, part.style) > maxWidth - width) {
            endLine()
            continue
          }
          const head = fittingPrefix(rest, part.style, maxWidth - width, measure)
          push({ text: head, style: part.style })
          rest = rest.slice(head.length)
          if (rest !== '') endLine()
        }
      }
    }
    const last = word.parts.at(-1)
    if (word.space !== '' && last) pending = { text: word.space, style: last.style }
    if (word.break) endLine()
  }
  if (current.length > 0 || lines.length === 0) endLine()
  return lines
}

/** A code block's lines, each cut into pieces of at most `columns` characters (code points). */
export function wrapCode(code: string, columns: number): string[] {
  const out: string[] = []
  for (const line of code.replace(/\t/g, '    ').split(/\r?\n/)) {
    const chars = [...line]
    if (chars.length === 0) out.push('')
    for (let at = 0; at < chars.length; at += columns) out.push(chars.slice(at, at + columns).join(''))
  }
  return out
}
