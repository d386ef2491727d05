/** POST /api/docs/assistant against the fake OpenAI-compatible upstream, and its place in the pages. */
import { afterAll, describe, expect, test } from 'bun:test'
import { join } from 'node:path'
import { loadDocsSite } from '../../plugins/docs/site.ts'
import { startServer } from '../../src/main/server.ts'
import { startFakeOpenAi } from '../fakes/openai.ts'
import { makeApp } from '../helpers.ts'
import { parseSse } from './exchanges.ts'

const ROOT = join(import.meta.dir, '..', '..')
const chatPage = loadDocsSite(ROOT).pages.find((page) => page.path === 'docs/chat')!

const model = startFakeOpenAi()
afterAll(() => model.close())

const ask = (t: Awaited<ReturnType<typeof makeApp>>, body: unknown, headers: Record<string, string> = {}) =>
  t.send('POST', '/api/docs/assistant', body, { accept: 'text/event-stream', ...headers })

describe('the documentation assistant', async () => {
  // Every question spends the address budget before its body is read, refused ones too; this suite asks more
  // than the default ten a minute (the budget has its own suite below).
  const t = await makeApp({
    PUBLIC_BASE_URL: 'https://api.example.com',
    OPENAI_BASE_URL: model.baseUrl,
    CHAT_MODEL: 'docs-model-1',
    RATE_LIMIT_ASSISTANT_PER_MINUTE: '100',
  })
  afterAll(() => t.close())

  test('streams the answer as text events, then the sources, then done', async () => {
    model.queue = [{ text: 'Reconnect to GET /api/chat/{id}/stream with Last-Event-ID.' }]
    const res = await ask(t, { question: 'How do I resume a chat stream after a disconnect?', page: '/docs/chat' })
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toBe('text/event-stream; charset=utf-8')
    const events = parseSse(await res.text())
    const texts = events.filter((e) => e.event === 'text')
    expect(texts.length).toBeGreaterThan(1)
    expect(texts.map((e) => JSON.parse(e.data).delta).join('')).toBe('Reconnect to GET /api/chat/{id}/stream with Last-Event-ID.')
    expect(events.map((e) => e.event)).toEqual([...texts.map(() => 'text'), 'sources', 'done'])
    const { sources } = JSON.parse(events.at(-2)!.data) as { sources: { title: string; path: string; url: string }[] }
    expect(sources[0]).toEqual({ title: 'Chat', path: 'docs/chat', url: 'https://api.example.com/docs/chat' })
    for (const source of sources) expect(source.url).toBe(`https://api.example.com/${source.path}`)
    expect(new Set(sources.map((s) => s.path)).size).toBe(sources.length)
  })

  test('the prompt carries the page, the sections the search found and the question', async () => {
    const res = await ask(t, { question: 'What is the rate limit budget for imports?', page: 'chat' })
    await res.text()
    const request = model.completions.at(-1)!
    expect(request.model).toBe('docs-model-1')
    expect(request.stream).toBe(true)
    const [system, user] = request.messages as { role: string; content: string }[]
    expect(system!.role).toBe('system')
    expect(system!.content).toContain('documentation assistant of Real-time AI development platform')
    expect(user!.content).toContain('<page title="Chat" url="https://api.example.com/docs/chat">')
    expect(user!.content).toContain(chatPage.markdown.trim().slice(0, 300))
    // Sections from other pages that the documentation search found for the question.
    const sections = [...user!.content.matchAll(/<section page="([^"]+)"/g)].map((m) => m[1])
    expect(sections.length).toBeGreaterThan(0)
    expect(sections).not.toContain('Chat')
    expect(user!.content).toContain('Question: What is the rate limit budget for imports?')
  })

  test('without a page the answer comes from the sections found alone', async () => {
    const res = await ask(t, { question: 'Which error code does a missing scope give?' })
    const events = parseSse(await res.text())
    expect(events.at(-1)!.event).toBe('done')
    const user = (model.completions.at(-1)!.messages as { content: string }[])[1]!.content
    expect(user).not.toContain('<page ')
    expect(user).toContain('<section page="')
    const { sources } = JSON.parse(events.at(-2)!.data)
    expect(sources.length).toBeGreaterThan(0)
  })

  test('an answer is text: markup from the model is passed on as characters, never interpreted', async () => {
    model.queue = [{ text: ['<img src=x onerror=alert(1)>', ' & more'] }]
    const events = parseSse(await (await ask(t, { question: 'Show me HTML', page: 'docs/errors' })).text())
    expect(
      events
        .filter((e) => e.event === 'text')
        .map((e) => JSON.parse(e.data).delta)
        .join(''),
    ).toBe('<img src=x onerror=alert(1)> & more')
  })

  test('an upstream failure ends the stream with an error event carrying a stable code', async () => {
    model.queue = [{ status: 500 }, { status: 500 }]
    const events = parseSse(await (await ask(t, { question: 'Anything?', page: '/docs/chat' })).text())
    expect(events.at(-1)!.event).toBe('error')
    expect(JSON.parse(events.at(-1)!.data)).toMatchObject({ code: 'upstream_error' })
    expect(events.map((e) => e.event)).not.toContain('done')
    expect(t.logs).toContainEqual(expect.objectContaining({ msg: 'documentation assistant: the model provider failed', code: 'upstream_error' }))
  })

  test('a stream cut off mid-answer is reported too', async () => {
    model.queue = [{ text: 'one two three four', malformedAfter: 2 }]
    const events = parseSse(await (await ask(t, { question: 'Anything?' })).text())
    expect(events.filter((e) => e.event === 'text').length).toBe(2)
    expect(JSON.parse(events.at(-1)!.data)).toMatchObject({ code: 'upstream_malformed' })
  })

  test('a bad body is the usual 422 problem naming the field', async () => {
    const cases: [unknown, string][] = [
      [{}, 'question'],
      [{ question: '' }, 'question'],
      [{ question: '   \n ' }, 'question'],
      [{ question: 'x'.repeat(2001) }, 'question'],
      [{ question: 42 }, 'question'],
      [{ question: 'ok', page: 7 }, 'page'],
      [{ question: 'ok', page: '' }, 'page'],
      [{ question: 'ok', extra: true }, 'extra'],
    ]
    const before = model.completions.length
    for (const [body, field] of cases) {
      const res = await ask(t, body)
      expect(res.status, JSON.stringify(body)).toBe(422)
      const problem = await res.json()
      expect(problem).toMatchObject({ code: 'validation_failed' })
      expect(problem.errors.map((e: { field: string }) => e.field)).toContain(field)
    }
    const longest = await ask(t, { question: 'x'.repeat(2000) })
    expect(longest.status).toBe(200)
    await longest.text()
    expect(model.completions.length).toBe(before + 1)
  })

  test('an unknown page is 404 not_found naming it', async () => {
    const before = model.completions.length
    for (const page of ['no-such-page', '/docs/../docs.json', 'https://elsewhere.example.com/docs/chat.md']) {
      const res = await ask(t, { question: 'What is this?', page })
      expect(res.status, page).toBe(404)
      const problem = await res.json()
      expect(problem.code).toBe('not_found')
      expect(problem.detail).toContain(`page: no documentation page "${page}"`)
    }
    expect(model.completions.length).toBe(before)
  })

  test('pages offer the assistant entry and its dialog, and allow the request in their CSP', async () => {
    const res = await t.request('/docs/chat')
    const html = await res.text()
    expect(html).toMatch(/<button type="button" class="menu-item" data-option="assistant" data-action="assistant"/)
    expect(html).toContain('<dialog id="docs-assistant" class="assistant" aria-labelledby="docs-assistant-title" data-endpoint="/api/docs/assistant">')
    expect(res.headers.get('content-security-policy')).toContain("connect-src 'self'")
    expect(t.logs.filter((l) => l.option === 'assistant')).toEqual([])
  })

  test('the route is in the OpenAPI document, public, with the assistant budget', async () => {
    const doc = await (await t.request('/swagger/json')).json()
    const operation = doc.paths['/api/docs/assistant'].post
    expect(operation.security).toEqual([])
    expect(operation['x-rate-limit'].map((p: { name: string }) => p.name)).toEqual(['assistant', 'burst'])
    expect(Object.keys(operation.responses['200'].content)).toEqual(['text/event-stream'])
    expect(operation.requestBody.content['application/json'].schema.required).toEqual(['question'])
  })
})

