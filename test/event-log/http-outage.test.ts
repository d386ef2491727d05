/**
 * Through the app: while Redis is down, a chat request, a resume and an agent command are refused at once with
 * 503 `unavailable` and a Retry-After (never left waiting), /ready says 503 while /health stays 200; once Redis is
 * back, chat works again without a restart.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { chatHarness, readEvents, textOf, type ChatHarness } from '../chat/helpers.ts'
import { recovery, redisServerInstalled, startPrivateRedis, type PrivateRedis } from './private-redis.ts'

if (!redisServerInstalled) console.warn('[skip] the service during a Redis outage: redis-server is not installed at /usr/bin/redis-server')

describe.skipIf(!redisServerInstalled)('the service during a Redis outage', () => {
  let server: PrivateRedis
  let h: ChatHarness
  beforeAll(async () => {
    server = await startPrivateRedis()
    h = await chatHarness({ REDIS_URL: server.url, REDIS_RECONNECT_MAX_DELAY_MS: '500' }, { search: false })
  })
  afterAll(async () => {
    await h.close()
    await server.stop()
  })

  const ask = async (chatId: string) => {
    h.model.queue = [{ text: ['still ', 'here'] }]
    const response = await h.post({ id: chatId, messages: [{ role: 'user', content: 'hello' }] })
    if (response.status !== 200) throw new Error(`POST /api/chat answered ${response.status}`)
    return textOf(await readEvents(response))
  }

  test('answers 503 unavailable with Retry-After during it, and chats again after it', async () => {
    expect(await ask('outage-before')).toBe('still here')
    await server.kill()

    const timings: Record<string, number> = {}
    const timed = async <T>(name: string, work: () => Promise<T>) => {
      const started = performance.now()
      const result = await work()
      timings[name] = Math.round(performance.now() - started)
      return result
    }
    const refused = await timed('POST /api/chat', () => h.post({ id: 'outage-during', messages: [{ role: 'user', content: 'hello' }] }))
    expect(refused.status).toBe(503)
    expect(refused.headers.get('content-type')).toStartWith('application/problem+json')
    expect(refused.headers.get('retry-after')).toMatch(/^\d+$/)
    expect(await refused.json()).toMatchObject({ code: 'unavailable', status: 503 })

    const resume = await timed('GET /api/chat/:id/stream', () => fetch(`${h.url}/api/chat/outage-before/stream`, { headers: h.headers }))
    expect(resume.status).toBe(503)
    expect(resume.headers.get('retry-after')).toMatch(/^\d+$/)

    const taskId = h.t.deps.agents.start({ userId: 'outage-user', orgId: 'outage-org' }, 'status', {})
    const agentError = await timed('agent command', () =>
      h.t.deps.agents.recorded(taskId).then(
        () => undefined,
        (err) => err,
      ),
    )
    expect(agentError).toMatchObject({ code: 'unavailable' })

    const ready = await timed('GET /ready', () => fetch(`${h.url}/ready`))
    expect(ready.status).toBe(503)
    expect((await ready.json()).checks.redis).not.toBe('ok')
    expect((await fetch(`${h.url}/health`)).status).toBe(200)

    await server.start()
    const recoveredMs = await recovery(() => ask('outage-after').then((text) => expect(text).toBe('still here')), 5000, 'POST /api/chat')
    expect((await fetch(`${h.url}/ready`)).status).toBe(200)
    // The refused request left nothing behind: no chat was created for it.
    expect((await fetch(`${h.url}/api/chat/outage-during`, { headers: h.headers })).status).toBe(404)
    console.log(`during the outage (ms): ${JSON.stringify(timings)}; chat worked again ${Math.round(recoveredMs)} ms after Redis restarted`)
  }, 120_000)
})
