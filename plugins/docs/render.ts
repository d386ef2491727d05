import type { ContextualDisplay, Icon, MenuEntry } from './contextual.ts'
import type { Heading } from './markdown.ts'
import { MENU_SCRIPT } from './menu-script.ts'
import type { DocsPage } from './site.ts'

/** The HTML, Markdown and llms.txt of the documentation site, from pages already resolved. */

export const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!)

/** Where the documentation assistant takes questions (POST, public, streamed answer). */
export const DOCS_ASSISTANT_PATH = '/api/docs/assistant'

/** A sidebar entry: a page, or a group of entries. */
export type NavigationItem = { readonly title: string; readonly url: string } | { readonly group: string; readonly items: readonly NavigationItem[] }

/** Where a page lives on the site: `docs/search` is served at `/docs/search`. */
export function pageUrlPath(pagePath: string): string {
  return `/docs/${pagePath.replace(/^\/+/, '').replace(/^docs\//, '')}`
}

/** The page as `/docs/<path>.md` serves it: a title heading, the description as a quote, the body. */
export function pageMarkdown(page: DocsPage): string {
  const body = page.markdown.replace(/^(\s*\n)+/, '').trimEnd()
  return `# ${page.title}\n\n${page.description ? `> ${page.description}\n\n` : ''}${body}\n`
}

export interface LlmsTxtInput {
  readonly name: string
  readonly description?: string
  readonly sections: readonly { readonly title: string; readonly links: readonly { title: string; url: string; description: string }[] }[]
}

/** llms.txt: `# name`, `> description`, then one `## section` of `- [title](url): description` lines each. */
export function llmsTxt(input: LlmsTxtInput): string {
  const oneLine = (text: string) => text.replace(/\s+/g, ' ').trim()
  const label = (text: string) => oneLine(text).replace(/[[\]]/g, '\\$&')
  const lines = [`# ${oneLine(input.name)}`, '']
  if (input.description) lines.push(`> ${oneLine(input.description)}`, '')
  for (const section of input.sections) {
    if (section.links.length === 0) continue
    lines.push(`## ${oneLine(section.title)}`, '')
    for (const link of section.links)
      lines.push(`- [${label(link.title)}](${link.url.replace(/[\s()<>]/g, encodeURIComponent)})${link.description ? `: ${oneLine(link.description)}` : ''}`)
    lines.push('')
  }
  return lines.join('\n')
}

