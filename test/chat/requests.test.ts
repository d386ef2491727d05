import { afterAll, beforeAll, expect, test } from 'bun:test'
import { userWithRole } from '../helpers.ts'
import { chatHarness, readEvents, textOf, type ChatHarness } from './helpers.ts'

let h: ChatHarness
beforeAll(async () => {
  h = await chatHarness({}, { search: false })
})
afterAll(() => h.close())

const send = (body: string | object, headers: Record<string, string> = h.headers) =>
  fetch(`${h.url}/api/chat`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  })

test('bad bodies are refused with a problem naming the field, and nothing is stored', async () => {
  const cases: [string | object, number, string][] = [
    ['{"messages": [', 400, 'invalid_json'],
    [{}, 422, 'validation_failed'],
    [{ messages: [] }, 422, 'validation_failed'],
    [{ messages: [{ role: 'robot', content: 'x' }] }, 422, 'validation_failed'],
    [{ messages: [{ role: 'user', content: 5 }] }, 422, 'validation_failed'],
    [{ messages: [{ role: 'user', content: 'x' }], extra: true }, 422, 'validation_failed'],
    [{ id: '../etc/passwd', messages: [{ role: 'user', content: 'x' }] }, 422, 'validation_failed'],
    [{ messages: [{ role: 'user', content: 'x' }], options: { temperature: 9 } }, 422, 'validation_failed'],
  ]
  for (const [body, status, code] of cases) {
    const res = await send(body)
    expect(res.status).toBe(status)
    const problem = await res.json()
    expect(problem.code).toBe(code)
    if (status === 422) expect(problem.errors.length).toBeGreaterThan(0)
  }
  const list = await fetch(`${h.url}/api/chats`, { headers: h.headers }).then((r) => r.json())
  expect(list.chats).toEqual([])
})

test('a missing token is 401, a token without chat:write is 403', async () => {
  expect((await send({ messages: [{ role: 'user', content: 'x' }] }, {})).status).toBe(401)
  const viewer = await userWithRole(h.t, 'viewer')
  const res = await send({ messages: [{ role: 'user', content: 'x' }] }, { authorization: `Bearer ${viewer.token}` })
  expect(res.status).toBe(403)
  expect((await res.json()).code).toBe('insufficient_scope')
})

test("another user's chat is not found to read, continue or cancel, and has nothing to resume", async () => {
  await readEvents(await h.post({ id: 'private-1', messages: [{ role: 'user', content: 'mine' }] }))
  const other = await userWithRole(h.t, 'member')
  const auth = { authorization: `Bearer ${other.token}` }
  expect((await fetch(`${h.url}/api/chat/private-1`, { headers: auth })).status).toBe(404)
  // The same 204 as for an id nobody has used: a resume tells no one which chats exist.
  const resumed = await fetch(`${h.url}/api/chat/private-1/stream`, { headers: auth })
  expect(resumed.status).toBe(204)
  expect(await resumed.text()).toBe('')
  expect((await fetch(`${h.url}/api/chat/private-1/cancel`, { method: 'POST', headers: auth })).status).toBe(404)
  expect((await send({ id: 'private-1', messages: [{ role: 'user', content: 'hijack' }] }, auth)).status).toBe(404)
  const mine = await fetch(`${h.url}/api/chat/private-1`, { headers: h.headers }).then((r) => r.json())
  expect(mine.messages).toHaveLength(2)
})

test('hostile strings travel as data: the SSE framing and JSON stay intact', async () => {
  const hostile = 'line\r\nid: 999\n\ndata: [DONE]\n\u0000<script>'
  h.model.queue = [{ text: [hostile] }]
  const events = await readEvents(await h.post({ messages: [{ role: 'user', content: hostile }] }))
  expect(textOf(events)).toBe(hostile)
  expect(events.filter((e) => e.chunk === '[DONE]')).toHaveLength(1)
  expect(h.model.completions.at(-1)!.messages.at(-1).content).toBe(hostile)
})

test('plain clients may send the whole conversation or just the new message', async () => {
  h.model.queue = [{ text: 'A1' }, { text: 'A2' }, { text: 'A3' }]
  await readEvents(await h.post({ id: 'plain-1', messages: [{ role: 'user', content: 'Q1' }] }))
  await readEvents(await h.post({ id: 'plain-1', messages: [{ role: 'user', content: 'Q2' }] }))
  await readEvents(
    await h.post({
      id: 'plain-1',
      messages: [
        { role: 'user', content: 'Q1' },
        { role: 'assistant', content: 'A1' },
        { role: 'user', content: 'Q2' },
        { role: 'assistant', content: 'A2' },
        { role: 'user', content: 'Q3' },
      ],
    }),
  )
  const sent = h.model.completions
    .at(-1)!
    .messages.filter((m: any) => m.role !== 'system')
    .map((m: any) => m.content)
  expect(sent).toEqual(['Q1', 'A1', 'Q2', 'A2', 'Q3'])
  const chat = await fetch(`${h.url}/api/chat/plain-1`, { headers: h.headers }).then((r) => r.json())
  expect(chat.messages).toHaveLength(6)
  expect(chat.title).toBe('Q1')
})

test('token usage is metered per model call', async () => {
  const member = await userWithRole(h.t, 'member')
  h.model.queue = [{ text: 'metered', usage: { prompt_tokens: 11, completion_tokens: 7 } }]
  await readEvents(await h.post({ messages: [{ role: 'user', content: 'count me' }] }, { headers: { authorization: `Bearer ${member.token}` } }))
  await h.t.deps.meter.flush()
  const rows = await h.t.deps.db.sql`SELECT kind, SUM(quantity) AS quantity, model FROM usage_events WHERE user_id = ${member.user.id} GROUP BY kind, model`
  const usage = Object.fromEntries(rows.map((r: any) => [`${r.kind}:${r.model ?? ''}`, Number(r.quantity)]))
  expect(usage).toEqual({ 'chat_request:': 1, 'chat_tokens_in:fake-model': 11, 'chat_tokens_out:fake-model': 7 })
})

test('without reported usage the tokens are estimated from the text', async () => {
  const member = await userWithRole(h.t, 'member')
  h.model.queue = [{ text: 'x'.repeat(40), usage: null }]
  await readEvents(await h.post({ messages: [{ role: 'user', content: 'estimate' }] }, { headers: { authorization: `Bearer ${member.token}` } }))
  await h.t.deps.meter.flush()
  const [row] = await h.t.deps.db.sql`SELECT SUM(quantity) AS quantity FROM usage_events WHERE user_id = ${member.user.id} AND kind = 'chat_tokens_out'`
  expect(Number(row.quantity)).toBe(10)
})
