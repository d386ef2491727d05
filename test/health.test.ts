import { afterAll, describe, expect, test } from 'bun:test'
import { announceSkip, makeApp, redisUrl } from './helpers.ts'

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

describe('readiness with Redis configured', async () => {
  const t = await makeApp({ REDIS_URL: 'redis://127.0.0.1:1' })
  afterAll(() => t.close())

  test('GET /ready names Redis when it cannot be reached', async () => {
    const res = await t.request('/ready')
    expect(res.status).toBe(503)
    const body = await res.json()
    expect(body.checks.database).toBe('ok')
    expect(body.checks.redis).not.toBe('ok')
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
