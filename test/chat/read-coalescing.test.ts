import { afterAll, beforeAll, expect, test } from 'bun:test'
import { chatHarness, chunks, readEvents, textOf, type ChatHarness } from './helpers.ts'

// An upstream that writes a whole answer in two writes: 40 tokens at once, a pause, 40 more.
const tokens = Array.from({ length: 80 }, (_, i) => `word${i} `)
const chunk = (delta: object, finish: string | null = null) =>
  `data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`
const encoder = new TextEncoder()
const upstream = Bun.serve({
  hostname: '127.0.0.1',
  port: 0,
  async fetch(request) {
    await request.text()
    return new Response(
      new ReadableStream({
        async pull(controller) {
          controller.enqueue(
            encoder.encode(
              chunk({ role: 'assistant', content: '' }) +
                tokens
                  .slice(0, 40)
                  .map((t) => chunk({ content: t }))
                  .join(''),
            ),
          )
          await Bun.sleep(50)
          controller.enqueue(
            encoder.encode(
              `${
                tokens
                  .slice(40)
                  .map((t) => chunk({ content: t }))
                  .join('') + chunk({}, 'stop')
              }data: [DONE]\n\n`,
            ),
          )
          controller.close()
        },
      }),
      { headers: { 'content-type': 'text/event-stream' } },
    )
  },
})

let h: ChatHarness
beforeAll(async () => {
  h = await chatHarness({ OPENAI_BASE_URL: `${upstream.url.origin}/v1` }, { search: false })
})
afterAll(async () => {
  await h.close()
  upstream.stop(true)
})

test('the tokens of one upstream read leave as one text delta, and the answer is whole', async () => {
  const response = await h.post({ messages: [{ role: 'user', content: 'write eighty words' }] })
  expect(response.status).toBe(200)
  const events = await readEvents(response)
  expect(textOf(events)).toBe(tokens.join(''))
  const deltas = chunks(events).filter((c) => c.type === 'text-delta')
  // Two writes, two deltas; a read the kernel splits can add one more, never one per token.
  expect(deltas.length).toBeGreaterThanOrEqual(2)
  expect(deltas.length).toBeLessThanOrEqual(4)
  // The stored answer is the same text.
  const chatId = response.headers.get('x-chat-id')!
  const stored = await h.t
    .request(`/api/chat/${chatId}`, { headers: h.headers })
    .then((r) => r.json() as Promise<{ messages: { role: string; parts: { type: string; text?: string }[] }[] }>)
  const answer = stored.messages.find((m) => m.role === 'assistant')!
  expect(
    answer.parts
      .filter((p) => p.type === 'text')
      .map((p) => p.text)
      .join(''),
  ).toBe(tokens.join(''))
})
