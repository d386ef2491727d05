/**
 * Markdown from a model (chat answers, task summaries) as sanitised DOM: `marked` writes HTML (any HTML in the text
 * becomes text), DOMPurify keeps only inert markup. Nothing the page's Content-Security-Policy would refuse survives (no images, which would load from
 * elsewhere; no inline styles), links go only to web or mail addresses and open outside the page.
 */
import DOMPurify, { type Config } from 'dompurify'
import { Marked } from 'marked'

const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`)

/**
 * HTML written into the Markdown is shown as text: a model has no reason to write markup, and parsing it at all would
 * make Chromium report each inline handler it carries against the page's policy (even in an inert document).
 */
const marked = new Marked({ gfm: true, breaks: false, async: false, renderer: { html: ({ text }) => escapeHtml(text) } })

const LINK = /^(https?:|mailto:)/i

DOMPurify.addHook('afterSanitizeAttributes', (node) => {
  if (node.tagName !== 'A') return
  const href = node.getAttribute('href') ?? ''
  if (!LINK.test(href.trim())) {
    node.removeAttribute('href')
    return
  }
  node.setAttribute('target', '_blank')
  node.setAttribute('rel', 'noopener noreferrer')
})

const PURIFY: Config & { RETURN_DOM_FRAGMENT: true } = {
  USE_PROFILES: { html: true },
  FORBID_TAGS: ['img', 'picture', 'source', 'video', 'audio', 'iframe', 'style', 'form', 'input', 'button', 'textarea', 'select', 'svg', 'math'],
  FORBID_ATTR: ['style', 'class', 'id', 'srcset'],
  ALLOW_DATA_ATTR: false,
  RETURN_DOM_FRAGMENT: true,
}

/** The text's Markdown rendered into a `.markdown` element of this tag and attributes. */
export function markdown(text: string, attributes: Record<string, string> = {}, tag: 'div' | 'span' = 'div'): HTMLElement {
  const html = (marked.parse(text) as string).trim()
  const element = document.createElement(tag)
  for (const [name, value] of Object.entries(attributes)) element.setAttribute(name, value)
  element.classList.add('markdown')
  element.append(DOMPurify.sanitize(html, PURIFY))
  return element
}
