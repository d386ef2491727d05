import { afterAll, describe, expect, test } from 'bun:test'
import { createHash } from 'node:crypto'
import { join } from 'node:path'
import { ContextualConfigError } from '../../plugins/docs/contextual.ts'
import { loadDocsSite, type DocsPage, type DocsSite } from '../../plugins/docs/site.ts'
import { makeApp } from '../helpers.ts'
import { docsFixtureApp as fixtureApp } from './support.ts'

const ROOT = join(import.meta.dir, '..', '..')
const onDisk = loadDocsSite(ROOT)
const urlOf = (page: DocsPage) => `/docs/${page.path.replace(/^docs\//, '')}`

/** The JSON data block a page hands its menu script. */
const pageData = (html: string) => JSON.parse(/<script type="application\/json" id="docs-page">([\s\S]*?)<\/script>/.exec(html)![1]!) as { markdown: string }
/** The attribute values of the menu entry `option` (HTML entities decoded). */
function menuEntry(html: string, option: string): Record<string, string> {
  const tag = new RegExp(`<(?:a|button)(?: type="button")? class="menu-item" data-option="${option}"[^>]*>`).exec(html)?.[0]
  if (!tag) throw new Error(`no menu entry ${option}`)
  const decode = (v: string) =>
    v
      .replace(/&quot;/g, '"')
      .replace(/&#39;/g, "'")
      .replace(/&lt;/g, '<')
      .replace(/&gt;/g, '>')
      .replace(/&amp;/g, '&')
  return Object.fromEntries([...tag.matchAll(/([\w-]+)="([^"]*)"/g)].map((m) => [m[1]!, decode(m[2]!)]))
}

describe('documentation site of the service', async () => {
  const t = await makeApp({ PUBLIC_BASE_URL: 'https://api.example.com' })
  afterAll(() => t.close())
  const first = onDisk.pages[0]!

  test('/docs sends the reader to the first page of the navigation', async () => {
    for (const path of ['/docs', '/docs/']) {
      const res = await t.request(path)
      expect(res.status).toBe(303)
      expect(res.headers.get('location')).toBe(urlOf(first))
    }
  })

  test('every page is served as HTML with the sidebar, the menu and the API reference links', async () => {
    for (const page of onDisk.pages) {
      const res = await t.request(urlOf(page))
      expect(res.status, urlOf(page)).toBe(200)
      expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8')
      const html = await res.text()
      expect(html).toContain(`<h1>${Bun.escapeHTML(page.title)}</h1>`)
      expect(html).toContain('<nav class="sidebar" aria-label="Documentation">')
      for (const other of onDisk.pages) expect(html).toContain(`href="${urlOf(other)}"`)
      expect(html).toContain(`<a href="${urlOf(page)}" aria-current="page">`)
      expect(html).toContain('<a href="/swagger">API explorer</a>')
      expect(html).toContain('<a href="/swagger/json">OpenAPI document</a>')
      expect(html).toContain('<summary aria-label="More page actions" aria-haspopup="menu">')
      expect(html).toContain('role="menu"')
      expect(pageData(html).markdown).toBe(await (await t.request(`${urlOf(page)}.md`)).text())
    }
  })

  test('every page is served as Markdown with a title heading', async () => {
    for (const page of onDisk.pages) {
      const res = await t.request(`${urlOf(page)}.md`)
      expect(res.status).toBe(200)
      expect(res.headers.get('content-type')).toBe('text/markdown; charset=utf-8')
      const markdown = await res.text()
      expect(markdown).toStartWith(`# ${page.title}\n\n${page.description ? `> ${page.description}\n\n` : ''}`)
      expect(markdown).toContain(page.markdown.trim().slice(0, 200))
    }
  })

  test('the menu holds every option of docs.json, resolved for the page', async () => {
    const page = onDisk.pages.find((p) => p.path === 'docs/errors')!
    const html = await (await t.request('/docs/errors')).text()
    const markdownUrl = 'https://api.example.com/docs/errors.md'
    const prompt = encodeURIComponent(`Read ${markdownUrl} so I can ask questions about it.`)
    expect(menuEntry(html, 'copy')).toMatchObject({ 'data-copy': 'page', href: '/docs/errors.md' })
    expect(menuEntry(html, 'view')).toMatchObject({ href: '/docs/errors.md', target: '_blank' })
    expect(menuEntry(html, 'chatgpt').href).toBe(`https://chatgpt.com/?hints=search&q=${prompt}`)
    expect(menuEntry(html, 'claude').href).toBe(`https://claude.ai/new?q=${prompt}`)
    expect(menuEntry(html, 'perplexity').href).toBe(`https://www.perplexity.ai/search?q=${prompt}`)
    expect(menuEntry(html, 'mcp')).toMatchObject({ 'data-copy': 'text', 'data-copy-text': 'https://api.example.com/mcp' })
    const cursor = new URL(menuEntry(html, 'cursor').href!)
    expect(JSON.parse(atob(cursor.searchParams.get('config')!))).toEqual({ url: 'https://api.example.com/mcp' })
    const vscode = menuEntry(html, 'vscode').href!
    expect(JSON.parse(decodeURIComponent(vscode.slice('vscode:mcp/install?'.length)))).toMatchObject({ type: 'http', url: 'https://api.example.com/mcp' })
    // The custom options: a dynamic link with $path, $mcp and $page resolved, and a plain one.
    const options = onDisk.config.contextual!.options
    const dynamicIndex = options.findIndex((o) => typeof o === 'object' && typeof (o as { href: unknown }).href === 'object')
    const staticIndex = options.findIndex((o) => typeof o === 'object' && typeof (o as { href: unknown }).href === 'string')
    const dynamic = new URL(menuEntry(html, `custom-${dynamicIndex}`).href!)
    const asked = [...dynamic.searchParams.values()].join('\n')
    expect(asked).toContain('/docs/errors')
    expect(asked).toContain('https://api.example.com/mcp')
    expect(asked).toContain(`# ${page.title}`)
    expect(asked).not.toMatch(/\$(page|path|mcp)\b/)
    expect(menuEntry(html, `custom-${staticIndex}`).href).toBe((options[staticIndex] as { href: string }).href)
    // The PDF download, and the Windsurf and Devin entries that copy the server's configuration.
    expect(menuEntry(html, 'download-pdf').href).toBe('/docs/errors.pdf')
    expect(html).toMatch(/data-option="download-pdf" href="\/docs\/errors\.pdf" download role="menuitem"/)
    expect(JSON.parse(menuEntry(html, 'windsurf')['data-copy-text']!)).toEqual({
      mcpServers: { 'real-time-ai-development-platform': { serverUrl: 'https://api.example.com/mcp' } },
    })
    expect(menuEntry(html, 'devin-mcp')['data-copy-text']).toBe('devin mcp add -s user real-time-ai-development-platform https://api.example.com/mcp')
    // No model provider is configured here, so the assistant is left out of the menu.
    expect(html).not.toContain('data-option="assistant"')
    expect(t.logs).toContainEqual(expect.objectContaining({ option: 'assistant', missing: 'OPENAI_API_KEY or OPENAI_BASE_URL or MODEL_PROVIDERS' }))
  })

  test('error problem types link to their row of the errors page', async () => {
    const problem = await (await t.request('/docs/no-such-page')).json()
    expect(problem.type).toBe('/docs/errors#not_found')
    const html = await (await t.request('/docs/errors')).text()
    expect(html).toContain('<td id="not_found"><code>not_found</code></td>')
  })

  test('unknown pages are 404 problem+json, as HTML or Markdown', async () => {
    for (const path of ['/docs/no-such-page', '/docs/no-such-page.md', '/docs/errors/extra', '/docs/../docs.json']) {
      const res = await t.request(path)
      expect(res.status, path).toBe(404)
      expect(res.headers.get('content-type')).toBe('application/problem+json')
      const body = await res.json()
      expect(body).toMatchObject({ status: 404, code: 'not_found' })
      expect(body.requestId).toBe(res.headers.get('x-request-id'))
    }
  })

  test('llms.txt lists every page by navigation group with its Markdown link', async () => {
    const res = await t.request('/llms.txt')
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toBe('text/plain; charset=utf-8')
    const body = await res.text()
    expect(body).toStartWith(`# ${onDisk.config.name}\n`)
    for (const group of onDisk.config.navigation.groups) expect(body).toContain(`\n## ${group.group}\n`)
    for (const page of onDisk.pages) {
      const line = `- [${page.title}](https://api.example.com${urlOf(page)}.md)${page.description ? `: ${page.description}` : ''}\n`
      expect(body).toContain(line)
      // Each page sits under its own group's heading.
      const heading = body.lastIndexOf('\n## ', body.indexOf(line))
      expect(body.slice(heading + 4, body.indexOf('\n', heading + 1))).toBe(page.group)
    }
    expect(body).toContain('- [OpenAPI document](https://api.example.com/swagger/json)')
  })

  test('pages run only their own script and style (CSP hashes match)', async () => {
    const res = await t.request(urlOf(first))
    const csp = res.headers.get('content-security-policy')!
    const html = await res.text()
    const hash = (text: string) => `'sha256-${createHash('sha256').update(text).digest('base64')}'`
    const script = /<script>([\s\S]*?)<\/script>/.exec(html)![1]!
    const style = /<style>([\s\S]*?)<\/style>/.exec(html)![1]!
    expect(csp).toContain(`script-src ${hash(script)}`)
    expect(csp).toContain(`style-src ${hash(style)}`)
    expect(csp).toContain("default-src 'none'")
  })

  test('the site is public and left out of the OpenAPI document', async () => {
    const doc = await (await t.request('/swagger/json')).json()
    expect(Object.keys(doc.paths).filter((p) => p.startsWith('/docs') || p === '/llms.txt')).toEqual([])
    const hidden = t.app.routes.filter((r) => (r.hooks as { detail?: { hide?: boolean } }).detail?.hide).map((r) => r.path)
    expect(hidden).toEqual(expect.arrayContaining(['/docs', '/docs/*', '/llms.txt']))
  })
})

describe('the MCP URL', () => {
  test('defaults to PUBLIC_BASE_URL/mcp and follows DOCS_MCP_URL', async () => {
    const plain = await makeApp({ PUBLIC_BASE_URL: 'https://api.example.com/' })
    const given = await makeApp({ DOCS_MCP_URL: 'https://mcp.example.org/v1/mcp' })
    try {
      expect(plain.config.docs.mcpUrl).toBe('https://api.example.com/mcp')
      expect(given.config.docs.mcpUrl).toBe('https://mcp.example.org/v1/mcp')
      const html = await (await given.request('/docs/errors')).text()
      expect(menuEntry(html, 'mcp')['data-copy-text']).toBe('https://mcp.example.org/v1/mcp')
    } finally {
      await plain.close()
      await given.close()
    }
    await expect(makeApp({ DOCS_MCP_URL: 'ftp://x' })).rejects.toThrow('DOCS_MCP_URL must use http: or https:')
  })
})

function fixture(overrides: { contextual?: unknown; description?: string; pages?: DocsPage[] } = {}): DocsSite {
  const pages = overrides.pages ?? [
    { path: 'docs/start', group: 'Basics', title: 'Start <here>', description: 'First "steps"', markdown: 'Hello **world**.\n\n## Next & last\n\nText.\n' },
    { path: 'guide/deep', group: 'Advanced', title: 'Deep', description: '', markdown: 'Deep page.\n' },
  ]
  return {
    config: {
      name: 'Fixture Docs',
      ...(overrides.description ? { description: overrides.description } : {}),
      navigation: {
        groups: [
          { group: 'Basics', pages: ['docs/start'] },
          { group: 'Advanced', pages: [{ group: 'Nested', pages: ['guide/deep'] }] },
        ],
      },
      ...(overrides.contextual !== undefined ? { contextual: overrides.contextual as { options: unknown[] } } : {}),
    },
    pages,
  }
}

describe('rendering', () => {
  test('raw HTML and script links in Markdown are shown as text; MDX components are rendered plainly', async () => {
    const markdown = [
      'Intro <script>alert(1)</script> and <img src=x onerror="alert(2)"> with <mark>kept</mark>.',
      '',
      '[bad](javascript:alert(3)) [fine](/docs/start)',
      '',
      '<div onclick="alert(4)">raw block</div>',
      '',
      '<Note title="Heads up">',
      '  Some **bold** advice.',
      '</Note>',
      '',
      '</Warning>',
      '',
      '```html',
      '</script><script>alert(5)</script>',
      '```',
    ].join('\n')
    const site = fixture({
      contextual: { options: ['copy'] },
      pages: [
        { path: 'docs/start', group: 'Basics', title: 'Start', description: '', markdown },
        { path: 'guide/deep', group: 'Advanced', title: 'Deep', description: '', markdown: 'x' },
      ],
    })
    const html = await (await fixtureApp(site).get('/docs/start')).text()
    const content = /<article class="content">([\s\S]*?)<\/article>/.exec(html)![1]!
    expect(content).not.toMatch(/<script|<img|<div onclick|href="javascript/i)
    expect(content).toContain('&lt;script&gt;alert(1)&lt;/script&gt;')
    expect(content).toContain('<mark>kept</mark>')
    expect(content).toContain('<a href="/docs/start">fine</a>')
    expect(content).toContain(
      '<div class="mdx callout callout-note" data-component="Note"><p class="mdx-title">Heads up</p><p>Some <strong>bold</strong> advice.</p>',
    )
    // The stray closing tag closes nothing of the page.
    expect(html).toContain('</article>\n</main>')
    // "</script>" in the Markdown does not end the data block early.
    expect(pageData(html).markdown).toContain('</script><script>alert(5)</script>')
    expect(html.match(/<script/g)).toHaveLength(2)
  })

  test('titles and descriptions are escaped; nested groups and pages outside docs/ get their place', async () => {
    const site = fixtureApp(fixture({ contextual: { options: ['copy', 'view'] } }))
    const html = await (await site.get('/docs/start')).text()
    expect(html).toContain('<title>Start &lt;here&gt; · Fixture Docs</title>')
    expect(html).toContain('<p class="description">First &quot;steps&quot;</p>')
    expect(html).toContain('<p class="group">Nested</p><ul><li><a href="/docs/guide/deep">Deep</a></li></ul>')
    expect(html).toContain('<h2 id="next-last"><a class="anchor" href="#next-last">Next &amp; last</a></h2>')
    expect(html).toContain('<li class="depth-2"><a href="#next-last">Next &amp; last</a></li>')
    expect((await site.get('/docs/guide/deep')).status).toBe(200)
    expect(await (await site.get('/docs/guide/deep.md')).text()).toBe('# Deep\n\nDeep page.\n')
  })

  test('display "toc" lists the options beside the page instead of the header dropdown', async () => {
    const html = await (await fixtureApp(fixture({ contextual: { options: ['view', 'mcp'], display: 'toc' } })).get('/docs/start')).text()
    expect(html).not.toContain('data-contextual="header"')
    const aside = /<aside class="toc has-menu"[^>]*>([\s\S]*?)<\/aside>/.exec(html)![1]!
    expect(aside).toContain('data-contextual="toc"')
    expect(aside).toContain('data-option="view"')
    expect(aside).toContain('data-copy-text="http://docs.test/mcp"')
  })

  test('a site without a contextual section has no menu', async () => {
    const html = await (await fixtureApp(fixture()).get('/docs/start')).text()
    expect(html).not.toContain('data-contextual')
  })

  test('llms.txt carries the site description and nested groups', async () => {
    const body = await (await fixtureApp(fixture({ description: 'Docs for tests' })).get('/llms.txt')).text()
    expect(body).toBe(
      [
        '# Fixture Docs',
        '',
        '> Docs for tests',
        '',
        '## Basics',
        '',
        '- [Start <here>](http://docs.test/docs/start.md): First "steps"',
        '',
        '## Nested',
        '',
        '- [Deep](http://docs.test/docs/guide/deep.md)',
        '',
        '## API reference',
        '',
        '- [OpenAPI document](http://docs.test/swagger/json): Every route with its request and response schemas',
        '',
      ].join('\n'),
    )
  })

  test('every built-in option is offered; the assistant only with a model provider, else with a warning', async () => {
    const site = fixtureApp(fixture({ contextual: { options: ['copy', 'assistant', 'download-pdf', 'windsurf', 'devin-mcp'] } }))
    const warnings = site.logs.filter((l) => l.msg === 'documentation assistant left out of the menu: no chat model provider is configured')
    expect(warnings.map((l) => l.option)).toEqual(['assistant'])
    const html = await (await site.get('/docs/start')).text()
    for (const option of ['copy', 'download-pdf', 'windsurf', 'devin-mcp']) expect(html).toContain(`data-option="${option}"`)
    expect(html).not.toContain('data-option="assistant"')
    expect(html).not.toContain('<dialog')
  })

  test('a bad contextual section stops the plugin from being built, naming the entry', () => {
    expect(() => fixtureApp(fixture({ contextual: { options: ['copy', { title: 'No link', description: 'x', icon: 'link' }] } }))).toThrow(
      ContextualConfigError,
    )
    expect(() => fixtureApp(fixture({ contextual: { options: ['editor3'] } }))).toThrow('contextual.options[0]: "editor3" is not a built-in option')
  })

  test('two pages that would share a URL stop start-up', () => {
    const pages = [
      { path: 'docs/start', group: 'Basics', title: 'A', description: '', markdown: 'a' },
      { path: 'start', group: 'Basics', title: 'B', description: '', markdown: 'b' },
    ]
    const site: DocsSite = { config: { name: 'X', navigation: { groups: [{ group: 'Basics', pages: ['docs/start', 'start'] }] } }, pages }
    expect(() => fixtureApp(site)).toThrow('would both be served at /docs/start')
  })
})
