import { afterAll, beforeAll, expect, test } from 'bun:test'
import { ADMIN, makeApp } from '../helpers.ts'
import { chatHarness, chunks, eventually, readEvents, textOf, type ChatHarness } from './helpers.ts'

let h: ChatHarness
beforeAll(async () => {
  h = await chatHarness({ CHAT_UPSTREAM_IDLE_MS: '300' }, { search: false })
})
afterAll(() => h.close())

/** `times`: how often the script is answered (a refused request is retried once). */
async function errorOf(script: Parameters<typeof h.model.queue.push>[0], times = 1) {
  h.model.queue = Array(times).fill(script)
  const events = await readEvents(await h.post({ messages: [{ role: 'user', content: 'hello' }] }))
  expect(events.at(-1)!.chunk).toBe('[DONE]')
  return { events, error: chunks(events).find((c) => c.type === 'error')?.errorText as string | undefined }
}

test('a 429 from the provider becomes an upstream_rate_limited error chunk and a clean end', async () => {
  // One retry (honouring Retry-After: 0), then the failure is reported.
  const calls = h.model.completions.length
  const { error } = await errorOf({ status: 429, retryAfter: '0' }, 2)
  expect(h.model.completions.length).toBe(calls + 2)
  expect(error).toStartWith('upstream_rate_limited:')
})

test('a 500 becomes upstream_error naming the status', async () => {
  const { error } = await errorOf({ status: 500 }, 2)
  expect(error).toStartWith('upstream_error: The model provider answered 500')
})

test('a malformed chunk becomes upstream_malformed after the text that came before it', async () => {
  const { events, error } = await errorOf({ text: 'one two three four', malformedAfter: 2 })
  expect(textOf(events)).toBe('one two ')
  expect(error).toStartWith('upstream_malformed:')
})

test('a stalled stream is cut after CHAT_UPSTREAM_IDLE_MS and reported, and the upstream request is dropped', async () => {
  const abandoned = h.model.abandoned
  const { events, error } = await errorOf({ text: 'one two three', stallAfter: 1 })
  expect(textOf(events)).toBe('one ')
  expect(error).toStartWith('upstream_stalled:')
  await eventually(() => h.model.abandoned === abandoned + 1, 'the upstream request to be dropped')
})

test('the stored answer keeps what was streamed and says it failed', async () => {
  h.model.queue = [{ text: 'partial answer here', malformedAfter: 1 }]
  const response = await h.post({ id: 'failed-1', messages: [{ role: 'user', content: 'x' }] })
  await readEvents(response)
  const chat = await fetch(`${h.url}/api/chat/failed-1`, { headers: h.headers }).then((r) => r.json())
  expect(chat.messages[1].metadata.status).toBe('error')
  expect(chat.messages[1].metadata.error).toStartWith('upstream_malformed')
})

test('an unreachable provider is an upstream_error, not a hang', async () => {
  const t = await makeApp({ ADMIN_EMAIL: ADMIN.email, ADMIN_PASSWORD: ADMIN.password, OPENAI_BASE_URL: 'http://127.0.0.1:9/v1' })
  const { accessToken } = await t.send('POST', '/auth/login', ADMIN).then((r) => r.json())
  const res = await t.send('POST', '/api/chat', { messages: [{ role: 'user', content: 'hi' }] }, { authorization: `Bearer ${accessToken}` })
  const events = await readEvents(res)
  expect(chunks(events).find((c) => c.type === 'error')!.errorText).toStartWith('upstream_error:')
  await t.close()
})

test('with no provider configured chat answers 503 not_configured naming the variables, and the rest keeps working', async () => {
  const t = await makeApp({ ADMIN_EMAIL: ADMIN.email, ADMIN_PASSWORD: ADMIN.password })
  const { accessToken } = await t.send('POST', '/auth/login', ADMIN).then((r) => r.json())
  const res = await t.send('POST', '/api/chat', { messages: [{ role: 'user', content: 'hi' }] }, { authorization: `Bearer ${accessToken}` })
  expect(res.status).toBe(503)
  const body = await res.json()
  expect(body.code).toBe('not_configured')
  expect(body.variables).toEqual(['OPENAI_API_KEY', 'OPENAI_BASE_URL', 'MODEL_PROVIDERS'])
  expect((await t.request('/auth/me', { headers: { authorization: `Bearer ${accessToken}` } })).status).toBe(200)
  await t.close()
})
