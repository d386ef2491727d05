/**
 * Several model providers at once: the OPENAI_* one, and Anthropic and Google through their own APIs (the AI SDK's
 * provider packages), each against a fake that speaks its real streaming protocol. Text streams, a tool call goes
 * round, tokens are metered, an unknown model is 422 naming those allowed, each organisation has its default, a
 * key never shows in a log or an error, and an upstream failure is the service's stable error chunk.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { startFakeAnthropic, type FakeAnthropic } from '../fakes/anthropic.ts'
import { startFakeGoogle, type FakeGoogle } from '../fakes/google.ts'
import { loadConfig } from '../../src/main/config.ts'
import { bearer, tempDir, userWithRole } from '../helpers.ts'
import { chatHarness, chunks, readEvents, textOf, type ChatHarness } from './helpers.ts'

const ANTHROPIC_KEY = 'sk-ant-fake-0123456789abcdef'
const GOOGLE_KEY = 'AIza-fake-0123456789abcdef'

let h: ChatHarness
let anthropic: FakeAnthropic
let google: FakeGoogle

beforeAll(async () => {
  anthropic = startFakeAnthropic(ANTHROPIC_KEY)
  google = startFakeGoogle(GOOGLE_KEY)
  h = await chatHarness(
    {
      MODEL_PROVIDERS: JSON.stringify([
        { name: 'claude', kind: 'anthropic', baseUrl: anthropic.baseUrl, apiKeyEnv: 'TEST_ANTHROPIC_KEY', models: ['claude-test-1'] },
        { name: 'gemini', kind: 'google', baseUrl: google.baseUrl, apiKeyEnv: 'TEST_GOOGLE_KEY', models: ['gemini-test-1', 'gemini-test-2'] },
      ]),
      TEST_ANTHROPIC_KEY: ANTHROPIC_KEY,
      TEST_GOOGLE_KEY: GOOGLE_KEY,
    },
    { search: false },
  )
})
afterAll(async () => {
  await h.close()
  await anthropic.close()
  await google.close()
})

const ask = (model: string | undefined, content: string, headers: Record<string, string> = {}) =>
  h.post({ messages: [{ role: 'user', content }], ...(model ? { model } : {}) }, { headers })

async function usageOf(userId: string) {
  await h.t.deps.meter.flush()
  const rows = await h.t.deps.db.sql`SELECT kind, SUM(quantity) AS quantity, model FROM usage_events WHERE user_id = ${userId} GROUP BY kind, model`
  return Object.fromEntries(rows.map((r: any) => [`${r.kind}:${r.model ?? ''}`, Number(r.quantity)]))
}

test("GET /api/models lists every provider's models, the OPENAI_* ones plain and the others as <provider>/<model>", async () => {
  const answer = await fetch(`${h.url}/api/models`, { headers: h.headers }).then((r) => r.json())
  expect(answer).toEqual({
    models: [
      { id: 'fake-model', provider: 'openai', default: true },
      { id: 'claude/claude-test-1', provider: 'claude', default: false },
      { id: 'gemini/gemini-test-1', provider: 'gemini', default: false },
      { id: 'gemini/gemini-test-2', provider: 'gemini', default: false },
    ],
    default: 'fake-model',
  })
  expect((await fetch(`${h.url}/api/models`)).status).toBe(401)
})

test('Anthropic: the answer streams from the Messages API, with the system prompt, the key and the model it names; its tokens are metered', async () => {
  const member = await userWithRole(h.t, 'member')
  anthropic.queue = [{ text: 'Paris is the capital of France.', usage: { input: 21, output: 8 } }]
  const events = await readEvents(await ask('claude/claude-test-1', 'capital of France?', bearer(member.token)))
  expect(textOf(events)).toBe('Paris is the capital of France.')
  expect(chunks(events).at(-1)).toMatchObject({ type: 'finish', finishReason: 'stop' })
  const sent = anthropic.bodies.at(-1)!
  expect(sent.model).toBe('claude-test-1')
  expect(sent.stream).toBe(true)
  expect(JSON.stringify(sent.system)).toContain('You are the assistant')
  expect(sent.messages).toEqual([{ role: 'user', content: [{ type: 'text', text: 'capital of France?' }] }])
  expect(await usageOf(member.user.id)).toEqual({
    'chat_request:': 1,
    'chat_tokens_in:claude/claude-test-1': 21,
    'chat_tokens_out:claude/claude-test-1': 8,
  })
})

test('Anthropic: a tool_use block streams as the client tool call, and its result goes back as a tool_result', async () => {
  anthropic.queue = [{ toolUse: { name: 'get_weather', input: { city: 'Paris' } } }, { text: 'It is sunny.' }]
  const response = await h.post({
    model: 'claude/claude-test-1',
    messages: [{ role: 'user', content: 'weather?' }],
    tools: [{ name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } }],
  })
  const first = chunks(await readEvents(response))
  const call = first.find((c) => c.type === 'tool-input-available')!
  expect(call).toMatchObject({ toolName: 'get_weather', input: { city: 'Paris' } })
  const declared = (anthropic.bodies.at(-1)!.tools as any[]).find((t) => t.name === 'get_weather')
  expect(declared.input_schema.properties).toEqual({ city: { type: 'string' } })
  // The client answers its tool; the next request carries the call and its result.
  const answered = await readEvents(
    await h.post({
      model: 'claude/claude-test-1',
      messages: [
        { role: 'user', parts: [{ type: 'text', text: 'weather?' }] },
        {
          role: 'assistant',
          parts: [{ type: 'tool-get_weather', toolCallId: call.toolCallId, state: 'output-available', input: { city: 'Paris' }, output: { sky: 'sunny' } }],
        },
      ],
      tools: [{ name: 'get_weather' }],
    }),
  )
  expect(textOf(answered)).toBe('It is sunny.')
  const sent = JSON.stringify(anthropic.bodies.at(-1)!.messages)
  expect(sent).toContain('"type":"tool_use"')
  expect(sent).toContain('"type":"tool_result"')
  expect(sent).toContain('sunny')
})

test('Google: the answer streams from streamGenerateContent?alt=sse, a whole functionCall streams as a tool call, and tokens are metered', async () => {
  const member = await userWithRole(h.t, 'member')
  google.queue = [{ text: 'Bonjour from Gemini.', usage: { prompt: 13, candidates: 4 } }]
  const events = await readEvents(await ask('gemini/gemini-test-2', 'hello', bearer(member.token)))
  expect(textOf(events)).toBe('Bonjour from Gemini.')
  const call = google.calls.at(-1)!
  expect(call.model).toBe('gemini-test-2')
  expect(call.body.contents).toEqual([{ role: 'user', parts: [{ text: 'hello' }] }])
  expect(JSON.stringify(call.body.systemInstruction)).toContain('You are the assistant')
  expect(google.requests.at(-1)!.headers['x-goog-api-key']).toBe(GOOGLE_KEY)
  expect(await usageOf(member.user.id)).toEqual({
    'chat_request:': 1,
    'chat_tokens_in:gemini/gemini-test-2': 13,
    'chat_tokens_out:gemini/gemini-test-2': 4,
  })

  google.queue = [{ functionCall: { name: 'lookup', args: { q: 'bun' } } }]
  const tool = chunks(
    await readEvents(await h.post({ model: 'gemini/gemini-test-1', messages: [{ role: 'user', content: 'look' }], tools: [{ name: 'lookup' }] })),
  )
  expect(tool.find((c) => c.type === 'tool-input-available')).toMatchObject({ toolName: 'lookup', input: { q: 'bun' } })
  expect(tool.at(-1)).toMatchObject({ type: 'finish', finishReason: 'tool-calls' })
})

test('without log-probabilities the confidence gate falls back to hedging phrases', async () => {
  const gated = await chatHarness({
    MODEL_PROVIDERS: JSON.stringify([{ name: 'claude', kind: 'anthropic', baseUrl: anthropic.baseUrl, apiKey: ANTHROPIC_KEY, models: ['c'] }]),
    CHAT_MODEL: 'claude/c',
    OPENAI_BASE_URL: '',
  })
  try {
    anthropic.queue = [{ text: "I'm not sure, maybe Lyon." }, { text: 'Paris [1].' }]
    const events = await readEvents(await gated.post({ messages: [{ role: 'user', content: 'capital?' }] }))
    expect(chunks(events).find((c) => c.type === 'data-search-decision')!.data).toMatchObject({ decision: 'search', method: 'hedging', confidence: null })
    expect(textOf(events)).toContain('Paris [1].')
    // The native APIs are never asked for log-probabilities they do not have.
    expect(JSON.stringify(anthropic.bodies.at(-2))).not.toContain('logprob')
  } finally {
    await gated.close()
  }
})

test('an unknown model is 422 naming the models allowed', async () => {
  const response = await ask('claude/opus-nonexistent', 'hi')
  expect(response.status).toBe(422)
  const body = (await response.json()) as any
  expect(body.detail).toBe('model: must be one of fake-model, claude/claude-test-1, gemini/gemini-test-1, gemini/gemini-test-2')
  expect(body.errors).toEqual([{ field: 'model', message: expect.stringContaining('must be one of') }])
})

test('each organisation has its own default, chosen by an owner or an admin, used when a request names no model', async () => {
  const ownerA = await userWithRole(h.t, 'owner')
  const ownerB = await userWithRole(h.t, 'owner')
  const memberA = await userWithRole(h.t, 'member', { orgId: ownerA.user.orgId })
  const put = (token: string, model: string | null) =>
    fetch(`${h.url}/api/org/model`, { method: 'PUT', headers: { 'content-type': 'application/json', ...bearer(token) }, body: JSON.stringify({ model }) })
  expect((await put(memberA.token, 'claude/claude-test-1')).status).toBe(403)
  expect((await put(ownerA.token, 'nope')).status).toBe(422)
  expect((await put(ownerA.token, 'claude/claude-test-1')).status).toBe(200)
  expect((await put(ownerB.token, 'gemini/gemini-test-1')).status).toBe(200)
  const list = (token: string) => fetch(`${h.url}/api/models`, { headers: bearer(token) }).then((r) => r.json() as Promise<any>)
  const [a, b] = [await list(memberA.token), await list(ownerB.token)]
  expect(a.default).toBe('claude/claude-test-1')
  expect(a.models.filter((m: any) => m.default).map((m: any) => m.id)).toEqual(['claude/claude-test-1'])
  expect(b.default).toBe('gemini/gemini-test-1')
  expect((await list(h.token)).default).toBe('fake-model')

  anthropic.queue = [{ text: 'From Claude.' }]
  expect(textOf(await readEvents(await ask(undefined, 'who?', bearer(memberA.token))))).toBe('From Claude.')
  google.queue = [{ text: 'From Gemini.' }]
  expect(textOf(await readEvents(await ask(undefined, 'who?', bearer(ownerB.token))))).toBe('From Gemini.')
  expect((await put(ownerA.token, null)).status).toBe(200)
  expect((await list(memberA.token)).default).toBe('fake-model')
})

test('an upstream failure is the stable error chunk, and no provider key appears in it or in any log line', async () => {
  anthropic.queue = [{ status: 529 }]
  google.queue = [{ status: 503 }]
  for (const model of ['claude/claude-test-1', 'gemini/gemini-test-1']) {
    const events = await readEvents(await ask(model, 'fail please'))
    const error = chunks(events).find((c) => c.type === 'error')!
    expect(error.errorText).toMatch(/^upstream_(error|rate_limited): The model provider (claude|gemini) answered 5\d\d/)
    for (const key of [ANTHROPIC_KEY, GOOGLE_KEY]) expect(JSON.stringify(events)).not.toContain(key)
  }
  const logs = JSON.stringify(h.t.logs)
  expect(logs).not.toContain(ANTHROPIC_KEY)
  expect(logs).not.toContain(GOOGLE_KEY)
  expect(logs).not.toContain('sk-ant-fake')
})

test('a refused key is an upstream_error naming the provider and where to fix it, never the key sent', async () => {
  const wrongKey = 'sk-ant-wrong-key-987654321'
  const refused = await chatHarness({
    MODEL_PROVIDERS: JSON.stringify([{ name: 'claude', kind: 'anthropic', baseUrl: anthropic.baseUrl, apiKey: wrongKey, models: ['c'] }]),
    CHAT_MODEL: 'claude/c',
  })
  try {
    const events = await readEvents(await refused.post({ messages: [{ role: 'user', content: 'hi' }] }))
    const error = chunks(events).find((c) => c.type === 'error')!
    expect(error.errorText).toStartWith('upstream_error: The model provider claude answered 401')
    expect(error.errorText).toContain('check the key of claude in MODEL_PROVIDERS')
    expect(JSON.stringify(events)).not.toContain(wrongKey)
    expect(JSON.stringify(refused.t.logs)).not.toContain(wrongKey)
  } finally {
    await refused.close()
  }
})

test('a bad MODEL_PROVIDERS, or a key variable left unset, stops start-up with the problem named', () => {
  const load =
    (list: unknown, env: Record<string, string> = {}) =>
    () =>
      loadConfig({ DATA_DIR: tempDir().path, MODEL_PROVIDERS: JSON.stringify(list), ...env })
  expect(load([{ name: 'x', kind: 'mistral', models: ['m'] }])).toThrow('kind must be one of openai-compatible, anthropic, google')
  expect(load([{ name: 'x', kind: 'anthropic', models: ['m'] }])).toThrow('a provider of kind anthropic needs apiKeyEnv (or apiKey)')
  expect(load([{ name: 'x', kind: 'google', apiKeyEnv: 'UNSET_KEY_VARIABLE', models: ['m'] }])).toThrow('its key variable UNSET_KEY_VARIABLE is not set')
  expect(load([{ name: 'x', kind: 'openai-compatible', models: ['m'] }])).toThrow('an openai-compatible provider needs its baseUrl')
  expect(load([{ name: 'Bad Name', kind: 'google', apiKey: 'k', models: [] }])).toThrow('name must be')
  expect(load([{ name: 'x', kind: 'google', apiKeyEnv: 'SET_KEY', models: ['m'] }], { SET_KEY: 'k' })).not.toThrow()
})
