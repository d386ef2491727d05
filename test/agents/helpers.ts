/**
 * The service listening on 127.0.0.1 with a fake model provider, and a WebSocket client that keeps every
 * message it receives and checks each against the protocol's published schema.
 */
import { expect } from 'bun:test'
import { TypeCompiler } from 'elysia/type-system'
import { SERVER_MESSAGES } from '../../plugins/agents/schemas.ts'
import { startFakeOpenAi, type CompletionScript, type FakeOpenAi } from '../fakes/openai.ts'
import { makeApp, userWithRole, type TestApp } from '../helpers.ts'

export type AgentMessage = Record<string, any> & { type: string }

const serverChecks = Object.fromEntries(Object.entries(SERVER_MESSAGES).map(([type, schema]) => [type, TypeCompiler.Compile(schema)]))

export interface AgentClient {
  socket: WebSocket
  received: AgentMessage[]
  send(message: unknown): void
  sendRaw(frame: string | Uint8Array): void
  /** The first received message (already or later) matching `match`, waiting up to `timeoutMs`. */
  next(match: (message: AgentMessage) => boolean, timeoutMs?: number): Promise<AgentMessage>
  /** Messages about one task, in the order received. */
  taskMessages(taskId: string): AgentMessage[]
  closed: Promise<{ code: number; reason: string }>
  close(): void
}

export async function connectAgent(url: string, token: string, options: { protocols?: string[] } = {}): Promise<AgentClient> {
  const socket = options.protocols
    ? new WebSocket(url, options.protocols)
    : new WebSocket(url, { headers: { authorization: `Bearer ${token}` } } as unknown as string[])
  const received: AgentMessage[] = []
  const waiters: { match: (m: AgentMessage) => boolean; resolve: (m: AgentMessage) => void }[] = []
  socket.onmessage = (event) => {
    const message = JSON.parse(String(event.data)) as AgentMessage
    const check = serverChecks[message.type]
    if (!check?.Check(message)) throw new Error(`server message outside the protocol schema: ${String(event.data)}`)
    received.push(message)
    for (let i = waiters.length - 1; i >= 0; i--)
      if (waiters[i]!.match(message)) {
        waiters[i]!.resolve(message)
        waiters.splice(i, 1)
      }
  }
  const closed = new Promise<{ code: number; reason: string }>((resolve) => {
    socket.onclose = (event) => resolve({ code: event.code, reason: event.reason })
  })
  await new Promise<void>((resolve, reject) => {
    socket.onopen = () => resolve()
    socket.onerror = () => reject(new Error('WebSocket connection failed'))
  })
  return {
    socket,
    received,
    send: (message) => socket.send(JSON.stringify(message)),
    sendRaw: (frame) => socket.send(frame),
    next(match, timeoutMs = 10_000) {
      const found = received.find(match)
      if (found) return Promise.resolve(found)
      return new Promise((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`no matching message within ${timeoutMs} ms; received ${JSON.stringify(received.slice(-5))}`)),
          timeoutMs,
        )
        waiters.push({
          match,
          resolve: (m) => {
            clearTimeout(timer)
            resolve(m)
          },
        })
      })
    },
    taskMessages: (taskId) => received.filter((m) => m.taskId === taskId && typeof m.seq === 'number'),
    closed,
    close: () => socket.close(),
  }
}

/** A scripted model turn that calls one tool. */
export const call = (name: string, args: Record<string, unknown>): CompletionScript => ({
  toolCalls: [{ name, arguments: JSON.stringify(args) }],
  finishReason: 'tool_calls',
})

/** A task's final message: its result, or an error carrying a status. */
export const isFinal = (taskId: string) => (m: AgentMessage) => m.taskId === taskId && (m.type === 'result' || (m.type === 'error' && m.status !== undefined))

/** Seqs of a task's messages form 1..n without gaps or repeats. */
export function expectContiguous(messages: AgentMessage[], from = 1) {
  expect(messages.map((m) => m.seq)).toEqual(messages.map((_, i) => from + i))
}

export interface AgentHarness {
  t: TestApp
  model: FakeOpenAi
  url: string
  wsUrl: string
  token: string
  user: { id: string; orgId: string }
  connect(token?: string, options?: { protocols?: string[] }): Promise<AgentClient>
  /** Sends a command and answers its task id from the ack. */
  run(client: AgentClient, command: string, params?: Record<string, unknown>): Promise<string>
  close(): Promise<void>
}

export async function agentHarness(env: Record<string, string> = {}): Promise<AgentHarness> {
  const model = startFakeOpenAi()
  const t = await makeApp({
    OPENAI_BASE_URL: model.baseUrl,
    CHAT_MODEL: 'fake-model',
    RATE_LIMIT_CHAT_PER_MINUTE: '100000',
    RATE_LIMIT_BURST: '100000',
    ...env,
  })
  t.app.listen({ hostname: '127.0.0.1', port: 0 })
  const port = t.app.server!.port
  const member = await userWithRole(t, 'member')
  let counter = 0
  const harness: AgentHarness = {
    t,
    model,
    url: `http://127.0.0.1:${port}`,
    wsUrl: `ws://127.0.0.1:${port}/ws/agent`,
    token: member.token,
    user: { id: member.user.id, orgId: member.user.orgId },
    connect: (token = member.token, options = {}) => connectAgent(harness.wsUrl, token, options),
    async run(client, command, params) {
      const id = `c${++counter}`
      client.send({ type: 'agent_command', id, command, ...(params ? { params } : {}) })
      const reply = await client.next((m) => m.id === id && (m.type === 'ack' || m.type === 'error'))
      if (reply.type !== 'ack') throw new Error(`command refused: ${JSON.stringify(reply)}`)
      return reply.taskId
    },
    async close() {
      await t.app.stop(true)
      await t.close()
      await model.close()
    },
  }
  return harness
}

/** Imports `url` for the harness's user and waits until it succeeded; answers the import. */
export async function importRepository(h: AgentHarness, url: string): Promise<{ id: string; commit: string }> {
  const { imports } = h.t.deps
  const started = await imports.start({ orgId: h.user.orgId, userId: h.user.id }, { repository: url })
  await imports.settled(started.id)
  const done = await imports.get(h.user.orgId, started.id)
  expect(done?.status).toBe('succeeded')
  return { id: started.id, commit: done!.commit! }
}
