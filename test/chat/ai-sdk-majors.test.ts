/**
 * The clients in use, `ai` 5, 6 and 7, each reading a real unsure-then-grounded answer with its own transport
 * and `readUIMessageStream`: by default none sees `reset-step` and each ends with the grounded answer after the
 * kept draft; a client that says it reads `reset-step` (X-UI-Stream-Features) gets the draft withdrawn.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import * as ai7 from 'ai'
import * as ai5 from 'ai5'
import * as ai6 from 'ai6'
import { chatHarness, type ChatHarness } from './helpers.ts'

/** What the test uses of each major, which it has under the same names with types of its own. */
interface Sdk {
  DefaultChatTransport: new (init: { api: string; headers: Record<string, string> }) => { sendMessages(options: never): Promise<ReadableStream<unknown>> }
  readUIMessageStream(options: { stream: never; onError?: (error: unknown) => void }): AsyncIterable<unknown>
}
type Part = { type: string; text?: string }

let h: ChatHarness
beforeAll(async () => {
  h = await chatHarness({ CHAT_CONFIDENCE_TOKENS: '4' })
})
afterAll(() => h.close())

const unsure = Array(4).fill(Math.log(0.5))

/** Sends one question with the major's own DefaultChatTransport and assembles the answer with its readUIMessageStream. */
async function ask(sdk: Sdk, chatId: string, headers: Record<string, string> = {}) {
  h.model.queue = [{ text: 'Maybe it is Lyon or so.', logprobs: unsure }, { text: 'It is Paris [1].' }]
  const transport = new sdk.DefaultChatTransport({ api: `${h.url}/api/chat`, headers: { ...h.headers, ...headers } })
  const stream = await transport.sendMessages({
    chatId,
    messages: [{ id: `${chatId}-u`, role: 'user', parts: [{ type: 'text', text: 'capital of France?' }] }],
    trigger: 'submit-message',
    messageId: undefined,
    abortSignal: undefined,
  } as never)
  const errors: unknown[] = []
  let last: { parts: Part[] } | undefined
  for await (const message of sdk.readUIMessageStream({ stream: stream as never, onError: (e: unknown) => errors.push(e) })) last = message as { parts: Part[] }
  return { parts: last?.parts ?? [], errors }
}

const texts = (parts: Part[]) => parts.filter((p) => p.type === 'text').map((p) => p.text)

test('ai 5 itself has no reset-step chunk in its UI message stream', async () => {
  // The validator the transport checks every chunk with.
  const validator = (ai5.uiMessageChunkSchema as unknown as () => { validate(v: unknown): Promise<{ success: boolean }> | { success: boolean } })()
  expect((await validator.validate({ type: 'reset-step' })).success).toBe(false)
  expect((await validator.validate({ type: 'finish-step' })).success).toBe(true)
})

for (const [major, sdk] of [
  ['5', ai5 as unknown as Sdk],
  ['6', ai6 as unknown as Sdk],
  ['7', ai7 as unknown as Sdk],
] as const) {
  test(`by default an ai ${major} client reads the unsure answer without error: the draft kept, then the decision and the grounded answer`, async () => {
    const { parts, errors } = await ask(sdk, `majors-default-${major}`)
    expect(errors).toEqual([])
    expect(texts(parts)).toEqual(['Maybe it ', 'It is Paris [1].'])
    expect(parts.map((p) => p.type)).toContain('data-search-decision')
    expect(parts.at(-1)).toMatchObject({ type: 'text', text: 'It is Paris [1].' })
  })
}

test('an ai 7 client that says it reads reset-step gets the withdrawn draft replaced by the grounded answer', async () => {
  const { parts, errors } = await ask(ai7 as unknown as Sdk, 'majors-opt-in-7', { 'X-UI-Stream-Features': 'reset-step' })
  expect(errors).toEqual([])
  expect(texts(parts)).toEqual(['It is Paris [1].'])
  expect(parts.map((p) => p.type).slice(0, 2)).toEqual(['step-start', 'data-search-decision'])
})

test('the same opt-in sent by an ai 6 client fails it, which is why withdrawing is never the default', async () => {
  const { errors } = await ask(ai6 as unknown as Sdk, 'majors-opt-in-6', { 'X-UI-Stream-Features': 'reset-step' })
  expect(String(errors[0] ?? '')).toContain('Type validation failed')
})
