/**
 * While the process drains (after SIGTERM), new long work is refused with 503 `unavailable` and Retry-After, so a
 * proxy sends it to another process: a chat turn, an enhanced chat turn, an import, an agent connection and an
 * agent command (whose socket is then closed with 1001, so its client reconnects elsewhere). Other requests go on
 * as usual.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createApp } from '../src/main/app.ts'
import { loadConfig } from '../src/main/config.ts'
import { buildDependencies, type Dependencies } from '../src/main/dependencies.ts'
import { memoryLogger } from '../src/log.ts'
import { startServer, type RunningServer } from '../src/main/server.ts'
import { connectAgent } from './agents/helpers.ts'
import { startFakeOpenAi, type FakeOpenAi } from './fakes/openai.ts'
import { tempDir } from './helpers.ts'

const ADMIN = { email: 'owner@drain.example', password: 'drain-owner-password-1234' }

describe('a draining process', () => {
  const dir = tempDir()
  let model: FakeOpenAi
  let deps: Dependencies
  let running: RunningServer
  let url: string
  let headers: Record<string, string>

  beforeAll(async () => {
    model = startFakeOpenAi()
    const config = loadConfig({
      DATA_DIR: dir.path,
      ADMIN_EMAIL: ADMIN.email,
      ADMIN_PASSWORD: ADMIN.password,
      OPENAI_BASE_URL: model.baseUrl,
      CHAT_MODEL: 'fake-model',
      CHAT_SEARCH_AUGMENTATION: 'off',
      IMPORT_CODEHOST_URL: 'http://127.0.0.1:9',
    })
    deps = await buildDependencies(config, { logger: memoryLogger('error'), sqliteFile: ':memory:' })
    running = startServer(createApp(deps), deps, { port: 0, hostname: '127.0.0.1' })
    url = running.url
    const login = await fetch(`${url}/auth/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(ADMIN) })
    headers = { authorization: `Bearer ${((await login.json()) as { accessToken: string }).accessToken}`, 'content-type': 'application/json' }
  })
  afterAll(async () => {
    running.server.stop(true)
    await deps.close()
    await model.close()
    dir.remove()
  })

  const post = (path: string, body: unknown) => fetch(`${url}${path}`, { method: 'POST', headers, body: JSON.stringify(body) })
  const expectRefused = async (response: Response, what: string) => {
    expect(response.status).toBe(503)
    expect(response.headers.get('retry-after')).toBe('1')
    const problem = (await response.json()) as { code: string; detail: string }
    expect(problem.code).toBe('unavailable')
    expect(problem.detail).toContain(what)
  }

  test('refuses new chat turns, enhanced chat turns, imports, agent connections and commands; serves the rest', async () => {
    const agent = await connectAgent(`${url.replace('http', 'ws')}/ws/agent`, headers.authorization!.slice(7))
    deps.lifecycle.draining = true
    try {
      const chatId = crypto.randomUUID()
      await expectRefused(await post('/api/chat', { id: chatId, messages: [{ role: 'user', content: 'hello' }] }), 'chat turns')
      await expectRefused(await post('/api/enhanced-chat', { messages: [{ role: 'user', content: 'write a function' }] }), 'chat turns')
      await expectRefused(await post('/api/codehost/import', { repository: 'acme/drained' }), 'imports')
      const upgrade = await fetch(`${url}/ws/agent`, {
        headers: {
          authorization: headers.authorization!,
          upgrade: 'websocket',
          connection: 'Upgrade',
          'sec-websocket-key': btoa('0123456789abcdef'),
          'sec-websocket-version': '13',
        },
      })
      await expectRefused(upgrade, 'agent connections')

      // A command on a socket opened before: refused, and the socket closed so the client reconnects elsewhere.
      agent.send({ type: 'agent_command', id: 'late', command: 'status', params: {} })
      expect(await agent.next((m) => m.id === 'late')).toMatchObject({ type: 'error', code: 'unavailable', retryAfterSeconds: 1 })
      expect(await agent.closed).toEqual({ code: 1001, reason: 'server shutting down; reconnect and subscribe' })
      // Nothing was left behind by the refused turn, and requests that are not new long work are served.
      expect((await fetch(`${url}/api/chat/${chatId}`, { headers })).status).toBe(404)
      expect((await fetch(`${url}/api/chats`, { headers })).status).toBe(200)
    } finally {
      deps.lifecycle.draining = false
      agent.close()
    }
    // Not draining, the same turn goes through.
    const accepted = await post('/api/chat', { messages: [{ role: 'user', content: 'hello' }] })
    expect(accepted.status).toBe(200)
    await accepted.text()
  })
})
