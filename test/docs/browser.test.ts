import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { chromiumAvailable, launchChromium } from '../chromium.ts'
import type { Browser, BrowserContext, Page } from 'playwright-core'
import { startFakeOpenAi, type FakeOpenAi } from '../fakes/openai.ts'
import { makeApp, type TestApp } from '../helpers.ts'

const available = chromiumAvailable('browser test of the documentation menu')

/** The contextual menu driven in a real browser: one launch, one page, every entry checked. */
describe.skipIf(!available)('documentation menu in a browser', () => {
  let t: TestApp
  let server: ReturnType<typeof Bun.serve>
  let browser: Browser
  let context: BrowserContext
  let page: Page
  let origin: string
  let model: FakeOpenAi
  const cspViolations: string[] = []

  beforeAll(async () => {
    // The server starts first so PUBLIC_BASE_URL can be its real origin.
    let handle: (request: Request) => Response | Promise<Response> = () => new Response('starting', { status: 503 })
    server = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: (request) => handle(request) })
    origin = server.url.origin
    // The documentation assistant answers from the fake model provider.
    model = startFakeOpenAi()
    t = await makeApp({ PUBLIC_BASE_URL: origin, OPENAI_BASE_URL: model.baseUrl })
    handle = (request) => t.app.handle(request)
    browser = await launchChromium()
    context = await browser.newContext()
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin })
    page = await context.newPage()
    page.on('console', (message) => {
      if (/Content Security Policy/i.test(message.text())) cspViolations.push(message.text())
    })
    await page.goto(`${origin}/docs/errors`)
  })

  afterAll(async () => {
    await browser?.close()
    server?.stop(true)
    await t?.close()
    await model?.close()
  })

  const menu = () => page.locator('[data-contextual="header"]')
  const entry = (option: string) => menu().locator(`[role="menu"] [data-option="${option}"]`)
  const openMenu = async () => {
    if (!(await entry('copy').isVisible())) await menu().locator('summary').click()
    await expect(entry('copy').isVisible()).resolves.toBe(true)
  }
  // Evaluated in the page, which has the DOM types this project's TypeScript setup leaves out.
  const clipboard = () => page.evaluate<string>('navigator.clipboard.readText()')

  test('the button opens the dropdown and Escape closes it', async () => {
    expect(await entry('copy').isVisible()).toBe(false)
    await menu().locator('summary').click()
    expect(await entry('view').isVisible()).toBe(true)
    await page.keyboard.press('Escape')
    expect(await entry('view').isVisible()).toBe(false)
    await openMenu()
    await page.locator('h1').click()
    expect(await entry('view').isVisible()).toBe(false)
  })

  test('the arrow keys move between the entries of the open dropdown', async () => {
    await openMenu()
    await menu().locator('summary').focus()
    await page.keyboard.press('ArrowDown')
    expect(await entry('copy').evaluate((el) => el === el.ownerDocument.activeElement)).toBe(true)
    await page.keyboard.press('ArrowDown')
    expect(await entry('view').evaluate((el) => el === el.ownerDocument.activeElement)).toBe(true)
    await page.keyboard.press('ArrowUp')
    await page.keyboard.press('ArrowUp')
    const last = page.locator('[role="menu"] .menu-item').last()
    expect(await last.evaluate((el) => el === el.ownerDocument.activeElement)).toBe(true)
    await page.keyboard.press('Escape')
    expect(await entry('copy').isVisible()).toBe(false)
  })

  test('copy puts the page Markdown on the clipboard', async () => {
    await page.evaluate("navigator.clipboard.writeText('before')")
    await openMenu()
    await entry('copy').click()
    await page.locator('[role="menu"] [data-option="copy"][data-state="copied"]').waitFor()
    const markdown = await (await fetch(`${origin}/docs/errors.md`)).text()
    expect(await clipboard()).toBe(markdown)
    expect(markdown).toStartWith('# Errors\n')
    expect(await page.locator('#docs-menu-status').textContent()).toBe('Copied to the clipboard')
  })

  test('the primary button copies the page too', async () => {
    await page.evaluate("navigator.clipboard.writeText('before')")
    await menu().locator('.menu-primary').click()
    await menu().locator('.menu-primary[data-state="copied"]').waitFor()
    expect(await clipboard()).toBe(await (await fetch(`${origin}/docs/errors.md`)).text())
  })

  test('mcp copies the MCP server URL', async () => {
    await openMenu()
    await entry('mcp').click()
    await page.locator('[role="menu"] [data-option="mcp"][data-state="copied"]').waitFor()
    expect(await clipboard()).toBe(t.config.docs.mcpUrl)
    expect(t.config.docs.mcpUrl).toBe(`${origin}/mcp`)
  })

  test('view opens the page Markdown', async () => {
    await openMenu()
    const markdownUrl = `${origin}/docs/errors.md`
    const opened = context.waitForEvent('page')
    const answered = context.waitForEvent('response', (response) => response.url() === markdownUrl)
    await entry('view').click()
    const [markdownPage, response] = await Promise.all([opened, answered])
    expect(response.status()).toBe(200)
    expect(response.headers()['content-type']).toBe('text/markdown; charset=utf-8')
    await markdownPage.waitForLoadState('domcontentloaded')
    expect(markdownPage.url()).toBe(markdownUrl)
    const expected = await (await fetch(markdownUrl)).text()
    // biome-ignore lint/performance/useDomNodeTextContent: Playwright's innerText is the text as the page shows it, which is what is compared.
    expect((await markdownPage.locator('body').innerText()).trim()).toBe(expected.trim())
    await markdownPage.close()
  })

  test('assistant, editor and custom entries link where they should', async () => {
    await openMenu()
    const href = (option: string) => entry(option).getAttribute('href')
    const prompt = encodeURIComponent(`Read ${origin}/docs/errors.md so I can ask questions about it.`)
    expect(await href('chatgpt')).toBe(`https://chatgpt.com/?hints=search&q=${prompt}`)
    expect(await href('claude')).toBe(`https://claude.ai/new?q=${prompt}`)
    expect(await href('perplexity')).toBe(`https://www.perplexity.ai/search?q=${prompt}`)
    for (const option of ['chatgpt', 'claude', 'perplexity']) expect(await entry(option).getAttribute('target')).toBe('_blank')

    const cursor = new URL((await href('cursor'))!)
    expect(`${cursor.protocol}//${cursor.host}${cursor.pathname}`).toBe('cursor://anysphere.cursor-deeplink/mcp/install')
    expect(JSON.parse(atob(cursor.searchParams.get('config')!))).toEqual({ url: `${origin}/mcp` })
    const vscode = (await href('vscode'))!
    expect(JSON.parse(decodeURIComponent(vscode.replace('vscode:mcp/install?', '')))).toEqual({
      name: 'Real-time AI development platform',
      type: 'http',
      url: `${origin}/mcp`,
    })

    const customs = await page.locator('[role="menu"] [data-option^="custom-"]').all()
    expect(customs.length).toBe(2)
    const [dynamic, plain] = await Promise.all(customs.map((c) => c.getAttribute('href')))
    const asked = [...new URL(dynamic!).searchParams.values()].join('\n')
    expect(asked).toContain('/docs/errors')
    expect(asked).toContain(`${origin}/mcp`)
    expect(asked).toContain('# Errors')
    expect(plain).toBe('/swagger')
  })

  test('windsurf and devin-mcp copy the MCP server configuration those apps document', async () => {
    await openMenu()
    await entry('windsurf').click()
    await page.locator('[role="menu"] [data-option="windsurf"][data-state="copied"]').waitFor()
    expect(JSON.parse(await clipboard())).toEqual({ mcpServers: { 'real-time-ai-development-platform': { serverUrl: `${origin}/mcp` } } })
    await openMenu()
    await entry('devin-mcp').click()
    await page.locator('[role="menu"] [data-option="devin-mcp"][data-state="copied"]').waitFor()
    expect(await clipboard()).toBe(`devin mcp add -s user real-time-ai-development-platform ${origin}/mcp`)
  })

  test('download-pdf downloads the page as a PDF', async () => {
    await openMenu()
    const downloaded = page.waitForEvent('download')
    await entry('download-pdf').click()
    const download = await downloaded
    expect(download.suggestedFilename()).toBe('errors.pdf')
    expect(download.url()).toBe(`${origin}/docs/errors.pdf`)
    const bytes = await Bun.file((await download.path())!).bytes()
    expect(new TextDecoder().decode(bytes.slice(0, 5))).toBe('%PDF-')
    expect(bytes.length).toBeGreaterThan(1000)
  })

  test('the assistant dialog streams the answer in as text, then lists the sources', async () => {
    const answer = 'Every error is a <b>problem+json</b> body with a stable code.'
    model.queue = [{ text: answer }]
    await openMenu()
    await entry('assistant').click()
    const dialog = page.locator('dialog#docs-assistant')
    await dialog.waitFor()
    expect(await dialog.evaluate((el) => (el as unknown as { open: boolean }).open)).toBe(true)
    await dialog.locator('textarea').fill('What does an error body look like?')
    await dialog.locator('button[type="submit"]').click()
    await page.locator('dialog#docs-assistant[data-state="done"]').waitFor()
    // Markup in the answer is shown as characters, never turned into elements.
    expect(await dialog.locator('.assistant-answer').textContent()).toBe(answer)
    expect(await dialog.locator('.assistant-answer *').count()).toBe(0)
    const links = dialog.locator('.assistant-sources a')
    expect(await links.first().getAttribute('href')).toBe(`${origin}/docs/errors`)
    expect(await links.first().textContent()).toBe('Errors')
    expect(await dialog.locator('.assistant-error').isHidden()).toBe(true)
    // The question went upstream with the page the reader is on.
    const user = (model.completions.at(-1)!.messages as { content: string }[])[1]!.content
    expect(user).toContain(`<page title="Errors" url="${origin}/docs/errors">`)
    expect(user).toContain('Question: What does an error body look like?')
    await page.keyboard.press('Escape')
    expect(await dialog.evaluate((el) => (el as unknown as { open: boolean }).open)).toBe(false)
  })

  test('nothing on the page was blocked by its Content-Security-Policy', () => {
    expect(cspViolations).toEqual([])
  })
})
