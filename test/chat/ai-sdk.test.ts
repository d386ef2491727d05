import { afterAll, beforeAll, expect, test } from 'bun:test'
import { DefaultChatTransport, readUIMessageStream, type UIMessage } from 'ai'
import { chatHarness, SdkChat, type ChatHarness } from './helpers.ts'

let h: ChatHarness
beforeAll(async () => {
  h = await chatHarness()
})
afterAll(() => h.close())

test('the AI SDK chat reads a streamed answer with a tool call, its sources and text into one UI message', async () => {
  h.model.queue = [
    { toolCalls: [{ name: 'web_search', arguments: JSON.stringify({ query: 'bun sql' }) }] },
    { text: 'Bun ships a SQL client [1].', logprobs: [-0.01, -0.01, -0.01, -0.01, -0.01, -0.01] },
  ]
  const chat = new SdkChat({ api: `${h.url}/api/chat`, headers: h.headers, id: 'sdk-chat-1' })
  await chat.sendMessage({ text: 'What does Bun ship for SQL?' })
  expect(chat.error).toBeUndefined()
  expect(chat.status).toBe('ready')
  const answer = chat.messages.at(-1)!
  expect(answer.role).toBe('assistant')
  const types = answer.parts.map((p) => p.type)
  expect(types).toContain('tool-web_search')
  expect(types).toContain('source-url')
  expect(types).toContain('data-search-decision')
  const tool = answer.parts.find((p) => p.type === 'tool-web_search') as any
  expect(tool.state).toBe('output-available')
  expect(tool.input).toEqual({ query: 'bun sql' })
  expect(tool.output.results[0].url).toBe('https://bun.sh/docs/api/sql')
  const sources = answer.parts.filter((p) => p.type === 'source-url') as any[]
  expect(sources.map((s) => s.url)).toContain('https://bun.sh/docs/api/sql')
  const text = answer.parts
    .filter((p) => p.type === 'text')
    .map((p: any) => p.text)
    .join('')
  expect(text).toBe('Bun ships a SQL client [1].')
  // The second model call saw the tool result.
  const second = h.model.completions.at(-1)!
  expect(second.messages.some((m: any) => m.role === 'tool' && m.content.includes('bun.sh/docs/api/sql'))).toBe(true)
})

test('the conversation continues across requests and is stored', async () => {
  h.model.queue = [{ text: 'First answer.' }, { text: 'Second answer.' }]
  const chat = new SdkChat({ api: `${h.url}/api/chat`, headers: h.headers, id: 'sdk-chat-2' })
  await chat.sendMessage({ text: 'one' })
  await chat.sendMessage({ text: 'two' })
  expect(chat.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'user', 'assistant'])
  const lastRequest = h.model.completions.at(-1)!
  expect(lastRequest.messages.filter((m: any) => m.role !== 'system').map((m: any) => [m.role, m.content])).toEqual([
    ['user', 'one'],
    ['assistant', 'First answer.'],
    ['user', 'two'],
  ])
  const stored = await fetch(`${h.url}/api/chat/sdk-chat-2`, { headers: h.headers }).then((r) => r.json())
  expect(stored.messages.map((m: any) => m.role)).toEqual(['user', 'assistant', 'user', 'assistant'])
  expect(stored.messages.map((m: any) => m.id)).toEqual(chat.messages.map((m) => m.id))
})

test('a client-declared tool is streamed for the client to run, and its result continues the turn', async () => {
  h.model.queue = [{ toolCalls: [{ name: 'get_location', arguments: '{}' }] }, { text: 'You are in Paris.' }]
  const transport = new DefaultChatTransport<UIMessage>({ api: `${h.url}/api/chat`, headers: h.headers, body: { tools: [{ name: 'get_location' }] } })
  const user: UIMessage = { id: 'u1', role: 'user', parts: [{ type: 'text', text: 'where am I?' }] }
  const stream = await transport.sendMessages({
    chatId: 'sdk-chat-3',
    messages: [user],
    trigger: 'submit-message',
    messageId: undefined,
    abortSignal: undefined,
  })
  let last: UIMessage | undefined
  for await (const message of readUIMessageStream({ stream })) last = message
  const call = last!.parts.find((p) => p.type === 'tool-get_location') as any
  expect(call.state).toBe('input-available')
  const answered = { ...last!, parts: last!.parts.map((p) => (p === call ? { ...call, state: 'output-available', output: { city: 'Paris' } } : p)) }
  const next = await transport.sendMessages({
    chatId: 'sdk-chat-3',
    messages: [user, answered as UIMessage],
    trigger: 'submit-message',
    messageId: undefined,
    abortSignal: undefined,
  })
  let final: UIMessage | undefined
  for await (const message of readUIMessageStream({ stream: next })) final = message
  expect(
    final!.parts
      .filter((p) => p.type === 'text')
      .map((p: any) => p.text)
      .join(''),
  ).toBe('You are in Paris.')
  const request = h.model.completions.at(-1)!
  expect(request.messages.some((m: any) => m.role === 'tool' && m.content === JSON.stringify({ city: 'Paris' }))).toBe(true)
})
