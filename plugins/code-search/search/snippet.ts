/**
 * The excerpt shown with a result: the few lines of the chunk where most query terms meet, dedented,
 * HTML-escaped (code is full of `<`), with each matched word in `<mark>`. An identifier matching as a
 * whole is marked whole; otherwise each matching part is (`parse<mark>Config</mark>` for "config").
 */
import { forEachWordSpan, queryTerms, stem } from '../terms/index.ts'

export interface SnippetOptions {
  /** Lines in the excerpt. Default 6. */
  maxLines?: number
  /** A longer line is cut, with an ellipsis. Default 160. */
  maxLineChars?: number
}

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"]/g, (c) => (c === '&' ? '&amp;' : c === '<' ? '&lt;' : c === '>' ? '&gt;' : '&quot;'))
}

/** The terms a snippet marks: the query's terms as the index knows them. */
export function snippetTerms(query: string): ReadonlySet<string> {
  return new Set(queryTerms(query))
}

interface Mark {
  start: number
  end: number
  /** The terms it matched. */
  words: string[]
}

function matches(line: string, terms: ReadonlySet<string>): Mark[] {
  const spans: Mark[] = []
  forEachWordSpan(line, (start, end, word, compound) => {
    const term = compound ? word : stem(word)
    if (!terms.has(term)) return
    // A whole identifier replaces the parts marked inside it.
    if (compound) while (spans.length > 0 && spans.at(-1)!.start >= start) spans.pop()
    const previous = spans.at(-1)
    // Touching parts (verify + Token) read better as one mark.
    if (previous && previous.end === start) {
      previous.end = end
      previous.words.push(term)
    } else spans.push({ start, end, words: [term] })
  })
  return spans
}

export function buildSnippet(content: string, terms: ReadonlySet<string>, options: SnippetOptions = {}): string {
  const maxLines = options.maxLines ?? 6
  const maxLineChars = options.maxLineChars ?? 160
  const lines = content.split('\n')
  const found = lines.map((line) => matches(line.length > maxLineChars ? line.slice(0, maxLineChars) : line, terms))

  // The window with the most distinct terms, then the most matches; the first such window wins.
  let bestStart = 0
  let bestDistinct = -1
  let bestCount = -1
  for (let start = 0; start < Math.max(1, lines.length - maxLines + 1); start++) {
    const words = new Set<string>()
    let count = 0
    for (let i = start; i < Math.min(lines.length, start + maxLines); i++)
      for (const span of found[i]!)
        for (const word of span.words) {
          words.add(word)
          count++
        }
    if (words.size > bestDistinct || (words.size === bestDistinct && count > bestCount)) {
      bestStart = start
      bestDistinct = words.size
      bestCount = count
    }
  }

  const window = lines.slice(bestStart, bestStart + maxLines)
  const indent = Math.min(...window.filter((l) => l.trim() !== '').map((l) => /^\s*/.exec(l)![0].length))
  return window
    .map((line, i) => {
      const cut = line.length > maxLineChars
      const text = cut ? line.slice(0, maxLineChars) : line
      let out = ''
      let at = 0
      for (const span of found[bestStart + i]!) {
        out += `${escapeHtml(text.slice(at, span.start))}<mark>${escapeHtml(text.slice(span.start, span.end))}</mark>`
        at = span.end
      }
      out += escapeHtml(text.slice(at)) + (cut ? '…' : '')
      return dedent(out, Number.isFinite(indent) ? indent : 0)
    })
    .join('\n')
    .replace(/^\n+|\s+$/g, '')
}

// Leading whitespace is never inside a mark, so it can be cut from the marked line.
function dedent(line: string, indent: number): string {
  let cut = 0
  while (cut < indent && (line[cut] === ' ' || line[cut] === '\t')) cut++
  return line.slice(cut)
}
