import { afterAll, describe, expect, test } from 'bun:test'
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { Elysia } from 'elysia'
import { policiesFromConfig } from '../../src/rate-limit/plugin.ts'
import { loadDocsSite } from '../../plugins/docs/site.ts'
import { createDocsIndex } from '../../plugins/docs/search-index.ts'
import { mcpPlugin } from '../../plugins/mcp/index.ts'
import { makeApp, tempDir } from '../helpers.ts'

const dir = tempDir('mcp-docs-')
afterAll(() => dir.remove())
mkdirSync(join(dir.path, 'docs', 'guides'), { recursive: true })
writeFileSync(
  join(dir.path, 'docs.json'),
  JSON.stringify({ name: 'Fixture', navigation: { groups: [{ group: 'Start', pages: ['docs/index', { group: 'More', pages: ['docs/guides/imports'] }] }] } }),
)
writeFileSync(
  join(dir.path, 'docs', 'index.mdx'),
  '---\ntitle: Welcome\ndescription: The first page\n---\nHello and welcome.\n\n## Tokens\n\nSend a bearer token.\n',
)
writeFileSync(
  join(dir.path, 'docs', 'guides', 'imports.md'),
  '---\ntitle: Importing\n---\n## Cloning\n\nThe service imports a repository by cloning it.\n\n## Quotas\n\nEach organisation may hold fifty imported repositories.\n',
)
const site = loadDocsSite(dir.path)

describe('createDocsIndex', () => {
  const docs = createDocsIndex(site.pages, 'https://docs.example.com/')

  test('a hit names the page and the section, with links on the public base URL', async () => {
    const hits = await docs.search('bearer token', 5)
    expect(hits[0]).toEqual({
      path: 'docs/index',
      title: 'Welcome',
      section: 'Tokens',
      url: 'https://docs.example.com/docs/index',
      markdownUrl: 'https://docs.example.com/docs/index.md',
      snippet: 'Send a bearer token.',
      score: expect.any(Number),
    })
  })

  test('words match their other forms (stemming), and the opening of a page has no section', async () => {
    const hits = await docs.search('importing repository', 5)
    expect(hits.map((h) => h.section)).toContain('Cloning')
    expect(hits.map((h) => h.path)).toContain('docs/guides/imports')
    const opening = await docs.search('welcome', 5)
    expect(opening[0]).toMatchObject({ path: 'docs/index', snippet: 'Hello and welcome.' })
    expect(opening[0]).not.toHaveProperty('section')
  })

  test('the limit caps the hits', async () => {
    expect((await docs.search('welcome token repositories', 5)).length).toBeGreaterThan(1)
    expect(await docs.search('welcome token repositories', 1)).toHaveLength(1)
  })

  test('pages are found by navigation path, site path, .md name or URL', () => {
    for (const path of [
      'docs/guides/imports',
      'guides/imports',
      '/docs/guides/imports',
      'docs/guides/imports.md',
      'https://docs.example.com/docs/guides/imports.md#quotas',
    ])
      expect(docs.page(path)?.title, path).toBe('Importing')
    expect(docs.page('docs/guides')).toBeUndefined()
    expect(docs.page('https://elsewhere.example.com/docs/index')).toBeUndefined()
  })
})

describe('the index handed to the MCP server', () => {
  test('is what get_page serves, and a directory without docs.json is refused', async () => {
    const t = await makeApp()
    try {
      const options = {
        access: t.deps.access,
        plans: t.deps.plans,
        rateLimits: { limiter: t.deps.limiter, access: t.deps.access, plans: t.deps.plans, policies: policiesFromConfig(t.config.rateLimits), failClosed: [] },
        codeIndex: t.deps.codeIndex,
        publicBaseUrl: 'https://docs.example.com',
      }
      const app = new Elysia().use(mcpPlugin({ ...options, docs: createDocsIndex(site.pages, 'https://docs.example.com') }))
      const res = await app.handle(
        new Request('http://localhost/mcp', {
          method: 'POST',
          headers: { host: 'docs.example.com', 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
          body: JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'get_page', arguments: { path: 'guides/imports' } } }),
        }),
      )
      const answer = await res.json()
      expect(answer.result.content[0].text).toBe(`# Importing\n\n${site.pages[1]!.markdown.trim()}\n`)
      expect(() => loadDocsSite(join(dir.path, 'docs'))).toThrow('docs.json')
    } finally {
      await t.close()
    }
  })
})
