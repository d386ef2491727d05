/** Pieces several documentation suites share: a page context for menu links, and the docs site alone on a minimal app. */
import { Elysia } from 'elysia'
import type { PageContext } from '../../plugins/docs/contextual.ts'
import { docsSitePlugin } from '../../plugins/docs/site-plugin.ts'
import type { DocsSite } from '../../plugins/docs/site.ts'
import { memoryLogger } from '../../src/log.ts'
import { RouteIndex, requestPipeline } from '../../src/request-pipeline.ts'
import { BASE } from '../helpers.ts'

export const samplePage = (overrides: Partial<PageContext> = {}): PageContext => ({
  path: '/docs/search',
  markdown: '# Code search\n\nFind code.\n',
  markdownUrl: 'https://api.example.com/docs/search.md',
  mcpUrl: 'https://api.example.com/mcp',
  serverName: 'Example API',
  specUrl: '/swagger/json',
  ...overrides,
})

/** `site` served by the docs plugin behind the request pipeline, with its log lines. */
export function docsFixtureApp(site: DocsSite) {
  const logger = memoryLogger('info')
  const routeIndex = new RouteIndex()
  const app = new Elysia({ normalize: false })
    .use(requestPipeline({ logger, bodyLimitBytes: 1 << 20, routeIndex }))
    .use(docsSitePlugin({ site, publicBaseUrl: 'http://docs.test', mcpUrl: 'http://docs.test/mcp', logger }))
  routeIndex.load(app.routes)
  return { logs: logger.lines, get: (path: string) => app.handle(new Request(BASE + path)) }
}
