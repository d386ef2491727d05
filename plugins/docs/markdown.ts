import { Marked, type RendererObject, type Tokens } from 'marked'
import { escapeHtml } from './render.ts'

/**
 * Markdown to HTML for documentation pages. Markdown itself is trusted; raw HTML in it is not: it is
 * shown as text. MDX components (`<Note>`, `<Card title="…">`) are rendered plainly as boxes with
 * their title and content, and a handful of attribute-less inline tags (`<mark>`, `<kbd>`, `<br>`)
 * pass through.
 */

export interface Heading {
  readonly id: string
  readonly text: string
  readonly depth: number
}

export interface RenderedMarkdown {
  readonly html: string
  /** Level 2 and 3 headings, for the table of contents. */
  readonly headings: readonly Heading[]
}

/** A link target safe to put in a page: http(s), mailto, or a path or fragment on this site. */
export function safeHref(href: string): string | undefined {
  const trimmed = href.trim()
  // Browsers ignore whitespace and control characters inside a scheme ("java\tscript:").
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what this strips, as browsers do
  const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(trimmed.replace(/[\u0000-\u0020]/g, ''))?.[1]?.toLowerCase()
  if (scheme === undefined || scheme === 'http' || scheme === 'https' || scheme === 'mailto') return trimmed
  return undefined
}

const SAFE_INLINE_TAG = /^<\/?(br|mark|kbd|sub|sup|b|i|em|strong|u|s|small)\s*\/?>$/i
// A JSX component starts with a capital letter; attribute values may be quoted strings or {expressions}.
const ATTRIBUTES = String.raw`(?:\s+[\w:.-]+(?:\s*=\s*(?:"[^"]*"|'[^']*'|\{[^}]*\}))?)*`
const COMPONENT_BLOCK = new RegExp(String.raw`^<([A-Z][\w.]*)(${ATTRIBUTES})\s*>([\s\S]*)</\1>\s*$`)
const COMPONENT_OPEN = new RegExp(String.raw`^<([A-Z][\w.]*)(${ATTRIBUTES})\s*>\s*$`)
const COMPONENT_SELF_CLOSING = new RegExp(String.raw`^<([A-Z][\w.]*)(${ATTRIBUTES})\s*/>\s*$`)
const COMPONENT_CLOSE = /^<\/([A-Z][\w.]*)\s*>\s*$/
const INLINE_COMPONENT_TAG = new RegExp(String.raw`^<\/?[A-Z][\w.]*(${ATTRIBUTES})\s*\/?>$`)

const CALLOUTS = new Set(['Note', 'Tip', 'Warning', 'Info', 'Check', 'Danger', 'Callout'])

function componentTitle(attributes: string): string {
  const title = /\btitle\s*=\s*(?:"([^"]*)"|'([^']*)')/.exec(attributes)
  return title ? (title[1] ?? title[2] ?? '') : ''
}

function openComponent(name: string, attributes: string): string {
  const kind = CALLOUTS.has(name) ? `callout callout-${name.toLowerCase()}` : 'component'
  const title = componentTitle(attributes)
  return `<div class="mdx ${kind}" data-component="${escapeHtml(name)}">${title ? `<p class="mdx-title">${escapeHtml(title)}</p>` : ''}`
}

/** Removes the indentation every non-blank line shares, so nested content is Markdown again. */
function dedent(text: string): string {
  const lines = text.replace(/^\n+|\s+$/g, '').split('\n')
  const indents = lines.filter((line) => line.trim() !== '').map((line) => /^[ \t]*/.exec(line)![0].length)
  const cut = indents.length > 0 ? Math.min(...indents) : 0
  return lines.map((line) => line.slice(cut)).join('\n')
}

export function slugify(text: string): string {
  const slug = text
    .toLowerCase()
    .replace(/<[^>]*>/g, '')
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .trim()
    .replace(/\s+/g, '-')
  return slug || 'section'
}

