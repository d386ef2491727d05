import { afterAll, expect, test } from 'bun:test'
import { bearer, makeApp, userWithRole } from '../helpers.ts'

// A search budget of 3 per minute, so the limit is reached in a few requests.
const t = await makeApp({ RATE_LIMIT_SEARCH_PER_MINUTE: '3' })
afterAll(() => t.close())

// In-process requests carry no Host of their own; /mcp needs one it accepts.
const host = new URL(t.config.publicBaseUrl).host
const ping = (headers: Record<string, string> = {}) =>
  t.send('POST', '/mcp', { jsonrpc: '2.0', id: 1, method: 'ping' }, { host, accept: 'application/json, text/event-stream', ...headers })

test('anonymous callers spend the search budget per client address; signed-in users their own', async () => {
  const anonymous = await Promise.all(Array.from({ length: 4 }, () => ping()))
  expect(anonymous.map((r) => r.status).sort()).toEqual([200, 200, 200, 429])
  const refused = anonymous.find((r) => r.status === 429)!
  expect(await refused.json()).toMatchObject({ code: 'rate_limited', policy: 'search' })
  expect(refused.headers.get('retry-after')).toBeTruthy()

  const member = await userWithRole(t, 'member')
  const signedIn = await Promise.all(Array.from({ length: 4 }, () => ping(bearer(member.token))))
  expect(signedIn.map((r) => r.status).sort()).toEqual([200, 200, 200, 429])
  expect(await signedIn.find((r) => r.status === 200)!.json()).toEqual({ jsonrpc: '2.0', id: 1, result: {} })
})

test('enterprise organisations have no search budget here either', async () => {
  const org = await t.deps.accounts.createOrganization('Enterprise Co', 'enterprise')
  const big = await userWithRole(t, 'member', { orgId: org.id })
  const responses = await Promise.all(Array.from({ length: 6 }, () => ping(bearer(big.token))))
  expect(responses.map((r) => r.status)).toEqual(Array(6).fill(200))
})

test('a bad token is 401, never counted as an anonymous request', async () => {
  const res = await ping(bearer('not-a-token'))
  expect(res.status).toBe(401)
})
