/** Shared set-up of the chat suites: the service on a real port with a fake model provider and search engine. */
import { AbstractChat, DefaultChatTransport, type ChatInit, type ChatState, type UIMessage } from 'ai'
import { expect } from 'bun:test'
import { EventSourceParserStream } from 'eventsource-parser/stream'
import type { EventSourceMessage } from 'eventsource-parser'
import { startFakeOpenAi, type FakeOpenAi } from '../fakes/openai.ts'
import { startFakeSearxng, type FakeSearchEngine } from '../fakes/search-providers.ts'
import { ADMIN, makeApp, type TestApp } from '../helpers.ts'

export interface ChatHarness {
  t: TestApp
  model: FakeOpenAi
  search: FakeSearchEngine
  /** Base URL of the service listening on 127.0.0.1. */
  url: string
  token: string
  headers: Record<string, string>
  /** POST /api/chat over the network. */
  post(body: unknown, init?: { signal?: AbortSignal; headers?: Record<string, string> }): Promise<Response>
  close(): Promise<void>
}

export async function chatHarness(env: Record<string, string> = {}, options: { search?: boolean } = {}): Promise<ChatHarness> {
  const model = startFakeOpenAi()
  const search = startFakeSearxng()
  const t = await makeApp({
    ADMIN_EMAIL: ADMIN.email,
    ADMIN_PASSWORD: ADMIN.password,
    OPENAI_BASE_URL: model.baseUrl,
    CHAT_MODEL: 'fake-model',
    RATE_LIMIT_CHAT_PER_MINUTE: '100000',
    RATE_LIMIT_BURST: '100000',
    ...(options.search === false ? {} : { SEARXNG_URL: search.url }),
    ...env,
  })
  const server = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: (request) => t.app.handle(request) })
  const url = `http://127.0.0.1:${server.port}`
  const pair = await t.send('POST', '/auth/login', ADMIN).then((r) => r.json() as Promise<{ accessToken: string }>)
  const headers = { authorization: `Bearer ${pair.accessToken}` }
  return {
    t,
    model,
    search,
    url,
    token: pair.accessToken,
    headers,
    post: (body, init = {}) =>
      fetch(`${url}/api/chat`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers, ...init.headers },
        body: JSON.stringify(body),
        signal: init.signal,
      }),
    async close() {
      server.stop(true)
      await t.close()
      await model.close()
      await search.close()
    },
  }
}

export interface StreamEvent extends EventSourceMessage {
  chunk: Record<string, any> | '[DONE]'
}

/** Reads a whole SSE response into events with parsed chunks. */
export async function readEvents(response: Response): Promise<StreamEvent[]> {
  const events: StreamEvent[] = []
  const stream = response.body!.pipeThrough(new TextDecoderStream()).pipeThrough(new EventSourceParserStream())
  for await (const e of stream) events.push({ ...e, chunk: e.data === '[DONE]' ? '[DONE]' : JSON.parse(e.data) })
  return events
}

export const chunks = (events: StreamEvent[]) => events.map((e) => e.chunk).filter((c): c is Record<string, any> => c !== '[DONE]')
export const textOf = (events: StreamEvent[]) =>
  chunks(events)
    .filter((c) => c.type === 'text-delta')
    .map((c) => c.delta)
    .join('')

/** One whole answer read in pieces (first connection, then resumes): seqs 1..n, no gap or repeat, all of `text`, then [DONE]. */
export function expectWholeAnswer(events: StreamEvent[], text: string) {
  expect(events.map((e) => Number(e.id!.split(':')[1]))).toEqual(events.map((_, i) => i + 1))
  expect(textOf(events)).toBe(text)
  expect(events.at(-1)!.chunk).toBe('[DONE]')
}

/** Reads events until `count` have arrived, then drops the connection. */
export async function readSome(response: Response, count: number, abort: AbortController): Promise<StreamEvent[]> {
  const events: StreamEvent[] = []
  const reader = response.body!.pipeThrough(new TextDecoderStream()).pipeThrough(new EventSourceParserStream()).getReader()
  while (events.length < count) {
    const { value, done } = await reader.read()
    if (done) break
    events.push({ ...value, chunk: value.data === '[DONE]' ? '[DONE]' : JSON.parse(value.data) })
  }
  abort.abort()
  await reader.cancel().catch(() => {})
  return events
}

/** Until `check` passes or ~5 s went by. */
export async function eventually(check: () => boolean | Promise<boolean>, what = 'condition') {
  for (let i = 0; i < 250; i++) {
    if (await check()) return
    await Bun.sleep(20)
  }
  throw new Error(`timed out waiting for ${what}`)
}

class PlainChatState<M extends UIMessage> implements ChatState<M> {
  status: ChatState<M>['status'] = 'ready'
  error: Error | undefined
  constructor(public messages: M[] = []) {}
  pushMessage = (message: M) => {
    this.messages = [...this.messages, message]
  }
  popMessage = () => {
    this.messages = this.messages.slice(0, -1)
  }
  replaceMessage = (index: number, message: M) => {
    this.messages = [...this.messages.slice(0, index), message, ...this.messages.slice(index + 1)]
  }
  snapshot = <T>(thing: T): T => structuredClone(thing)
}

/** The AI SDK's own chat machinery (what `useChat` runs), without a UI framework. */
export class SdkChat<M extends UIMessage = UIMessage> extends AbstractChat<M> {
  constructor(init: Omit<ChatInit<M>, 'transport'> & { api: string; headers: Record<string, string> }) {
    const { api, headers, messages, ...rest } = init
    super({ ...rest, transport: new DefaultChatTransport<M>({ api, headers }), state: new PlainChatState<M>(messages) })
  }
}
