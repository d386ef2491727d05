import { afterAll, describe, expect, test } from 'bun:test'
import { bearer, redisUrl } from '../helpers.ts'
import { integrationApp, PUBLIC_BASE_URL, pathOf, quickUser, startProvider } from './support.ts'

const fake = startProvider()
afterAll(() => fake.close())

// The in-process limiter always; the Redis one as well when REDIS_URL is set.
const limiters: [string, Record<string, string>][] = [
  ['memory', {}],
  ...(redisUrl ? [['redis', { REDIS_URL: redisUrl }] as [string, Record<string, string>]] : []),
]

describe.each(limiters)('integrations rate limit (%s limiter)', (_name, env) => {
  test('the 51st integrations request within a minute is 429 with Retry-After, across all integrations routes', async () => {
    const t = await integrationApp(fake, 'sqlite', env)
    try {
      const { token } = await quickUser(t)
      const paths = ['/api/integrations', '/api/integrations/github/status', '/api/integrations/supabase/status']
      // All fifty at once: the budget earns one request back every 1.2 s, so fifty sent one after another on a
      // loaded machine (each a Redis round trip) could earn the 51st before it is sent.
      const answers = await Promise.all(Array.from({ length: 50 }, (_, i) => t.request(paths[i % paths.length]!, { headers: bearer(token) })))
      expect(answers.map((r) => r.status)).toEqual(Array(50).fill(200))
      const refused = await t.send('POST', '/api/integrations/github/auth', {}, bearer(token))
      expect(refused.status).toBe(429)
      expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0)
      expect(await refused.json()).toMatchObject({ code: 'rate_limited', policy: 'integrations' })
      // The budget is per user: someone else is not affected.
      const { token: otherToken } = await quickUser(t)
      expect((await t.request('/api/integrations', { headers: bearer(otherToken) })).status).toBe(200)
    } finally {
      await t.close()
    }
  })
})

test('the callback, which has no bearer token, is limited per client address', async () => {
  const t = await integrationApp(fake, 'sqlite')
  try {
    const statuses: number[] = []
    for (let i = 0; i < 51; i++) statuses.push((await t.request(pathOf(`${PUBLIC_BASE_URL}/api/integrations/github/callback?state=s${i}&code=c`))).status)
    expect(statuses.slice(0, 50)).toEqual(Array(50).fill(303))
    expect(statuses[50]).toBe(429)
  } finally {
    await t.close()
  }
})
