/**
 * What the documentation assistant asks the model: the reader's page, the sections of the documentation
 * that match the question best, and the question. Plain functions over the documentation index.
 */
import type { ModelMessage } from '../../src/llm/provider.ts'
import type { DocsIndex } from './search-index.ts'
import { splitSections } from './sections.ts'
import type { DocsPage } from './site.ts'

/** A page the answer drew on, as the `sources` event lists it. */
export interface AssistantSource {
  readonly title: string
  /** Navigation path, as the MCP `get_page` tool takes it: `docs/chat`. */
  readonly path: string
  /** The page on the documentation site. */
  readonly url: string
}

export interface RetrievedSection {
  readonly page: DocsPage
  /** The section's heading; absent for a page's opening. */
  readonly heading?: string
  readonly markdown: string
}

export interface AssistantContext {
  readonly page?: DocsPage
  readonly sections: readonly RetrievedSection[]
  readonly sources: readonly AssistantSource[]
}

/** Limits that keep a prompt to a few thousand tokens whatever the pages hold. */
export const CONTEXT_LIMITS = { pageChars: 12_000, sectionChars: 2_500, sections: 5, sectionsChars: 10_000 } as const

const cut = (text: string, max: number) => (text.length <= max ? text : `${text.slice(0, max).trimEnd()}\n…`)

/**
 * The sections the index finds for `question`, best first, each once; sections of the reader's own page
 * are left out, since the whole page is sent. Sources list the reader's page first.
 */
export async function gatherContext(index: DocsIndex, question: string, page: DocsPage | undefined): Promise<AssistantContext> {
  const hits = await index.search(question, CONTEXT_LIMITS.sections * 3)
  const sections: RetrievedSection[] = []
  const seen = new Set<string>()
  let used = 0
  for (const hit of hits) {
    if (sections.length >= CONTEXT_LIMITS.sections || used >= CONTEXT_LIMITS.sectionsChars) break
    const key = `${hit.path}#${hit.section ?? ''}`
    if (hit.path === page?.path || seen.has(key)) continue
    seen.add(key)
    const found = index.page(hit.path)
    const section = found && splitSections(found.markdown).find((s) => s.heading === hit.section)
    if (!found || !section) continue
    const markdown = cut(section.markdown, Math.min(CONTEXT_LIMITS.sectionChars, CONTEXT_LIMITS.sectionsChars - used))
    used += markdown.length
    sections.push({ page: found, ...(hit.section === undefined ? {} : { heading: hit.section }), markdown })
  }
  const sources: AssistantSource[] = []
  for (const source of [page, ...sections.map((s) => s.page)])
    if (source && !sources.some((s) => s.path === source.path)) sources.push({ title: source.title, path: source.path, url: index.urlOf(source).url })
  return { ...(page ? { page } : {}), sections, sources }
}

// Attribute values in the prompt's tags; the model reads them, so quotes are all that needs care.
const attribute = (text: string) => text.replace(/"/g, "'").replace(/\s+/g, ' ')

/** The system instructions and one user message carrying the documentation and the question. */
export function assistantMessages(siteName: string, question: string, context: AssistantContext, urlOf: (page: DocsPage) => string): ModelMessage[] {
  const system = [
    `You are the documentation assistant of ${siteName}.`,
    "Answer the reader's question from the documentation given below and nothing else. When it does not hold the answer, say so and name the page that comes closest.",
    'Be brief. Write routes, fields, headers and variables exactly as the documentation does. Answer in plain text: no HTML.',
  ].join(' ')
  const parts: string[] = []
  if (context.page)
    parts.push(
      `The reader is on the page "${attribute(context.page.title)}" (${urlOf(context.page)}):`,
      `<page title="${attribute(context.page.title)}" url="${urlOf(context.page)}">\n${cut(context.page.markdown.trim(), CONTEXT_LIMITS.pageChars)}\n</page>`,
    )
  if (context.sections.length > 0)
    parts.push(
      'Sections of the documentation that match the question:',
      ...context.sections.map(
        (s) =>
          `<section page="${attribute(s.page.title)}"${s.heading ? ` heading="${attribute(s.heading)}"` : ''} url="${urlOf(s.page)}">\n${s.markdown}\n</section>`,
      ),
    )
  if (parts.length === 0) parts.push('No section of the documentation matches the question.')
  parts.push(`Question: ${question.trim()}`)
  return [
    { role: 'system', content: system },
    { role: 'user', content: parts.join('\n\n') },
  ]
}
