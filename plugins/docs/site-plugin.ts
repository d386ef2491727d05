import { Elysia, t } from 'elysia'
import { AppError } from '../../src/errors.ts'
import type { Logger } from '../../src/log.ts'
import { problem } from '../../src/models.ts'
import { bundledDocsSite } from './bundle.ts' with { type: 'macro' }
import { parseContextualConfig, resolveMenu, UNSUPPORTED_OPTIONS } from './contextual.ts'
import { OPENAPI_JSON_PATH } from './index.ts'
import { renderMarkdown } from './markdown.ts'
import { DOCS_CSP, llmsTxt, pageDocument, pageMarkdown, pageUrlPath, type NavigationItem } from './render.ts'
import type { DocsConfig, DocsPage, DocsSite } from './site.ts'

export interface DocsSitePluginOptions {
  /** The documentation served. Default: docs.json and its pages as bundled with the service. */
  site?: DocsSite
  /** Public URL of the service (PUBLIC_BASE_URL); assistant prompts and llms.txt carry absolute links. */
  publicBaseUrl: string
  /** Public URL of the hosted MCP server (DOCS_MCP_URL): the `mcp` and editor options, `$mcp`. */
  mcpUrl: string
  /** Told at start-up about menu options this service has no counterpart for. Default: nobody. */
  logger?: Logger
}

/** Every page rendered once, at start-up: its HTML document and its Markdown, by URL path. */
export interface BuiltDocsSite {
  readonly pages: ReadonlyMap<string, { readonly html: string; readonly markdown: string }>
  /** Where /docs sends the reader: the first page of the navigation. */
  readonly firstUrl: string
  readonly llmsTxt: string
}

const API_REFERENCE = [
  { title: 'API explorer', url: '/swagger' },
  { title: 'OpenAPI document', url: OPENAPI_JSON_PATH },
]

type NavigationGroup = DocsConfig['navigation']['groups'][number]

/**
 * Validates the contextual menu configuration (throwing a ContextualConfigError that names each bad
 * entry) and renders every page with its sidebar and menu.
 */
export function buildDocsSite(site: DocsSite, options: Omit<DocsSitePluginOptions, 'site'>): BuiltDocsSite {
  const menuConfig = parseContextualConfig(site.config.contextual)
  for (const option of menuConfig.options)
    if (typeof option === 'string' && UNSUPPORTED_OPTIONS.includes(option))
      options.logger?.warn('documentation menu option not offered by this service; left out', { option })

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
    items: group.pages.map((entry) =>
      typeof entry === 'string' ? { title: byPath.get(entry)!.title, url: pageUrlPath(entry) } : toNavigation(entry),
    ),
  })
  const navigation = site.config.navigation.groups.map(toNavigation)

  const pages = new Map<string, { html: string; markdown: string }>()
  for (const page of byPath.values()) {
    const url = pageUrlPath(page.path)
    const markdown = pageMarkdown(page)
    const rendered = renderMarkdown(page.markdown)
    const menu = resolveMenu(menuConfig, {
      path: url,
      markdown,
      markdownUrl: `${base}${url}.md`,
      mcpUrl: options.mcpUrl,
      serverName: site.config.name,
      specUrl: OPENAPI_JSON_PATH,
    })
    const html = pageDocument({
      siteName: site.config.name,
      page,
      url,
      contentHtml: rendered.html,
      headings: rendered.headings,
      navigation,
      menu,
      display: menuConfig.display,
      markdown,
      apiReference: API_REFERENCE,
    })
    pages.set(url, { html, markdown })
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

/**
 * The public documentation site, no authentication (its routes are left out of the OpenAPI document,
 * like the explorer's own): GET /docs (to the first page), /docs/<path> as
 * HTML with the navigation sidebar and the contextual menu, /docs/<path>.md as Markdown, and
 * /llms.txt listing every page. Everything is rendered when the plugin is built.
 */
export function docsSitePlugin(options: DocsSitePluginOptions) {
  const site = options.site ?? bundledDocsSite()
  const built = buildDocsSite(site, options)
  return new Elysia({ name: 'docs-site', seed: `${options.publicBaseUrl} ${options.mcpUrl} ${site.config.name}`, detail: { tags: ['documentation'] } })
    .get('/docs', ({ redirect }) => redirect(built.firstUrl, 303), {
      response: { 303: t.Void({ description: 'Redirect to the first documentation page (Location header)' }) },
      detail: { summary: 'Documentation home: redirects to the first page', hide: true },
    })
    .get(
      '/docs/*',
      ({ params, redirect }) => {
        const requested = params['*']
        const markdown = requested.endsWith('.md')
        const slug = (markdown ? requested.slice(0, -3) : requested).replace(/\/+$/, '')
        if (slug === '' && !markdown) return redirect(built.firstUrl, 303)
        const page = built.pages.get(`/docs/${slug}`)
        if (!page) throw new AppError('not_found', `No documentation page at /docs/${requested}`)
        return markdown
          ? text(page.markdown, 'text/markdown; charset=utf-8')
          : text(page.html, 'text/html; charset=utf-8', { 'content-security-policy': DOCS_CSP })
      },
      {
        params: t.Object({ '*': t.String({ description: 'Page path, with .md for its Markdown' }) }),
        response: {
          200: t.String({ description: 'The page as HTML, or as Markdown (text/markdown) when the path ends in .md' }),
          303: t.Void({ description: 'Redirect to the first page' }),
          404: problem,
        },
        detail: { summary: 'A documentation page as HTML, or its Markdown with .md', hide: true },
      },
    )
    .get('/llms.txt', () => text(built.llmsTxt, 'text/plain; charset=utf-8'), {
      response: { 200: t.String({ description: 'llms.txt: every documentation page with a link to its Markdown' }) },
      detail: { summary: 'Index of the documentation for language models', hide: true },
    })
}
