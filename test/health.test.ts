import { afterAll, describe, expect, test } from 'bun:test'
import { announceSkip, makeApp, redisUrl } from './helpers.ts'

/** A port nothing listens on, from the kernel. */
async function freePort(): Promise<number> {
  const listener = Bun.listen({ hostname: '127.0.0.1', port: 0, socket: { data() {} } })
  const port = listener.port
  listener.stop(true)
  return port
}

/** The app once the Redis at `url` answers (a fresh redis-server takes a moment to listen). */
async function startedWith(url: string) {
  for (let attempt = 0; ; attempt++) {
    try {
      return await makeApp({ REDIS_URL: url })
    } catch (err) {
      if (attempt >= 50) throw err
      await Bun.sleep(100)
    }
  }
}

describe('health and readiness', async () => {
  const t = await makeApp()
  afterAll(() => t.close())

  test('GET /health answers ok', async () => {
    const res = await t.request('/health')
    expect(res.status).toBe(200)
    expect(await res.json()).toMatchObject({ status: 'ok' })
  })

  test('GET /ready checks storage', async () => {
    const res = await t.request('/ready')
    expect(res.status).toBe(200)
    expect(await res.json()).toEqual({ status: 'ready', checks: { database: 'ok' } })
  })

  test('GET /ready fails while draining so load balancers move away', async () => {
    t.deps.lifecycle.draining = true
    const res = await t.request('/ready')
    t.deps.lifecycle.draining = false
    expect(res.status).toBe(503)
    expect((await res.json()).checks.lifecycle).toBe('draining')
  })
})

describe('readiness with storage gone', async () => {
  const t = await makeApp()
  afterAll(() => t.close())

  test('GET /ready is 503 naming the database when it cannot answer', async () => {
    await t.deps.db.close()
    const res = await t.request('/ready')
    expect(res.status).toBe(503)
    const body = await res.json()
    expect(body.status).toBe('not_ready')
    expect(body.checks.database).not.toBe('ok')
  })
})

describe('readiness with Redis configured', () => {
  // A Redis of its own that stops after start-up (a Redis unreachable at start-up stops the start, exit 78).
  const server = Bun.which('redis-server')
  test('GET /ready names Redis when it cannot be reached', async () => {
    if (!server) return announceSkip('readiness when Redis goes away', 'redis-server on PATH')
    const port = await freePort()
    const redis = Bun.spawn([server, '--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdout: 'ignore', stderr: 'ignore' })
    try {
      const t = await startedWith(`redis://127.0.0.1:${port}`)
      try {
        expect((await t.request('/ready')).status).toBe(200)
        redis.kill()
        await redis.exited
        const res = await t.request('/ready')
        expect(res.status).toBe(503)
        const body = await res.json()
        expect(body.checks.database).toBe('ok')
        expect(body.checks.redis).not.toBe('ok')
      } finally {
        await t.close()
      }
    } finally {
      redis.kill()
    }
  })
})

describe('readiness with a live Redis', async () => {
  if (!redisUrl) return announceSkip('readiness against a live Redis', 'REDIS_URL')
  const t = await makeApp({ REDIS_URL: redisUrl })
  afterAll(() => t.close())

  test('GET /ready is ok with database and Redis answering', async () => {
    const res = await t.request('/ready')
    expect(await res.json()).toEqual({ status: 'ready', checks: { database: 'ok', redis: 'ok' } })
  })
})
