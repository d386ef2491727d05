/** The chat streams read from a page on another origin: the answer, its resume, and nothing to resume. */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { chatHarness, readEvents, readSome, textOf, type ChatHarness } from '../chat/helpers.ts'

const APP = 'http://app.example.test:5173'

let h: ChatHarness
beforeAll(async () => {
  h = await chatHarness({ CORS_ORIGINS: APP }, { search: false })
})
afterAll(() => h.close())

const words = Array.from({ length: 20 }, (_, i) => `w${i} `)
const exposed = (response: Response) => response.headers.get('access-control-expose-headers')!.split(', ')

test('a streamed answer names the origin and exposes the stream protocol, chat and generation headers', async () => {
  h.model.queue = [{ text: words }]
  const response = await h.post({ id: 'cors-1', messages: [{ role: 'user', content: 'hi' }] }, { headers: { origin: APP } })
  expect(response.status).toBe(200)
  expect(response.headers.get('content-type')).toStartWith('text/event-stream')
  expect(response.headers.get('access-control-allow-origin')).toBe(APP)
  for (const name of ['x-vercel-ai-ui-message-stream', 'x-chat-id', 'x-generation-id', 'x-request-id']) {
    expect(response.headers.get(name)).toBeTruthy()
    expect(exposed(response)).toContain(name)
  }
  expect(textOf(await readEvents(response))).toBe(words.join(''))
})

test('a resume names the origin, whether it streams or has nothing to resume', async () => {
  h.model.queue = [{ text: words, delayMs: 10 }]
  const abort = new AbortController()
  const first = await h.post({ id: 'cors-2', messages: [{ role: 'user', content: 'again' }] }, { signal: abort.signal, headers: { origin: APP } })
  await readSome(first, 3, abort)
  const resumed = await fetch(`${h.url}/api/chat/cors-2/stream`, { headers: { ...h.headers, origin: APP } })
  expect(resumed.status).toBe(200)
  expect(resumed.headers.get('access-control-allow-origin')).toBe(APP)
  expect(textOf(await readEvents(resumed))).toBe(words.join(''))
  const nothing = await fetch(`${h.url}/api/chat/never-used/stream`, { headers: { ...h.headers, origin: APP } })
  expect(nothing.status).toBe(204)
  expect(nothing.headers.get('access-control-allow-origin')).toBe(APP)
})
