/**
 * How the develop tools show text to the model: numbers as people write them (`1,761`), files as numbered lines
 * (the number, a tab, the line as it is), what a change did with a few lines around it, and long text cut with a
 * line saying exactly what was left out. Nothing is ever cut silently.
 */

// Made at the first use: building a NumberFormat costs start-up about 2 ms.
let numbers: Intl.NumberFormat | undefined

/** `1,761` */
export const count = (n: number) => (numbers ??= new Intl.NumberFormat('en-US')).format(n)

/** `1 line`, `3 lines` */
export const plural = (n: number, one: string, many = `${one}s`) => `${count(n)} ${n === 1 ? one : many}`

/** `5` or `1,761-1,860` */
export const range = (first: number, last: number) => (first === last ? count(first) : `${count(first)}-${count(last)}`)

/** `line 5` or `lines 1,761-1,860` */
export const linesLabel = (first: number, last: number) => `${first === last ? 'line' : 'lines'} ${range(first, last)}`

/** Seconds as the tools state them: `2.3` under ten seconds, whole seconds above. */
export const seconds = (ms: number) => (ms < 10_000 ? (Math.max(0, ms) / 1000).toFixed(1) : count(Math.round(ms / 1000)))

/** The lines of a text; a final newline ends the last line rather than starting an empty one. */
export function linesOf(text: string): string[] {
  if (text === '') return []
  const lines = text.split('\n')
  if (lines.at(-1) === '') lines.pop()
  return lines
}

/** A longer line is shown cut, saying how much of it is left out (a minified file would fill a window alone). */
export const MAX_LINE_CHARS = 2000

/** `  42\tthe line`: the number right-aligned to `width`, a tab, then the line exactly as the file holds it. */
export function numberedLine(number: number, line: string, width: number): string {
  const shown = line.length > MAX_LINE_CHARS ? `${line.slice(0, MAX_LINE_CHARS)} [… ${count(line.length - MAX_LINE_CHARS)} more characters on this line]` : line
  return `${String(number).padStart(width)}\t${shown}`
}

/** Lines `first`..`last` (from 1) of `lines`, numbered. */
export function numbered(lines: readonly string[], first: number, last: number): string[] {
  const width = String(last).length
  const out: string[] = []
  for (let n = first; n <= last; n++) out.push(numberedLine(n, lines[n - 1] ?? '', width))
  return out
}

/** Where two versions of a file differ: from line `from` (1-based), `removed` lines of the old became `added` lines of the new. */
export function changedLines(before: readonly string[], after: readonly string[]): { from: number; removed: number; added: number } {
  const shorter = Math.min(before.length, after.length)
  let prefix = 0
  while (prefix < shorter && before[prefix] === after[prefix]) prefix++
  let suffix = 0
  while (suffix < shorter - prefix && before[before.length - 1 - suffix] === after[after.length - 1 - suffix]) suffix++
  return { from: prefix + 1, removed: before.length - prefix - suffix, added: after.length - prefix - suffix }
}

/** Lines shown around a change, before and after it. */
export const CHANGE_CONTEXT_LINES = 3
/** Most lines an answer about a change shows; a bigger change is shown from its start, with where to read on. */
export const MAX_CHANGE_LINES = 60

/**
 * What a change did to a file, for the model: which lines changed, then those lines and a few around them as
 * the file now reads, numbered. `done` opens the sentence (`Edited src/a.ts`).
 */
export function describeChange(_path: string, before: string, after: string, done: string): string {
  const old = linesOf(before)
  const now = linesOf(after)
  const { from, removed, added } = changedLines(old, now)
  if (removed === 0 && added === 0) {
    const newline = before.endsWith('\n') !== after.endsWith('\n') ? ` (only the newline at its end ${after.endsWith('\n') ? 'was added' : 'was removed'})` : ''
    return `${done}: no line changed${newline}.`
  }
  const what =
    removed === 0
      ? `added ${plural(added, 'line')} after line ${count(from - 1)}`
      : added === 0
        ? `removed ${plural(removed, 'line')} (${linesLabel(from, from + removed - 1)} before)`
        : `${linesLabel(from, from + added - 1)} now ${added === 1 ? 'holds' : 'hold'} what ${removed === 1 ? 'was 1 line' : `were ${count(removed)} lines`}`
  if (now.length === 0) return `${done}: ${what}; the file is now empty.`
  const first = Math.max(1, from - CHANGE_CONTEXT_LINES)
  const last = Math.min(now.length, from + Math.max(added, 1) - 1 + CHANGE_CONTEXT_LINES)
  const shownLast = Math.min(last, first + MAX_CHANGE_LINES - 1)
  const rest = shownLast < last ? [`[… ${linesLabel(shownLast + 1, last)} not shown; read_file start=${count(shownLast + 1)} shows them]`] : []
  const shown = linesLabel(first, shownLast)
  return [
    `${done}: ${what}. ${shown[0]!.toUpperCase()}${shown.slice(1)} of ${count(now.length)} as the file now reads:`,
    ...numbered(now, first, shownLast),
    ...rest,
  ].join('\n')
}

/** Keeps the head and the tail of a long text: an error is usually at the end of a command's output. */
export function clip(text: string, max: number): string {
  return cutMiddle(text, max).text
}

/**
 * A long output cut in the middle (30% head, 70% tail), with a line stating what is shown: `output cut: the
 * first 3,600 and last 8,400 of 51,234 characters shown`. Undefined `note` when nothing was cut.
 */
export function cutMiddle(text: string, max: number): { text: string; note?: string } {
  if (text.length <= max) return { text }
  const head = Math.floor(max * 0.3)
  const tail = max - head
  return {
    text: `${text.slice(0, head)}\n[… ${count(text.length - max)} characters left out …]\n${text.slice(text.length - tail)}`,
    note: `output cut: the first ${count(head)} and last ${count(tail)} of ${count(text.length)} characters shown`,
  }
}
