/**
 * Cross-site WebSocket hijacking: a browser page may open /ws/agent only from an origin in CORS_ORIGINS, the
 * service's own (PUBLIC_BASE_URL, or the host it connects to), or no Origin at all (not a browser).
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { agentHarness, type AgentHarness } from './helpers.ts'
import { eventually } from '../chat/helpers.ts'

const APP = 'http://app.example.test:5173'
const PUBLIC = 'https://api.example.test'
const KEY = 'dGhlIHNhbXBsZSBub25jZQ=='

let h: AgentHarness
beforeAll(async () => {
  h = await agentHarness({ CORS_ORIGINS: APP, PUBLIC_BASE_URL: PUBLIC })
})
afterAll(() => h.close())

const upgrade = (origin: string | undefined, token: string | undefined = h.token) =>
  fetch(`${h.url}/ws/agent`, {
    headers: {
      upgrade: 'websocket',
      connection: 'Upgrade',
      'sec-websocket-key': KEY,
      'sec-websocket-version': '13',
      ...(origin ? { origin } : {}),
      ...(token ? { authorization: `Bearer ${token}` } : {}),
    },
    signal: AbortSignal.timeout(5000),
  })

/** Opens a socket sending `origin`, answers whether it opened, and closes it. */
async function opens(origin: string | undefined): Promise<boolean> {
  const headers: Record<string, string> = { authorization: `Bearer ${h.token}`, ...(origin ? { origin } : {}) }
  const socket = new WebSocket(h.wsUrl, { headers } as unknown as string[])
  const opened = await new Promise<boolean>((resolve) => {
    socket.onopen = () => resolve(true)
    socket.onerror = () => resolve(false)
  })
  socket.close()
  return opened
}

test('a page on an origin not listed is refused 403 before the upgrade, before its token is looked at', async () => {
  for (const token of [h.token, undefined]) {
    const response = await upgrade('https://elsewhere.example.test', token)
    expect(response.status).toBe(403)
    expect(response.headers.get('content-type')).toBe('application/problem+json')
    const problem = await response.json()
    expect(problem.code).toBe('forbidden')
    expect(problem.detail).toContain('https://elsewhere.example.test')
    expect(problem.detail).toContain('CORS_ORIGINS')
  }
  for (const origin of ['null', 'http://api.example.test', `${APP.replace('5173', '5174')}`]) expect((await upgrade(origin)).status).toBe(403)
  await eventually(() => h.t.deps.agentConnections.slotsHeld(h.user.id) === 0, 'no slot held by a refusal')
})

test("a listed origin, the service's own, its host, and a client sending no Origin all connect", async () => {
  const port = new URL(h.url).port
  expect(await opens(APP)).toBe(true)
  expect(await opens(PUBLIC)).toBe(true)
  expect(await opens(`http://127.0.0.1:${port}`)).toBe(true)
  expect(await opens(undefined)).toBe(true)
  expect(await opens('https://elsewhere.example.test')).toBe(false)
})