const STYLE = `
:root { color-scheme: light dark; --fg: #0f172a; --muted: #64748b; --bg: #ffffff; --panel: #f8fafc; --border: #e2e8f0; --accent: #2563eb; --code: #f1f5f9; }
@media (prefers-color-scheme: dark) { :root { --fg: #e2e8f0; --muted: #94a3b8; --bg: #0b1120; --panel: #111827; --border: #1e293b; --accent: #60a5fa; --code: #1e293b; } }
* { box-sizing: border-box; }
body { margin: 0; font: 16px/1.65 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--fg); background: var(--bg); }
a { color: var(--accent); text-decoration: none; } a:hover { text-decoration: underline; }
.topbar { position: sticky; top: 0; z-index: 5; display: flex; align-items: center; gap: 1rem; padding: .75rem 1.5rem; border-bottom: 1px solid var(--border); background: var(--bg); }
.topbar .site { font-weight: 650; color: var(--fg); }
.layout { display: grid; grid-template-columns: 16rem minmax(0, 1fr) 14rem; gap: 2.5rem; max-width: 90rem; margin: 0 auto; padding: 0 1.5rem; }
.sidebar, .toc { position: sticky; top: 3.5rem; align-self: start; max-height: calc(100vh - 3.5rem); overflow: auto; padding: 1.5rem 0; font-size: .9rem; }
.sidebar ul, .toc ul { list-style: none; margin: 0; padding: 0; }
.sidebar ul ul { padding-left: .75rem; }
.sidebar .group { margin: 1.25rem 0 .35rem; font-weight: 600; font-size: .8rem; text-transform: uppercase; letter-spacing: .04em; color: var(--muted); }
.sidebar a { display: block; padding: .3rem .6rem; border-radius: .4rem; color: var(--fg); }
.sidebar a[aria-current="page"] { background: var(--panel); color: var(--accent); font-weight: 600; }
main { min-width: 0; padding: 2rem 0 4rem; }
.page-header { display: flex; justify-content: space-between; align-items: flex-start; gap: 1rem; }
.eyebrow { margin: 0; color: var(--accent); font-size: .85rem; font-weight: 600; }
h1 { margin: .2rem 0 .4rem; font-size: 2rem; line-height: 1.2; }
.description { margin: 0 0 1.5rem; color: var(--muted); font-size: 1.1rem; }
.content h2 { margin-top: 2.2rem; font-size: 1.45rem; } .content h3 { margin-top: 1.6rem; }
.content .anchor { color: inherit; }
.content code { font: .88em ui-monospace, SFMono-Regular, Menlo, monospace; background: var(--code); padding: .1em .35em; border-radius: .3em; }
.content pre { background: var(--code); padding: 1rem; border-radius: .6rem; overflow: auto; }
.content pre code { padding: 0; background: none; }
.content .table { overflow-x: auto; }
.content table { border-collapse: collapse; width: 100%; font-size: .92rem; }
.content th, .content td { border-bottom: 1px solid var(--border); padding: .45rem .6rem; text-align: left; vertical-align: top; }
.content tr:target, .content td:target { background: var(--panel); }
.mdx { border: 1px solid var(--border); border-radius: .6rem; padding: .25rem 1rem; margin: 1rem 0; background: var(--panel); }
.mdx-title { font-weight: 600; }
.callout-warning, .callout-danger { border-color: #f59e0b; }
.toc .label { font-weight: 600; margin: 0 0 .5rem; }
.toc li.depth-3 { padding-left: .75rem; }
.toc a { color: var(--muted); display: block; padding: .15rem 0; }
.menu { position: relative; display: inline-flex; flex-shrink: 0; }
.menu-primary, .menu-more > summary { display: inline-flex; align-items: center; gap: .35rem; padding: .35rem .7rem; border: 1px solid var(--border); background: var(--bg); color: var(--fg); font: inherit; font-size: .85rem; cursor: pointer; }
.menu-primary { border-radius: .5rem 0 0 .5rem; border-right: 0; }
.menu-more > summary { list-style: none; border-radius: 0 .5rem .5rem 0; }
.menu-more > summary::-webkit-details-marker { display: none; }
.menu-list { position: absolute; right: 0; top: calc(100% + .35rem); z-index: 10; width: 19rem; padding: .35rem; border: 1px solid var(--border); border-radius: .7rem; background: var(--bg); box-shadow: 0 10px 30px rgb(0 0 0 / .12); }
.menu-item { display: flex; flex-direction: column; width: 100%; padding: .5rem .65rem; border: 0; border-radius: .5rem; background: none; color: var(--fg); font: inherit; text-align: left; cursor: pointer; }
.menu-item:hover, .menu-item:focus-visible { background: var(--panel); text-decoration: none; }
.menu-item img { width: 1rem; height: 1rem; }
.menu-title { font-size: .9rem; font-weight: 550; }
.menu-description { font-size: .8rem; color: var(--muted); }
.menu-item[data-state="copied"] .menu-title::after, .menu-primary[data-state="copied"]::after { content: " ✓ Copied"; color: var(--accent); }
.menu-item[data-state="failed"] .menu-title::after, .menu-primary[data-state="failed"]::after { content: " — copy failed"; color: #dc2626; }
.toc .menu-toc { margin-top: 1.5rem; border-top: 1px solid var(--border); padding-top: 1rem; }
.assistant { width: min(40rem, calc(100vw - 2rem)); max-height: calc(100vh - 4rem); padding: 1rem 1.25rem; border: 1px solid var(--border); border-radius: .8rem; background: var(--bg); color: var(--fg); }
.assistant::backdrop { background: rgb(0 0 0 / .35); }
.assistant-head { display: flex; justify-content: space-between; align-items: center; }
.assistant-head h2 { margin: 0; font-size: 1.1rem; }
.assistant-close { border: 0; background: none; color: var(--muted); font-size: 1.4rem; cursor: pointer; }
.assistant label { display: block; margin: .6rem 0 .3rem; color: var(--muted); font-size: .85rem; }
.assistant textarea { width: 100%; padding: .5rem; border: 1px solid var(--border); border-radius: .5rem; background: var(--panel); color: var(--fg); font: inherit; resize: vertical; }
.assistant-actions { display: flex; justify-content: flex-end; margin-top: .5rem; }
.assistant-ask { padding: .35rem 1rem; border: 0; border-radius: .5rem; background: var(--accent); color: #fff; font: inherit; cursor: pointer; }
.assistant-ask:disabled { opacity: .6; cursor: progress; }
.assistant-answer { white-space: pre-wrap; margin-top: .8rem; }
.assistant-error { color: #dc2626; }
.assistant-sources ul { margin: .3rem 0 0; padding-left: 1.2rem; }
.visually-hidden { position: absolute; width: 1px; height: 1px; overflow: hidden; clip-path: inset(50%); white-space: nowrap; }
@media (max-width: 75rem) { .layout { grid-template-columns: 14rem minmax(0, 1fr); } .toc { display: none; } .toc.has-menu { display: block; grid-column: 2; position: static; max-height: none; } }
@media (max-width: 48rem) { .layout { display: block; } .sidebar { position: static; max-height: none; } }
`

