import { Elysia, t } from 'elysia'
import { join } from 'node:path'
import { AppError } from '../../src/errors.ts'
import { lazily } from '../../src/lazy.ts'
import type { Logger } from '../../src/log.ts'
import { problem } from '../../src/schemas.ts'
import { docsAssistantPlugin, type DocsAssistantOptions } from './assistant.ts'
import { parseContextualConfig, resolveMenu } from './contextual.ts'
import { OPENAPI_JSON_PATH } from './openapi.ts'
import { DOCS_CSP, llmsTxt, pageDocument, pageMarkdown, pageUrlPath, type NavigationItem } from './render.ts'
import { loadDocsSite, type DocsConfig, type DocsPage, type DocsSite } from './site.ts'

export interface DocsSitePluginOptions {
  /** The documentation served. Default: docs.json and its pages as bundled with the service. */
  site?: DocsSite
  /** Public URL of the service (PUBLIC_BASE_URL); assistant prompts and llms.txt carry absolute links. */
  publicBaseUrl: string
  /** Public URL of the hosted MCP server (DOCS_MCP_URL): the `mcp` and editor options, `$mcp`. */
  mcpUrl: string
  /**
   * The documentation assistant (POST /api/docs/assistant and the menu's `assistant` entry). Without it,
   * or without a model provider, the entry is left out of the menu with a warning. Default: none.
   */
  assistant?: Omit<DocsAssistantOptions, 'siteName' | 'logger'>
  /** Told at start-up about menu entries left out, and about assistant failures. Default: nobody. */
  logger?: Logger
}

/** One page as the site serves it; pages do not change while the service runs, so what is drawn is kept. */
export interface BuiltPage {
  readonly markdown: string
  /** Its HTML document, rendered on first request: a start-up renders no page. */
  html(): Promise<string>
  /** Its PDF, drawn on first request. */
  pdf(): Promise<Uint8Array>
}

/** Every page by URL path, checked at start-up and rendered when first asked for. */
export interface BuiltDocsSite {
  readonly pages: ReadonlyMap<string, BuiltPage>
  /** Where /docs sends the reader: the first page of the navigation. */
  readonly firstUrl: string
  readonly llmsTxt: string
}

let bundled: DocsSite | undefined

/**
 * docs.json and its pages as bundled with the service: what the site serves unless given another. The executable
 * carries them in its code; from a checkout they are read from disk, which takes far less than a start spends
 * running the bundling macro (./built-in-site.ts) when it transpiles the module that calls it.
 */
export function bundledSite(): DocsSite {
  return (bundled ??= import.meta.url.startsWith('file:///$bunfs/')
    ? (require('./built-in-site.ts') as typeof import('./built-in-site.ts')).BUILT_IN_SITE
    : loadDocsSite(join(import.meta.dir, '..', '..')))
}

// The Markdown renderer comes with the first page asked for; pdf-lib and its font metrics, the heaviest modules of
// the site, with the first PDF download.
const markdownRenderer = lazily(() => import('./markdown.ts'))
const pdfRenderer = lazily(() => import('./pdf.ts'))

const API_REFERENCE = [
  { title: 'API explorer', url: '/swagger' },
  { title: 'OpenAPI document', url: OPENAPI_JSON_PATH },
]

type NavigationGroup = DocsConfig['navigation']['groups'][number]

/**
 * Validates the contextual menu configuration (throwing a ContextualConfigError that names each bad
 * entry) and the pages' addresses; each page is rendered with its sidebar and menu when first requested.
 */
export function buildDocsSite(site: DocsSite, options: Omit<DocsSitePluginOptions, 'site'>): BuiltDocsSite {
  const parsed = parseContextualConfig(site.config.contextual)
  const models = options.assistant?.models
  const assistantOffered = models?.configured === true
  if (!assistantOffered && parsed.options.includes('assistant'))
    options.logger?.warn('documentation assistant left out of the menu: no chat model provider is configured', {
      option: 'assistant',
      missing: models ? models.settings.join(' or ') : 'a model provider',
    })

  const base = options.publicBaseUrl.replace(/\/+$/, '')
  const byPath = new Map<string, DocsPage>()
  const urlOwner = new Map<string, string>()
  for (const page of site.pages) {
    const url = pageUrlPath(page.path)
    const owner = urlOwner.get(url)
    if (owner !== undefined && owner !== page.path) throw new Error(`docs.json pages "${owner}" and "${page.path}" would both be served at ${url}`)
    urlOwner.set(url, page.path)
    if (!byPath.has(page.path)) byPath.set(page.path, page)
  }
  if (byPath.size === 0) throw new Error('docs.json navigation lists no pages')

  const toNavigation = (group: NavigationGroup): NavigationItem => ({
    group: group.group,
    items: group.pages.map((entry) => (typeof entry === 'string' ? { title: byPath.get(entry)!.title, url: pageUrlPath(entry) } : toNavigation(entry))),
  })
  const navigation = site.config.navigation.groups.map(toNavigation)

  const pages = new Map<string, BuiltPage>()
  for (const page of byPath.values()) {
    const url = pageUrlPath(page.path)
    const markdown = pageMarkdown(page)
    const render = async () => {
      const rendered = (await markdownRenderer()).renderMarkdown(page.markdown)
      // Custom entries keep their docs.json index in their id, so the assistant is taken out after resolving.
      const menu = resolveMenu(parsed, {
        path: url,
        markdown,
        markdownUrl: `${base}${url}.md`,
        mcpUrl: options.mcpUrl,
        serverName: site.config.name,
        specUrl: OPENAPI_JSON_PATH,
      }).filter((entry) => assistantOffered || entry.kind !== 'assistant')
      return pageDocument({
        siteName: site.config.name,
        page,
        url,
        contentHtml: rendered.html,
        headings: rendered.headings,
        navigation,
        menu,
        display: parsed.display,
        markdown,
        apiReference: API_REFERENCE,
      })
    }
    const source = { markdown, title: page.title, url: `${base}${url}`, baseUrl: base, siteName: site.config.name }
    // A failure is not kept: the next request draws the page again.
    pages.set(url, {
      markdown,
      html: lazily(render),
      pdf: lazily(async () => (await pdfRenderer()).renderPagePdf(source)),
    })
  }

  const sections: { title: string; links: { title: string; url: string; description: string }[] }[] = []
  const collect = (group: NavigationGroup) => {
    const links = group.pages
      .filter((entry): entry is string => typeof entry === 'string')
      .map((path) => byPath.get(path)!)
      .map((page) => ({ title: page.title, url: `${base}${pageUrlPath(page.path)}.md`, description: page.description }))
    sections.push({ title: group.group, links })
    for (const entry of group.pages) if (typeof entry !== 'string') collect(entry)
  }
  site.config.navigation.groups.forEach(collect)
  sections.push({
    title: 'API reference',
    links: [{ title: 'OpenAPI document', url: `${base}${OPENAPI_JSON_PATH}`, description: 'Every route with its request and response schemas' }],
  })

  return {
    pages,
    firstUrl: pageUrlPath(byPath.keys().next().value!),
    llmsTxt: llmsTxt({
      name: site.config.name,
      description: typeof site.config.description === 'string' ? site.config.description : undefined,
      sections,
    }),
  }
}

