import { afterAll, describe, expect, test } from 'bun:test'
import { Elysia } from 'elysia'
import { accessControl } from '../../src/auth/plugin.ts'
import { createRedisRateLimiter } from '../../src/rate-limit/redis.ts'
import { rateLimiting } from '../../src/rate-limit/plugin.ts'
import { policiesFromConfig } from '../../src/rate-limit/plugin.ts'
import { announceSkip, bearer, makeApp, redisUrl, userWithRole, type TestApp } from '../helpers.ts'

/** Mounts routes guarded the way the domain plugins guard theirs. */
function mountGuardedRoutes(t: TestApp) {
  const options = {
    limiter: t.deps.limiter,
    access: t.deps.access,
    plans: t.deps.plans,
    policies: policiesFromConfig(t.config.rateLimits),
    failClosed: t.config.rateLimits.failClosed,
  }
  t.app.use(
    new Elysia()
      .use(accessControl({ access: t.deps.access, plans: t.deps.plans }))
      .use(rateLimiting(options))
      .post('/test/chat', () => ({ ok: true }), { auth: 'chat:write', rateLimit: 'chat' })
      .get('/test/integrations', () => ({ ok: true }), { auth: 'integrations:read', rateLimit: 'integrations' })
      .post('/test/search', () => ({ ok: true }), { auth: 'search:read', rateLimit: 'search' }),
  )
}

const statuses = (responses: Response[]) => {
  const count: Record<number, number> = {}
  for (const r of responses) count[r.status] = (count[r.status] ?? 0) + 1
  return count
}

describe('rate limits as the contract states them', async () => {
  const t = await makeApp()
  mountGuardedRoutes(t)
  afterAll(() => t.close())

  test('chat: exactly 100 of 150 concurrent requests pass, the rest are 429 with Retry-After', async () => {
    const { token } = await userWithRole(t, 'member')
    const responses = await Promise.all(Array.from({ length: 150 }, () => t.request('/test/chat', { method: 'POST', headers: bearer(token) })))
    expect(statuses(responses)).toEqual({ 200: 100, 429: 50 })
    const refused = responses.find((r) => r.status === 429)!
    const retryAfter = Number(refused.headers.get('retry-after'))
    // GCRA: one request's worth of budget returns every 60/100 s.
    expect(retryAfter).toBeGreaterThanOrEqual(1)
    expect(retryAfter).toBeLessThanOrEqual(2)
    const body = await refused.json()
    expect(body).toMatchObject({ code: 'rate_limited', policy: 'chat' })
    expect(refused.headers.get('ratelimit-policy')).toContain('"chat";q=100;w=60')
    expect(refused.headers.get('ratelimit')).toBe('"chat";r=0;t=60')
  })

  test('every limited response carries the RateLimit fields', async () => {
    const { token } = await userWithRole(t, 'member')
    const res = await t.request('/test/chat', { method: 'POST', headers: bearer(token) })
    expect(res.status).toBe(200)
    expect(res.headers.get('ratelimit')).toMatch(/^"chat";r=99;t=1$/)
    expect(res.headers.get('ratelimit-policy')).toBe('"burst";q=500;w=10, "chat";q=100;w=60')
  })

  test('integrations: 50 per minute, and budgets are per user', async () => {
    const a = await userWithRole(t, 'member')
    const b = await userWithRole(t, 'member')
    const first = await Promise.all(Array.from({ length: 60 }, () => t.request('/test/integrations', { headers: bearer(a.token) })))
    expect(statuses(first)).toEqual({ 200: 50, 429: 10 })
    expect((await t.request('/test/integrations', { headers: bearer(b.token) })).status).toBe(200)
  })

  test('search: 200 per minute for a free organisation, unlimited for enterprise', async () => {
    const free = await userWithRole(t, 'member')
    const freeRes = await Promise.all(Array.from({ length: 210 }, () => t.request('/test/search', { method: 'POST', headers: bearer(free.token) })))
    expect(statuses(freeRes)).toEqual({ 200: 200, 429: 10 })

    const org = await t.deps.accounts.createOrganization('Enterprise', 'enterprise')
    const big = await userWithRole(t, 'member', { orgId: org.id })
    const bigRes = await Promise.all(Array.from({ length: 300 }, () => t.request('/test/search', { method: 'POST', headers: bearer(big.token) })))
    expect(statuses(bigRes)).toEqual({ 200: 300 })
  })

  test('unauthenticated requests are 401 before any budget is spent', async () => {
    expect((await t.request('/test/chat', { method: 'POST' })).status).toBe(401)
  })
})

