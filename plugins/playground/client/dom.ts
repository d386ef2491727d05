/**
 * Small DOM helpers: elements are built from text, never from HTML strings, so nothing streamed is parsed as markup.
 * The one exception is a model's Markdown, rendered and sanitised in ./markdown.ts.
 */

type Child = Node | string | null | undefined | false

/** An element with attributes (`class`, `data-*`, ...) and children; strings become text nodes. */
export function el<K extends keyof HTMLElementTagNameMap>(tag: K, attributes: Record<string, string> = {}, ...children: Child[]): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag)
  for (const [name, value] of Object.entries(attributes)) element.setAttribute(name, value)
  for (const child of children) if (child) element.append(child)
  return element
}

/** The element with this id; the page is broken without it. */
export function byId<T extends HTMLElement = HTMLElement>(id: string): T {
  const element = document.getElementById(id)
  if (!element) throw new Error(`#${id} is missing from the page`)
  return element as T
}

/** A link that opens outside the page, for web addresses only. */
export function externalLink(url: string, text: string): HTMLElement {
  if (!/^https?:\/\//i.test(url)) return el('span', {}, text)
  return el('a', { href: url, target: '_blank', rel: 'noopener noreferrer' }, text)
}

/** JSON for display, cut when long. */
export function shortJson(value: unknown, limit = 600): string {
  const text = JSON.stringify(value, null, 2) ?? String(value)
  return text.length > limit ? `${text.slice(0, limit)}…` : text
}