const CACHE = 'public, max-age=300'
const text = (body: string, contentType: string, extra: Record<string, string> = {}) =>
  new Response(body, { headers: { 'content-type': contentType, 'cache-control': CACHE, 'x-content-type-options': 'nosniff', ...extra } })

/** `guide/deep` -> `guide-deep.pdf`: one path segment of letters, digits, `.`, `_` and `-`. */
export function pdfFileName(slug: string): string {
  const name = slug.replace(/[^A-Za-z0-9._-]+/g, '-').replace(/^[-.]+|-+$/g, '')
  return `${name || 'page'}.pdf`
}

/**
 * The public documentation site, no authentication (its routes are left out of the OpenAPI document,
 * like the explorer's own): GET /docs (to the first page), /docs/<path> as
 * HTML with the navigation sidebar and the contextual menu, /docs/<path>.md as Markdown,
 * /docs/<path>.pdf as a PDF download, and /llms.txt listing every page. The configuration is checked when the
 * plugin is built; each page's HTML and PDF are drawn at its first request. With `assistant`, it also mounts
 * POST /api/docs/assistant.
 */
export function docsSitePlugin(options: DocsSitePluginOptions) {
  const site = options.site ?? bundledSite()
  const built = buildDocsSite(site, options)
  const pages = new Elysia({ name: 'docs-site', seed: `${options.publicBaseUrl} ${options.mcpUrl} ${site.config.name}`, detail: { tags: ['documentation'] } })
    .get('/docs', ({ redirect }) => redirect(built.firstUrl, 303), {
      response: { 303: t.Void({ description: 'Redirect to the first documentation page (Location header)' }) },
      detail: { summary: 'Documentation home: redirects to the first page', hide: true },
    })
    .get(
      '/docs/*',
      async ({ params, redirect }) => {
        const requested = params['*']
        const format = /\.(md|pdf)$/.exec(requested)?.[1] as 'md' | 'pdf' | undefined
        const slug = (format ? requested.slice(0, -format.length - 1) : requested).replace(/\/+$/, '')
        if (slug === '' && !format) return redirect(built.firstUrl, 303)
        // Only the pages docs.json lists are answered; nothing is read from disk by path.
        const page = built.pages.get(`/docs/${slug}`)
        if (!page) throw new AppError('not_found', `No documentation page at /docs/${requested}`)
        if (format === 'md') return text(page.markdown, 'text/markdown; charset=utf-8')
        if (format === 'pdf')
          return new Response(await page.pdf(), {
            headers: {
              'content-type': 'application/pdf',
              'content-disposition': `attachment; filename="${pdfFileName(slug)}"`,
              'cache-control': CACHE,
              'x-content-type-options': 'nosniff',
            },
          })
        return text(await page.html(), 'text/html; charset=utf-8', { 'content-security-policy': DOCS_CSP })
      },
      {
        params: t.Object({ '*': t.String({ description: 'Page path, with .md for its Markdown or .pdf for a PDF' }) }),
        response: {
          200: t.Any({ description: 'The page as HTML, as Markdown (text/markdown) with .md, or as a PDF download (application/pdf) with .pdf' }),
          303: t.Void({ description: 'Redirect to the first page' }),
          404: problem,
        },
        detail: { summary: 'A documentation page as HTML, its Markdown with .md, its PDF with .pdf', hide: true },
      },
    )
    .get('/llms.txt', () => text(built.llmsTxt, 'text/plain; charset=utf-8'), {
      response: { 200: t.String({ description: 'llms.txt: every documentation page with a link to its Markdown' }) },
      detail: { summary: 'Index of the documentation for language models', hide: true },
    })
  if (!options.assistant) return pages
  return pages.use(docsAssistantPlugin({ ...options.assistant, siteName: site.config.name, logger: options.logger }))
}
