import { afterAll, beforeAll, expect, test } from 'bun:test'
import type { UIMessage } from 'ai'
import { chatHarness, chunks, eventually, readEvents, readSome, SdkChat, textOf, type ChatHarness } from './helpers.ts'

let h: ChatHarness
beforeAll(async () => {
  h = await chatHarness({}, { search: false })
})
afterAll(() => h.close())

const words = Array.from({ length: 60 }, (_, i) => `w${i} `)

test('a dropped connection resumed with Last-Event-ID gets exactly the missed events, and the whole text once', async () => {
  h.model.queue = [{ text: words, delayMs: 5 }]
  const abort = new AbortController()
  const first = await h.post({ id: 'resume-1', messages: [{ role: 'user', content: 'count' }] }, { signal: abort.signal })
  const chatId = first.headers.get('x-chat-id')!
  const before = await readSome(first, 12, abort)
  const lastId = before.at(-1)!.id!
  // The generation goes on without a client.
  await Bun.sleep(50)
  const resumed = await fetch(`${h.url}/api/chat/${chatId}/stream`, { headers: { ...h.headers, 'last-event-id': lastId } })
  expect(resumed.status).toBe(200)
  expect(resumed.headers.get('x-vercel-ai-ui-message-stream')).toBe('v1')
  const after = await readEvents(resumed)
  const all = [...before, ...after]
  const seqs = all.map((e) => Number(e.id!.split(':')[1]))
  expect(seqs).toEqual(Array.from({ length: seqs.length }, (_, i) => i + 1))
  expect(textOf(all)).toBe(words.join(''))
  expect(all.at(-1)!.chunk).toBe('[DONE]')
  expect(chunks(all).filter((c) => c.type === 'finish')).toHaveLength(1)
  // Disconnect is not cancel: the upstream stream ran to its end.
  expect(h.model.abandoned).toBe(0)
})

test('without Last-Event-ID the active generation is replayed from its first event; none active answers 204', async () => {
  h.model.queue = [{ text: words.slice(0, 20), delayMs: 10 }]
  const abort = new AbortController()
  const first = await h.post({ id: 'resume-2', messages: [{ role: 'user', content: 'again' }] }, { signal: abort.signal })
  await readSome(first, 3, abort)
  const replay = await readEvents(await fetch(`${h.url}/api/chat/resume-2/stream`, { headers: h.headers }))
  expect(Number(replay[0]!.id!.split(':')[1])).toBe(1)
  expect(textOf(replay)).toBe(words.slice(0, 20).join(''))
  const none = await fetch(`${h.url}/api/chat/resume-2/stream`, { headers: h.headers })
  expect(none.status).toBe(204)
})

test('a chat id with nothing to resume, never used or finished, answers 204 with no body', async () => {
  const unknown = await fetch(`${h.url}/api/chat/made-up-by-the-client/stream`, { headers: h.headers })
  expect(unknown.status).toBe(204)
  expect(await unknown.text()).toBe('')
  h.model.queue = [{ text: 'done already' }]
  await readEvents(await h.post({ id: 'resume-finished', messages: [{ role: 'user', content: 'quick' }] }))
  await eventually(async () => !(await h.t.deps.chat.activeGeneration('resume-finished')), 'the generation to end')
  const finished = await fetch(`${h.url}/api/chat/resume-finished/stream`, { headers: h.headers })
  expect(finished.status).toBe(204)
  expect(await finished.text()).toBe('')
})

test('the AI SDK resumeStream picks up a running answer after a reload', async () => {
  h.model.queue = [{ text: words.slice(0, 30), delayMs: 8 }]
  const abort = new AbortController()
  const first = await h.post({ id: 'resume-3', messages: [{ id: 'm1', role: 'user', parts: [{ type: 'text', text: 'hi' }] }] }, { signal: abort.signal })
  await readSome(first, 4, abort)
  // A fresh page: the chat's stored messages plus a resume of the running answer.
  const stored: UIMessage = { id: 'm1', role: 'user', parts: [{ type: 'text', text: 'hi' }] }
  const chat = new SdkChat({ api: `${h.url}/api/chat`, headers: h.headers, id: 'resume-3', messages: [stored] })
  await chat.resumeStream()
  const answer = chat.messages.at(-1)!
  expect(answer.role).toBe('assistant')
  expect(
    answer.parts
      .filter((p) => p.type === 'text')
      .map((p: any) => p.text)
      .join(''),
  ).toBe(words.slice(0, 30).join(''))
})

test('the finished answer is stored even though nobody followed it to the end', async () => {
  h.model.queue = [{ text: words.slice(0, 10), delayMs: 5 }]
  const abort = new AbortController()
  const first = await h.post({ id: 'resume-4', messages: [{ role: 'user', content: 'store it' }] }, { signal: abort.signal })
  await readSome(first, 2, abort)
  await eventually(async () => {
    const chat = await fetch(`${h.url}/api/chat/resume-4`, { headers: h.headers }).then((r) => r.json())
    return chat.messages.length === 2 && !chat.active
  }, 'the stored answer')
  const chat = await fetch(`${h.url}/api/chat/resume-4`, { headers: h.headers }).then((r) => r.json())
  expect(chat.messages[1].parts.find((p: any) => p.type === 'text').text).toBe(words.slice(0, 10).join(''))
  expect(chat.messages[1].metadata.status).toBe('complete')
})

test('cancel stops the upstream request at once and ends the stream with an abort chunk', async () => {
  h.model.queue = [{ text: words, delayMs: 30 }]
  const response = await h.post({ id: 'cancel-1', messages: [{ role: 'user', content: 'long' }] })
  const reading = readEvents(response)
  await eventually(() => h.model.open > 0, 'the upstream stream')
  const abandonedBefore = h.model.abandoned
  const cancel = await fetch(`${h.url}/api/chat/cancel-1/cancel`, { method: 'POST', headers: h.headers })
  expect(await cancel.json()).toMatchObject({ cancelled: true })
  const events = await reading
  expect(chunks(events).at(-1)).toMatchObject({ type: 'abort' })
  expect(events.at(-1)!.chunk).toBe('[DONE]')
  await eventually(() => h.model.abandoned === abandonedBefore + 1, 'the upstream abort')
  const again = await fetch(`${h.url}/api/chat/cancel-1/cancel`, { method: 'POST', headers: h.headers })
  expect(await again.json()).toEqual({ cancelled: false })
})

test('a new message in a chat supersedes the answer still running there', async () => {
  h.model.queue = [{ text: words, delayMs: 30 }, { text: 'short' }]
  const response = await h.post({ id: 'supersede-1', messages: [{ role: 'user', content: 'long' }] })
  const reading = readEvents(response)
  await eventually(() => h.model.open > 0, 'the upstream stream')
  const second = await readEvents(await h.post({ id: 'supersede-1', messages: [{ role: 'user', content: 'instead' }] }))
  expect(textOf(second)).toBe('short')
  expect(chunks(await reading).at(-1)).toMatchObject({ type: 'abort' })
})
