import { afterAll, describe, expect, test } from 'bun:test'
import { makeApp } from './helpers.ts'

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