describe('the burst ceiling spans every endpoint', async () => {
  const t = await makeApp({ RATE_LIMIT_BURST: '30' })
  mountGuardedRoutes(t)
  afterAll(() => t.close())

  test('the 31st request within the window is refused by the burst policy whichever route it hits', async () => {
    const { token } = await userWithRole(t, 'member')
    const paths = ['/test/chat', '/test/search']
    const responses = await Promise.all(Array.from({ length: 40 }, (_, i) => t.request(paths[i % 2]!, { method: 'POST', headers: bearer(token) })))
    expect(statuses(responses)).toEqual({ 200: 30, 429: 10 })
    const refused = await responses.find((r) => r.status === 429)!.json()
    expect(refused.policy).toBe('burst')
    expect((await t.request('/auth/me', { headers: bearer(token) })).status).toBe(429)
  })
})

describe('rate limits shared through Redis', async () => {
  if (!redisUrl) {
    announceSkip('Redis-backed rate limits across two app instances', 'REDIS_URL')
    return
  }
  const prefix = `rl-test-${crypto.randomUUID()}:`
  const first = await makeApp({ JWT_SECRET: 'j'.repeat(40) })
  // Like two server processes: separate memory, one Redis; the token alone carries the identity.
  const second = await makeApp({ JWT_SECRET: 'j'.repeat(40), DATA_DIR: first.config.dataDir })
  const limiterA = createRedisRateLimiter({ url: redisUrl, keyPrefix: prefix, onStoreError: 'closed' })
  const limiterB = createRedisRateLimiter({ url: redisUrl, keyPrefix: prefix, onStoreError: 'closed' })
  Object.assign(first.deps, { limiter: limiterA })
  Object.assign(second.deps, { limiter: limiterB })
  mountGuardedRoutes(first)
  mountGuardedRoutes(second)
  afterAll(async () => {
    await limiterA.close()
    await limiterB.close()
    await first.close()
    await second.close()
  })

  test('one budget across two instances: exactly 100 of 140 chat requests pass', async () => {
    const { token } = await userWithRole(first, 'member')
    // The second instance knows nothing of the user; the token alone carries the identity.
    const responses = await Promise.all(
      Array.from({ length: 140 }, (_, i) => (i % 2 ? first : second).request('/test/chat', { method: 'POST', headers: bearer(token) })),
    )
    expect(statuses(responses)).toEqual({ 200: 100, 429: 40 })
  })
})

describe('when the limiter store is unreachable', async () => {
  const t = await makeApp({ RATE_LIMIT_FAIL_CLOSED: 'chat' })
  const unreachable = createRedisRateLimiter({ url: 'redis://127.0.0.1:1', keyPrefix: 'rl-down:', onStoreError: 'open', timeoutMs: 200 })
  Object.assign(t.deps, { limiter: unreachable })
  mountGuardedRoutes(t)
  afterAll(async () => {
    await unreachable.close()
    await t.close()
  })

  test('a fail-closed class answers 503 with Retry-After; the others are let through', async () => {
    const { token } = await userWithRole(t, 'member')
    const chat = await t.request('/test/chat', { method: 'POST', headers: bearer(token) })
    expect(chat.status).toBe(503)
    expect(chat.headers.get('retry-after')).toBeTruthy()
    expect((await chat.json()).code).toBe('unavailable')
    const search = await t.request('/test/search', { method: 'POST', headers: bearer(token) })
    expect(search.status).toBe(200)
  })
})