const sha256 = (text: string) => `'sha256-${new Bun.CryptoHasher('sha256').update(text).digest('base64')}'`

/**
 * Every page's Content-Security-Policy: only this stylesheet and script run, no request leaves the
 * page but images (icons), navigation and the assistant's requests to this origin.
 */
export const DOCS_CSP = [
  "default-src 'none'",
  `style-src ${sha256(STYLE)}`,
  `script-src ${sha256(MENU_SCRIPT)}`,
  "img-src 'self' https: data:",
  // The assistant dialog posts its question to this origin and reads the streamed answer.
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ')

function iconHtml(icon: Icon | undefined): string {
  // Only pictures by URL or path are drawn; icon-font names need the platform's font libraries.
  if (typeof icon !== 'string' || !/^(https:\/\/|\/)/.test(icon)) return ''
  return `<img src="${escapeHtml(icon)}" alt="" aria-hidden="true">`
}

/** The attributes that make an element do what `entry` does, the class and role aside. */
function actionAttributes(entry: MenuEntry): string {
  const id = `data-option="${escapeHtml(entry.id)}"`
  switch (entry.kind) {
    case 'copy': {
      const copy = 'page' in entry.copy ? 'data-copy="page"' : `data-copy="text" data-copy-text="${escapeHtml(entry.copy.text)}"`
      return `${id} ${copy}${entry.fallbackHref ? ` href="${escapeHtml(entry.fallbackHref)}"` : ''}`
    }
    case 'assistant':
      return `${id} data-action="assistant" aria-haspopup="dialog" aria-controls="docs-assistant"`
    case 'link':
      return `${id} href="${escapeHtml(entry.href)}"${entry.newTab ? ' target="_blank" rel="noopener noreferrer"' : ''}${entry.download ? ' download' : ''}`
  }
}

/** A link when the entry leads somewhere without script, else a button. */
function entryElement(entry: MenuEntry, attributes: string, body: string): string {
  const isLink = entry.kind === 'link' || (entry.kind === 'copy' && entry.fallbackHref !== undefined)
  return isLink ? `<a ${attributes}>${body}</a>` : `<button type="button" ${attributes}>${body}</button>`
}

function entryHtml(entry: MenuEntry, className: string, role: string): string {
  const attrs = `class="${className}" ${actionAttributes(entry)}${role ? ` role="${role}"` : ''}`
  const body = `${iconHtml(entry.icon)}<span class="menu-title">${escapeHtml(entry.title)}</span><span class="menu-description">${escapeHtml(entry.description)}</span>`
  return entryElement(entry, attrs, body)
}

/** The header menu: the first entry as a button, all entries in a dropdown opened by the arrow button. */
export function headerMenuHtml(entries: readonly MenuEntry[]): string {
  if (entries.length === 0) return ''
  const first = entries[0]!
  // The primary button copies without a fallback link, as the page's own button always has script.
  const primaryEntry: MenuEntry = first.kind === 'copy' ? { ...first, fallbackHref: undefined } : first
  const primary = entryElement(primaryEntry, `class="menu-primary" ${actionAttributes(primaryEntry)}`, escapeHtml(first.title))
  return (
    `<div class="menu" data-contextual="header">${primary}` +
    `<details class="menu-more"><summary aria-label="More page actions" aria-haspopup="menu">▾</summary>` +
    `<div class="menu-list" role="menu" aria-label="Page actions">${entries.map((e) => entryHtml(e, 'menu-item', 'menuitem')).join('')}</div>` +
    `</details></div>`
  )
}

/**
 * The documentation assistant's dialog, on pages whose menu has the `assistant` entry. The menu script
 * opens it, posts the question to `endpoint` and writes the streamed answer in as text.
 */
export function assistantDialogHtml(endpoint: string): string {
  return (
    `<dialog id="docs-assistant" class="assistant" aria-labelledby="docs-assistant-title" data-endpoint="${escapeHtml(endpoint)}">` +
    `<form class="assistant-form">` +
    `<div class="assistant-head"><h2 id="docs-assistant-title">Ask the documentation</h2><button type="button" class="assistant-close" aria-label="Close">×</button></div>` +
    `<label for="docs-assistant-question">Your question, answered from these pages with this one as context</label>` +
    `<textarea id="docs-assistant-question" name="question" rows="3" maxlength="2000" required></textarea>` +
    `<div class="assistant-actions"><button type="submit" class="assistant-ask">Ask</button></div>` +
    `</form>` +
    `<div class="assistant-answer" aria-live="polite"></div>` +
    `<p class="assistant-error" role="alert" hidden></p>` +
    `<div class="assistant-sources" hidden><p class="label">Sources</p><ul></ul></div>` +
    `</dialog>`
  )
}

/** The table-of-contents placement: every entry listed under the headings. */
export function tocMenuHtml(entries: readonly MenuEntry[]): string {
  if (entries.length === 0) return ''
  return `<div class="menu-toc" data-contextual="toc"><p class="label">Use this page</p><ul>${entries.map((e) => `<li>${entryHtml(e, 'menu-item', '')}</li>`).join('')}</ul></div>`
}

function navigationHtml(items: readonly NavigationItem[], currentUrl: string, nested: boolean): string {
  const parts = items.map((item) => {
    if ('url' in item) {
      const current = item.url === currentUrl ? ' aria-current="page"' : ''
      return `<li><a href="${escapeHtml(item.url)}"${current}>${escapeHtml(item.title)}</a></li>`
    }
    const inner = navigationHtml(item.items, currentUrl, true)
    return nested ? `<li><p class="group">${escapeHtml(item.group)}</p>${inner}</li>` : `<p class="group">${escapeHtml(item.group)}</p>${inner}`
  })
  return nested ? `<ul>${parts.join('')}</ul>` : parts.join('')
}

export interface PageDocument {
  readonly siteName: string
  readonly page: DocsPage
  readonly url: string
  readonly contentHtml: string
  readonly headings: readonly Heading[]
  readonly navigation: readonly NavigationItem[]
  readonly menu: readonly MenuEntry[]
  readonly display: ContextualDisplay
  /** The page's Markdown, handed to the copy action. */
  readonly markdown: string
  /** The API reference links of the sidebar. */
  readonly apiReference: readonly { title: string; url: string }[]
}

/** One whole HTML page: top bar, navigation sidebar, the page with its menu, table of contents. */
export function pageDocument(doc: PageDocument): string {
  const toc = doc.headings.length
    ? `<p class="label">On this page</p><ul>${doc.headings.map((h) => `<li class="depth-${h.depth}"><a href="#${escapeHtml(h.id)}">${escapeHtml(h.text)}</a></li>`).join('')}</ul>`
    : ''
  const tocMenu = doc.display === 'toc' ? tocMenuHtml(doc.menu) : ''
  const headerMenu = doc.display === 'header' ? headerMenuHtml(doc.menu) : ''
  // A JSON data block is never executed; escaping "<" keeps "</script>" in the Markdown from ending it.
  const data = JSON.stringify({ path: doc.url, markdown: doc.markdown }).replace(/</g, '\\u003c')
  const api = doc.apiReference.map((link) => `<li><a href="${escapeHtml(link.url)}">${escapeHtml(link.title)}</a></li>`).join('')
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(doc.page.title)} · ${escapeHtml(doc.siteName)}</title>
${doc.page.description ? `<meta name="description" content="${escapeHtml(doc.page.description)}">\n` : ''}<link rel="alternate" type="text/markdown" href="${escapeHtml(doc.url)}.md">
<style>${STYLE}</style>
</head>
<body>
<header class="topbar"><a class="site" href="/docs">${escapeHtml(doc.siteName)}</a></header>
<div class="layout">
<nav class="sidebar" aria-label="Documentation">${navigationHtml(doc.navigation, doc.url, false)}<p class="group">API reference</p><ul>${api}</ul></nav>
<main>
<div class="page-header"><div>${doc.page.group ? `<p class="eyebrow">${escapeHtml(doc.page.group)}</p>` : ''}<h1>${escapeHtml(doc.page.title)}</h1>${doc.page.description ? `<p class="description">${escapeHtml(doc.page.description)}</p>` : ''}</div>${headerMenu}</div>
<article class="content">${doc.contentHtml}</article>
</main>
<aside class="toc${tocMenu ? ' has-menu' : ''}" aria-label="On this page">${toc}${tocMenu}</aside>
</div>
<p id="docs-menu-status" class="visually-hidden" role="status" aria-live="polite"></p>
${doc.menu.some((entry) => entry.kind === 'assistant') ? `${assistantDialogHtml(DOCS_ASSISTANT_PATH)}\n` : ''}<script type="application/json" id="docs-page">${data}</script>
<script>${MENU_SCRIPT}</script>
</body>
</html>
`
}