/** Renders one page (or a component's content) with its own ids and open-component stack. */
export function renderMarkdown(markdown: string, usedIds: Set<string> = new Set()): RenderedMarkdown {
  const headings: Heading[] = []
  // Components opened by a lone tag and not yet closed; a stray closing tag must not close page markup.
  const open: string[] = []
  const uniqueId = (base: string) => {
    let id = base
    for (let n = 2; usedIds.has(id); n++) id = `${base}-${n}`
    usedIds.add(id)
    return id
  }

  const renderer: RendererObject = {
    html(token: Tokens.HTML | Tokens.Tag) {
      const text = token.text
      if (!token.block) {
        if (SAFE_INLINE_TAG.test(text.trim())) return text.trim()
        // Inline components keep their content (the text between the tags), not the tags.
        if (INLINE_COMPONENT_TAG.test(text.trim())) return ''
        return escapeHtml(text)
      }
      const block = COMPONENT_BLOCK.exec(text)
      if (block) return `${openComponent(block[1]!, block[2]!)}${renderMarkdown(dedent(block[3]!), usedIds).html}</div>\n`
      const selfClosing = COMPONENT_SELF_CLOSING.exec(text)
      if (selfClosing) return `${openComponent(selfClosing[1]!, selfClosing[2]!)}</div>\n`
      const opening = COMPONENT_OPEN.exec(text)
      if (opening) {
        open.push(opening[1]!)
        return `${openComponent(opening[1]!, opening[2]!)}\n`
      }
      // An opening tag followed by content with no blank line between them.
      const newline = text.indexOf('\n')
      const firstLine = newline === -1 ? undefined : COMPONENT_OPEN.exec(text.slice(0, newline))
      if (firstLine) {
        open.push(firstLine[1]!)
        return `${openComponent(firstLine[1]!, firstLine[2]!)}\n${renderMarkdown(dedent(text.slice(newline + 1)), usedIds).html}`
      }
      const closing = COMPONENT_CLOSE.exec(text)
      if (closing) {
        if (open.at(-1) !== closing[1]) return ''
        open.pop()
        return '</div>\n'
      }
      return `<pre class="raw-html"><code>${escapeHtml(text.replace(/\s+$/, ''))}</code></pre>\n`
    },
    heading({ tokens, depth, text }: Tokens.Heading) {
      const id = uniqueId(slugify(text))
      const inner = this.parser.parseInline(tokens)
      if (depth === 2 || depth === 3) headings.push({ id, text: this.parser.parseInline(tokens, this.parser.textRenderer), depth })
      return `<h${depth} id="${escapeHtml(id)}"><a class="anchor" href="#${escapeHtml(id)}">${inner}</a></h${depth}>\n`
    },
    link({ href, title, tokens }: Tokens.Link) {
      const inner = this.parser.parseInline(tokens)
      const safe = safeHref(href)
      if (!safe) return inner
      const external = /^https?:/i.test(safe)
      return `<a href="${escapeHtml(safe)}"${title ? ` title="${escapeHtml(title)}"` : ''}${external ? ' rel="noopener noreferrer"' : ''}>${inner}</a>`
    },
    image({ href, title, text }: Tokens.Image) {
      const safe = safeHref(href)
      if (!safe) return escapeHtml(text)
      return `<img src="${escapeHtml(safe)}" alt="${escapeHtml(text)}"${title ? ` title="${escapeHtml(title)}"` : ''} loading="lazy">`
    },
    table(token: Tokens.Table) {
      const cell = (c: Tokens.TableCell, tag: 'th' | 'td', id?: string) =>
        `<${tag}${c.align ? ` style="text-align:${c.align}"` : ''}${id ? ` id="${escapeHtml(id)}"` : ''}>${this.parser.parseInline(c.tokens)}</${tag}>`
      const head = `<tr>${token.header.map((c) => cell(c, 'th')).join('')}</tr>`
      const rows = token.rows.map((row) => {
        // A row keyed by an identifier in code (an error code, a variable) is a link target: /docs/errors#not_found.
        const first = row[0]
        const key = first && first.tokens.length === 1 && first.tokens[0]!.type === 'codespan' ? (first.tokens[0] as Tokens.Codespan).text : undefined
        const id = key && /^[A-Za-z][\w.-]*$/.test(key) && !usedIds.has(key) ? key : undefined
        if (id) usedIds.add(id)
        return `<tr>${row.map((c, i) => cell(c, 'td', i === 0 ? id : undefined)).join('')}</tr>`
      })
      return `<div class="table"><table><thead>${head}</thead><tbody>${rows.join('')}</tbody></table></div>\n`
    },
  }

  const marked = new Marked({ gfm: true, async: false, renderer })
  // MDX import/export statements are build instructions, not content.
  marked.use({
    walkTokens(token) {
      if (token.type === 'paragraph' && /^(import|export)\s/.test(token.raw)) Object.assign(token, { type: 'space', raw: '' })
    },
  })
  let html = marked.parse(markdown) as string
  html += '</div>'.repeat(open.length)
  return { html, headings }
}
