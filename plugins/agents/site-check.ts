/**
 * Checks a generated static site before it is published: every HTML page's elements that must be closed
 * explicitly are balanced, and every local link and asset (href, src, srcset) names a file of the site.
 */
import { posix } from 'node:path'

export interface SiteFileBytes {
  path: string
  bytes: Uint8Array
}

// Elements HTML never closes implicitly: an unclosed one swallows the rest of the page.
const MUST_CLOSE = new Set(['a', 'article', 'aside', 'button', 'div', 'footer', 'form', 'h1', 'h2', 'h3', 'h4', 'h5', 'h6', 'header', 'main', 'nav', 'section', 'span', 'table', 'ul', 'ol', 'title', 'script', 'style', 'label', 'select', 'textarea'])
const RAW_TEXT = new Set(['script', 'style', 'textarea', 'title'])
const LINK_ATTRIBUTES = ['href', 'src', 'srcset', 'poster']

/** Tags in order (comments and raw text skipped), with their line, for the balance check. */
function tagsOf(html: string): { name: string; closing: boolean; selfClosing: boolean; line: number }[] {
  const tags: { name: string; closing: boolean; selfClosing: boolean; line: number }[] = []
  const pattern = /<!--[\s\S]*?-->|<(\/?)([a-zA-Z][a-zA-Z0-9-]*)((?:[^>"']|"[^"]*"|'[^']*')*)>/g
  let match: RegExpExecArray | null
  const lineAt = (index: number) => html.slice(0, index).split('\n').length
  while ((match = pattern.exec(html))) {
    if (match[0].startsWith('<!--')) continue
    const name = match[2]!.toLowerCase()
    const closing = match[1] === '/'
    tags.push({ name, closing, selfClosing: match[3]!.trimEnd().endsWith('/'), line: lineAt(match.index) })
    if (!closing && RAW_TEXT.has(name)) {
      const end = html.toLowerCase().indexOf(`</${name}`, pattern.lastIndex)
      if (end < 0) continue
      pattern.lastIndex = end
    }
  }
  return tags
}

function balanceProblems(path: string, html: string): string[] {
  const open: { name: string; line: number }[] = []
  const problems: string[] = []
  for (const tag of tagsOf(html)) {
    if (!MUST_CLOSE.has(tag.name) || tag.selfClosing) continue
    if (!tag.closing) open.push({ name: tag.name, line: tag.line })
    else if (open.at(-1)?.name === tag.name) open.pop()
    else if (open.some((o) => o.name === tag.name)) {
      const inner = open.pop()!
      problems.push(`${path}:${inner.line}: <${inner.name}> is not closed before </${tag.name}> on line ${tag.line}`)
      while (open.length && open.at(-1)!.name !== tag.name) open.pop()
      open.pop()
    } else problems.push(`${path}:${tag.line}: </${tag.name}> closes no open <${tag.name}>`)
  }
  for (const left of open) problems.push(`${path}:${left.line}: <${left.name}> is never closed`)
  return problems
}

/** Local targets of the page's links and assets, as written. */
function linksOf(html: string): string[] {
  const links: string[] = []
  const pattern = new RegExp(`\\s(${LINK_ATTRIBUTES.join('|')})\\s*=\\s*(?:"([^"]*)"|'([^']*)'|([^\\s>]+))`, 'gi')
  for (const match of html.replace(/<!--[\s\S]*?-->/g, '').matchAll(pattern)) {
    const value = (match[2] ?? match[3] ?? match[4] ?? '').trim()
    const values = match[1]!.toLowerCase() === 'srcset' ? value.split(',').map((candidate) => candidate.trim().split(/\s+/)[0] ?? '') : [value]
    links.push(...values.filter(Boolean))
  }
  return links
}

const isExternal = (link: string) => /^[a-z][a-z0-9+.-]*:/i.test(link) || link.startsWith('//') || link.startsWith('#')

/** The site's problems; none means it can be published. */
export function checkSite(files: readonly SiteFileBytes[]): string[] {
  const paths = new Set(files.map((f) => f.path))
  const problems: string[] = []
  if (!paths.has('index.html')) problems.push('index.html: the site has no root page')
  const decoder = new TextDecoder()
  for (const file of files) {
    if (!/\.html?$/i.test(file.path)) continue
    const html = decoder.decode(file.bytes)
    problems.push(...balanceProblems(file.path, html))
    for (const link of linksOf(html)) {
      if (isExternal(link)) continue
      let target: string
      try {
        target = decodeURIComponent(link.split(/[?#]/)[0]!)
      } catch {
        problems.push(`${file.path}: link ${link} is not a valid URL`)
        continue
      }
      if (target === '') continue
      // Root-relative links resolve against the site's root; others against the page's directory.
      const resolved = posix.normalize(target.startsWith('/') ? target.slice(1) : posix.join(posix.dirname(file.path), target))
      if (resolved.startsWith('..')) {
        problems.push(`${file.path}: link ${link} points outside the site`)
        continue
      }
      const base = resolved === '.' ? '' : resolved.replace(/\/$/, '')
      const candidates = target.endsWith('/') || base === '' ? [posix.join(base, 'index.html')] : [base, `${base}.html`, posix.join(base, 'index.html')]
      if (!candidates.some((c) => paths.has(c))) problems.push(`${file.path}: link ${link} names no file of the site`)
    }
  }
  return problems
}
