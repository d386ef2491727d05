import { afterAll, expect, test } from 'bun:test'
import { createOpenAiProvider, type ModelEvent } from '../../src/llm/provider.ts'

// An upstream that splits its stream inside multi-byte characters, one write at a time with a pause between, so
// each piece reaches the provider as a read of its own.
const chunk = (content: string, finish: string | null = null) =>
  `data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk', created: 1, model: 'm', choices: [{ index: 0, delta: finish ? {} : { content }, finish_reason: finish }] })}\n\n`
const wire = new TextEncoder().encode(`${chunk('naïve café ') + chunk('日本語 🙂') + chunk('', 'stop')}data: [DONE]\n\n`)
const cuts = [...wire.keys()].filter((i) => i > 0 && (wire[i]! & 0xc0) === 0x80 && (wire[i - 1]! & 0xc0) !== 0x80)
const upstream = Bun.serve({
  hostname: '127.0.0.1',
  port: 0,
  fetch: () =>
    new Response(
      new ReadableStream({
        async pull(controller) {
          // Every piece ends right after the first byte of a multi-byte character.
          let from = 0
          for (const cut of cuts) {
            controller.enqueue(wire.slice(from, cut))
            from = cut
            await Bun.sleep(5)
          }
          controller.enqueue(wire.slice(from))
          controller.close()
        },
      }),
      { headers: { 'content-type': 'text/event-stream' } },
    ),
})
afterAll(() => upstream.stop(true))

test('characters split across reads of the upstream stream arrive whole', async () => {
  expect(cuts.length).toBeGreaterThan(4)
  const provider = createOpenAiProvider({ baseUrl: `${upstream.url.origin}/v1`, timeoutMs: 5000, idleMs: 5000, maxRetries: 0 })
  const events: ModelEvent[] = []
  let reads = 0
  for await (const batch of provider.stream({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }, new AbortController().signal)) {
    reads++
    events.push(...batch)
  }
  const text = events.flatMap((e) => (e.type === 'text' ? [e.delta] : [])).join('')
  expect(text).toBe('naïve café 日本語 🙂')
  expect(events.at(-1)).toEqual({ type: 'finish', reason: 'stop' })
  expect(reads).toBeGreaterThan(1)
})