describe('without a model provider', async () => {
  const t = await makeApp()
  afterAll(() => t.close())

  test('the route answers 503 not_configured naming the settings', async () => {
    const res = await ask(t, { question: 'Hello?', page: 'chat' })
    expect(res.status).toBe(503)
    const problem = await res.json()
    expect(problem.code).toBe('not_configured')
    expect(problem.detail).toContain('OPENAI_API_KEY')
  })

  test('the menu leaves the assistant out, and start-up says which setting is missing', async () => {
    const html = await (await t.request('/docs/chat')).text()
    expect(html).not.toContain('data-option="assistant"')
    expect(html).not.toContain('<dialog')
    expect(t.logs).toContainEqual(
      expect.objectContaining({
        level: 'warn',
        msg: 'documentation assistant left out of the menu: no chat model provider is configured',
        missing: 'OPENAI_API_KEY or OPENAI_BASE_URL or MODEL_PROVIDERS',
      }),
    )
  })
})

describe('rate limits', async () => {
  const t = await makeApp({ OPENAI_BASE_URL: model.baseUrl, RATE_LIMIT_ASSISTANT_PER_MINUTE: '2', TRUSTED_PROXIES: '127.0.0.1' })
  const running = startServer(t.app, t.deps, { port: 0, hostname: '127.0.0.1' })
  afterAll(async () => {
    await running.server.stop(true)
    await t.close()
  })
  const askFrom = (address: string) =>
    fetch(`${running.url}/api/docs/assistant`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-forwarded-for': address },
      body: JSON.stringify({ question: 'How do tokens work?' }),
    })

  test('each client address has its own budget; over it is 429 rate_limited with Retry-After', async () => {
    const first = [await askFrom('203.0.113.7'), await askFrom('203.0.113.7'), await askFrom('203.0.113.7')]
    expect(first.map((r) => r.status)).toEqual([200, 200, 429])
    await Promise.all(first.slice(0, 2).map((r) => r.text()))
    const refused = await first[2]!.json()
    expect(refused).toMatchObject({ code: 'rate_limited', policy: 'assistant' })
    expect(first[2]!.headers.get('retry-after')).toBeTruthy()
    const other = await askFrom('198.51.100.23')
    expect(other.status).toBe(200)
    await other.text()
  })
})
