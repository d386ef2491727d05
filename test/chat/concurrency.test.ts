import { expect, test } from 'bun:test'
import { createApp } from '../../src/main/app.ts'
import { loadConfig } from '../../src/main/config.ts'
import { buildDependencies } from '../../src/main/dependencies.ts'
import { memoryLogger } from '../../src/log.ts'
import { startFakeOpenAi } from '../fakes/openai.ts'
import { ADMIN, tempDir } from '../helpers.ts'
import { chatHarness, readEvents, textOf } from './helpers.ts'

test('100 concurrent chats each get their own complete answer', async () => {
  const h = await chatHarness({}, { search: false })
  h.model.fallback = (body) => {
    const question = body.messages.at(-1).content as string
    return { text: Array.from({ length: 20 }, (_, i) => `${question}-${i} `), delayMs: 2 }
  }
  const answers = await Promise.all(
    Array.from({ length: 100 }, async (_, i) => {
      const events = await readEvents(await h.post({ id: `many-${i}`, messages: [{ role: 'user', content: `q${i}` }] }))
      return textOf(events)
    }),
  )
  for (const [i, text] of answers.entries()) expect(text).toBe(Array.from({ length: 20 }, (_, k) => `q${i}-${k} `).join(''))
  const list = await fetch(`${h.url}/api/chats?limit=100`, { headers: h.headers }).then((r) => r.json())
  expect(list.chats).toHaveLength(100)
  expect(h.t.deps.chat.runningCount).toBe(0)
  await h.close()
}, 120_000)

test('a conversation survives a restart of the service', async () => {
  const dir = tempDir()
  const model = startFakeOpenAi()
  model.queue = [{ text: 'before restart' }, { text: 'after restart' }]
  const env = { DATA_DIR: dir.path, ADMIN_EMAIL: ADMIN.email, ADMIN_PASSWORD: ADMIN.password, OPENAI_BASE_URL: model.baseUrl }
  const start = async () => {
    const deps = await buildDependencies(loadConfig(env), { logger: memoryLogger('error') })
    const app = createApp(deps)
    const { accessToken } = await app
      .handle(new Request('http://localhost/auth/login', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(ADMIN) }))
      .then((r) => r.json())
    const chat = (content: string) =>
      app
        .handle(
          new Request('http://localhost/api/chat', {
            method: 'POST',
            headers: { 'content-type': 'application/json', authorization: `Bearer ${accessToken}` },
            body: JSON.stringify({ id: 'durable-1', messages: [{ role: 'user', content }] }),
          }),
        )
        .then(readEvents)
    return { deps, chat }
  }
  const first = await start()
  expect(textOf(await first.chat('one'))).toBe('before restart')
  await first.deps.close()
  const second = await start()
  expect(textOf(await second.chat('two'))).toBe('after restart')
  const sent = model.completions
    .at(-1)!
    .messages.filter((m: any) => m.role !== 'system')
    .map((m: any) => m.content)
  expect(sent).toEqual(['one', 'before restart', 'two'])
  await second.deps.close()
  await model.close()
  dir.remove()
})
