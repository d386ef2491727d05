/** Pure text work for the documentation index: pages cut at their headings, plain text and snippets. */

/** A page's stretch of Markdown under one heading (or before the first one). */
export interface PageSection {
  /** The heading's text; undefined for the part before the first heading. */
  readonly heading: string | undefined
  /** The section's Markdown, its heading line excluded. */
  readonly markdown: string
}

const HEADING = /^ {0,3}(#{1,6})[ \t]+(.+?)(?:[ \t]+#+)?[ \t]*$/
const FENCE = /^ {0,3}(`{3,}|~{3,})/

/** Cuts a page at its ATX headings (`#` to `######`), ignoring `#` lines inside fenced code. */
export function splitSections(markdown: string): PageSection[] {
  const sections: PageSection[] = []
  let heading: string | undefined
  let lines: string[] = []
  let fence: string | undefined
  const flush = () => {
    const body = lines.join('\n').trim()
    if (heading !== undefined || body !== '') sections.push({ heading, markdown: body })
    lines = []
  }
  for (const line of markdown.split(/\r?\n/)) {
    const fenceMark = FENCE.exec(line)?.[1]
    if (fence) {
      if (fenceMark && fenceMark[0] === fence[0] && fenceMark.length >= fence.length) fence = undefined
    } else if (fenceMark) {
      fence = fenceMark
    } else {
      const match = HEADING.exec(line)
      if (match) {
        flush()
        heading = plainText(match[2]!)
        continue
      }
    }
    lines.push(line)
  }
  flush()
  return sections
}

/**
 * Markdown reduced to the words a reader sees: no fence lines, table rules, emphasis, link targets or
 * MDX component tags. Code stays, since readers search for routes and field names.
 */
export function plainText(markdown: string): string {
  return (
    markdown
      .split(/\r?\n/)
      .filter((line) => !FENCE.test(line) && !/^\s*\|?\s*:?-{3,}/.test(line))
      .join('\n')
      .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
      // MDX components only (capitalised); <token>-style placeholders in examples are text.
      .replace(/<\/?[A-Z][\w.]*(?:\s[^>]*)?\/?>/g, ' ')
      .replace(/[*_]{2,}|`+/g, '')
      .replace(/\s*\|\s*/g, ' ')
      .replace(/\s+/g, ' ')
      .trim()
  )
}

/**
 * About `length` characters of `text` around the first word of `query` found in it (the opening when
 * none is, as with stemmed matches), cut at spaces and marked with … where text was left out.
 */
export function snippetOf(text: string, query: string, length = 240): string {
  if (text.length <= length) return text
  // Only letters, digits and _, so the words need no escaping; matched at the start of a word, so
  // "rate" finds "rates" but not "separate".
  const words = query.match(/[\p{L}\p{N}_]+/gu) ?? []
  const hit = words.length > 0 ? text.search(new RegExp(`(?<![\\p{L}\\p{N}_])(?:${words.join('|')})`, 'iu')) : -1
  let start = Math.max(0, hit - Math.floor(length / 3))
  let end = Math.min(text.length, start + length)
  start = Math.max(0, end - length)
  // Whole words only, never cutting off the matched word itself.
  if (start > 0 && text[start - 1] !== ' ') {
    const space = text.indexOf(' ', start)
    if (space !== -1 && (hit < 0 || space < hit)) start = space + 1
  }
  if (end < text.length && text[end] !== ' ') {
    const space = text.lastIndexOf(' ', end)
    if (space > start) end = space
  }
  return (start > 0 ? '…' : '') + text.slice(start, end).trim() + (end < text.length ? '…' : '')
}
