/**
 * Full-text search over the documentation pages, one Orama document per heading section, so a hit
 * names the page and the section it is in. The composition root builds one and hands it to the
 * documentation assistant and the MCP server.
 */
import { lazily } from '../../src/lazy.ts'
import { pageUrlPath } from './render.ts'
import type { DocsPage } from './site.ts'
import { plainText, snippetOf, splitSections } from './sections.ts'

export interface DocsHit {
  /** Navigation path of the page, e.g. `docs/search`. */
  path: string
  /** Title of the page. */
  title: string
  /** Heading of the matching section; absent for the part of the page before its first heading. */
  section?: string
  /** The page on the documentation site. */
  url: string
  /** The page as Markdown. */
  markdownUrl: string
  snippet: string
  score: number
}

export interface DocsIndex {
  /** Pages in navigation order. */
  readonly pages: readonly DocsPage[]
  search(query: string, limit: number): Promise<DocsHit[]>
  /** The page at `path` (`docs/search`, also `search`, `/docs/search`, `docs/search.md` or its URL). */
  page(path: string): DocsPage | undefined
  urlOf(page: DocsPage): { url: string; markdownUrl: string }
}

const schema = { title: 'string', heading: 'string', content: 'string' } as const

interface SectionDocument {
  title: string
  heading: string
  content: string
  pagePath: string
  section: string | undefined
}

// The search engine is loaded with the first search, like the database it builds.
const orama = lazily(() => import('@orama/orama'))

/** Every section of every page in one Orama database. */
async function sectionDatabase(pages: readonly DocsPage[]) {
  const { create, insert } = await orama()
  const db = create({ schema, components: { tokenizer: { language: 'english', stemming: true } } })
  const documents: SectionDocument[] = pages.flatMap((page) =>
    splitSections(page.markdown).map((section) => ({
      title: page.title,
      heading: section.heading ?? page.description,
      content: plainText(section.markdown),
      pagePath: page.path,
      section: section.heading,
    })),
  )
  // With Orama's built-in components insert is synchronous, so the index is complete once this returns.
  for (const document of documents) insert(db, document)
  return db
}

/**
 * `publicBaseUrl` makes the links: a page `docs/search` is at `<publicBaseUrl>/docs/search`, as the
 * documentation site serves it, and its Markdown at the same address with `.md`. The search database is
 * built at the first search, so a start-up that never searches does not pay for it.
 */
export function createDocsIndex(pages: readonly DocsPage[], publicBaseUrl: string): DocsIndex {
  const base = publicBaseUrl.replace(/\/+$/, '')
  const byPath = new Map(pages.map((page) => [page.path, page]))
  const database = lazily(() => sectionDatabase(pages))

  // The documentation site's own addresses, so the links and the site cannot disagree.
  const urlOf = (page: DocsPage) => {
    const url = `${base}${pageUrlPath(page.path)}`
    return { url, markdownUrl: `${url}.md` }
  }

  const page = (path: string) => {
    let key = path.trim()
    if (key.startsWith(`${base}/`)) key = key.slice(base.length)
    key = key
      .replace(/[?#].*$/, '')
      .replace(/^\/+|\/+$/g, '')
      .replace(/\.mdx?$/, '')
    return byPath.get(key) ?? byPath.get(`docs/${key}`)
  }

  return {
    pages,
    page,
    urlOf,
    async search(query, limit) {
      const { search } = await orama()
      const found = await search(await database(), { term: query, properties: ['title', 'heading', 'content'], boost: { title: 2, heading: 1.5 }, limit })
      return found.hits.map((hit) => {
        const doc = hit.document as unknown as SectionDocument
        return {
          path: doc.pagePath,
          title: doc.title,
          ...(doc.section === undefined ? {} : { section: doc.section }),
          ...urlOf(byPath.get(doc.pagePath)!),
          snippet: snippetOf(doc.content || doc.heading, query),
          score: Number(hit.score.toFixed(4)),
        }
      })
    },
  }
}
