/**
 * A React page built on the AI SDK's `useChat`, served from another origin than the API (another port of
 * 127.0.0.1), used in Chromium: it signs in, streams answers, resumes one after a reload and opens the agent
 * WebSocket. A page on an origin not in CORS_ORIGINS can read nothing and connect to nothing.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { chromiumAvailable, launchChromium } from '../chromium.ts'
import { join } from 'node:path'
import type { Browser, BrowserContext, Page } from 'playwright-core'
import { startFakeOpenAi, type FakeOpenAi } from '../fakes/openai.ts'
import { ADMIN, makeApp, type TestApp } from '../helpers.ts'

const available = chromiumAvailable('cross-origin browser test')

/** A server on its own port of 127.0.0.1, so its own origin, serving `html` and the bundled page script. */
function serveOrigin(html: () => string, script: string) {
  return Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    fetch: (request) =>
      new URL(request.url).pathname === '/page.js'
        ? new Response(script, { headers: { 'content-type': 'text/javascript; charset=utf-8' } })
        : new Response(html(), { headers: { 'content-type': 'text/html; charset=utf-8' } }),
  })
}

describe.skipIf(!available)('a useChat front end on another origin', () => {
  let model: FakeOpenAi
  let t: TestApp
  let api: string
  let frontEnd: ReturnType<typeof Bun.serve>
  let elsewhere: ReturnType<typeof Bun.serve>
  let browser: Browser
  let context: BrowserContext
  let page: Page

  beforeAll(async () => {
    const built = await Bun.build({
      entrypoints: [join(import.meta.dir, 'page', 'chat-page.tsx')],
      target: 'browser',
      define: { 'process.env.NODE_ENV': '"production"' },
    })
    if (!built.success) throw new AggregateError(built.logs, 'the page did not build')
    const script = await built.outputs[0]!.text()
    const html = () =>
      '<!doctype html><meta charset="utf-8"><title>chat</title><div id="root"></div>' +
      `<script type="application/json" id="config">${JSON.stringify({ api, ...ADMIN }).replaceAll('<', '\\u003c')}</script>` +
      '<script type="module" src="/page.js"></script>'
    frontEnd = serveOrigin(html, script)
    elsewhere = serveOrigin(() => '<!doctype html><title>elsewhere</title>', '')
    model = startFakeOpenAi()
    t = await makeApp({
      CORS_ORIGINS: frontEnd.url.origin,
      ADMIN_EMAIL: ADMIN.email,
      ADMIN_PASSWORD: ADMIN.password,
      OPENAI_BASE_URL: model.baseUrl,
      CHAT_MODEL: 'fake-model',
    })
    t.app.listen({ hostname: '127.0.0.1', port: 0 })
    api = `http://127.0.0.1:${t.app.server!.port}`
    browser = await launchChromium()
    context = await browser.newContext()
    page = await context.newPage()
  })

  afterAll(async () => {
    await browser?.close()
    frontEnd?.stop(true)
    elsewhere?.stop(true)
    await t?.app.stop(true)
    await t?.close()
    await model?.close()
  })

  // Read in the page, which has the DOM types this project's TypeScript setup leaves out.
  const text = (selector: string) => page.evaluate<string>(`document.querySelector(${JSON.stringify(selector)})?.textContent ?? ''`)
  const answers = () => page.evaluate<string[]>(`[...document.querySelectorAll('#messages li[data-role="assistant"]')].map((li) => li.textContent)`)
  const roles = () => page.evaluate<string[]>(`[...document.querySelectorAll('#messages li')].map((li) => li.dataset.role)`)
  const lastAnswerContains = (fragment: string) =>
    page.waitForFunction(`[...document.querySelectorAll('#messages li[data-role="assistant"]')].at(-1)?.textContent.includes(${JSON.stringify(fragment)})`)
  const settled = () => page.waitForFunction(`document.querySelector('#status')?.textContent === 'ready'`)
  const send = async (prompt: string) => {
    await page.fill('#prompt', prompt)
    await page.click('#send')
  }

  test('signs in, streams an answer and, reloaded mid-answer, resumes it to the end', async () => {
    // A new chat id: useChat's resume on load finds nothing to follow (204) and is not an error.
    const firstResume = page.waitForResponse((response) => response.url().endsWith('/stream'))
    await page.goto(frontEnd.url.href)
    expect((await firstResume).status()).toBe(204)
    await settled()
    expect(await text('#error')).toBe('')
    const chatId = new URL(page.url()).searchParams.get('chat')
    expect(chatId).toMatch(/^chat_[0-9a-f]{32}$/)

    model.queue = [{ text: 'Hello from the other origin.', delayMs: 20 }]
    const posted = page.waitForRequest((request) => request.url() === `${api}/api/chat` && request.method() === 'POST')
    await send('hello')
    // The page's own header went along: the preflight allows any besides Authorization.
    expect((await posted).headers()['x-page']).toBe('chat-page')
    await page.waitForFunction(`document.querySelector('#first-token-ms')?.textContent !== ''`)
    const coldFirstToken = Number(await text('#first-token-ms'))
    await settled()
    expect(await answers()).toEqual(['Hello from the other origin.'])

    // The second answer pauses after ten words until the page has been reloaded and has resumed.
    let release!: () => void
    const reloaded = new Promise<void>((resolve) => (release = resolve))
    const words = Array.from({ length: 30 }, (_, i) => `w${i} `)
    model.queue = [{ text: words, delayMs: 20, pause: { after: 10, until: reloaded } }]
    await send('count to thirty')
    await page.waitForFunction(`document.querySelector('#first-token-ms')?.textContent !== ''`)
    const warmFirstToken = Number(await text('#first-token-ms'))
    await lastAnswerContains('w9 ')
    const resumed = page.waitForResponse((response) => response.url().endsWith('/stream'))
    await page.reload()
    expect((await resumed).status()).toBe(200)
    expect(new URL(page.url()).searchParams.get('chat')).toBe(chatId)
    // The replay shows what was written before the reload; the rest arrives live.
    await lastAnswerContains('w9 ')
    release()
    await lastAnswerContains('w29 ')
    await settled()
    expect(await roles()).toEqual(['user', 'assistant', 'user', 'assistant'])
    expect(await answers()).toEqual(['Hello from the other origin.', words.join('')])
    expect(await text('#error')).toBe('')
    // Resuming followed the answer; it did not ask the model again.
    expect(model.completions).toHaveLength(2)

    console.log(
      `first token in the browser, cross-origin: ${coldFirstToken.toFixed(1)} ms with the preflight, ${warmFirstToken.toFixed(1)} ms with it cached ` +
        `(the model's first token comes after 20 ms)`,
    )
  })

  test("opens the agent WebSocket with the bearer subprotocol and receives the server's first message", async () => {
    const first = await page.evaluate<{ protocol: string; message: { type: string; id: string } }>('window.firstAgentMessage()')
    expect(first.protocol).toBe('bearer')
    expect(first.message).toMatchObject({ type: 'pong', id: 'first' })
  })

  test('a page on an origin not listed can read no answer and open no agent connection', async () => {
    const token = await page.evaluate<string>(`sessionStorage.getItem('accessToken')`)
    const stranger = await context.newPage()
    try {
      await stranger.goto(elsewhere.url.href)
      const attempts = await stranger.evaluate<Record<string, string>>(`(async () => {
        const outcome = (request) => request.then((r) => 'read ' + r.status, (e) => 'rejected ' + e.name)
        return {
          login: await outcome(fetch(${JSON.stringify(`${api}/auth/login`)}, { method: 'POST', headers: { 'content-type': 'application/json' }, body: ${JSON.stringify(JSON.stringify(ADMIN))} })),
          chats: await outcome(fetch(${JSON.stringify(`${api}/api/chats`)}, { headers: { authorization: 'Bearer ' + ${JSON.stringify(token)} } })),
          health: await outcome(fetch(${JSON.stringify(`${api}/health`)})),
          socket: await new Promise((resolve) => {
            const socket = new WebSocket(${JSON.stringify(`${api.replace('http', 'ws')}/ws/agent`)}, ['bearer', ${JSON.stringify(token)}])
            socket.onopen = () => resolve('open')
            socket.onclose = (event) => resolve('closed ' + event.code)
          }),
        }
      })()`)
      expect(attempts).toEqual({ login: 'rejected TypeError', chats: 'rejected TypeError', health: 'rejected TypeError', socket: 'closed 1006' })
      // The service refused the upgrade itself, 403 before the switch, for the page's origin.
      const refusals = t.logs.filter((line) => line.msg === 'request' && line.path === '/ws/agent' && line.status === 403)
      expect(refusals).toHaveLength(1)
    } finally {
      await stranger.close()
    }
  })
})
