import { expect, test } from 'bun:test'
import { bearerFrom } from '../../src/auth/bearer.ts'

test('the Authorization header carries a bearer token', () => {
  expect(bearerFrom(new Headers({ authorization: 'Bearer abc.def.ghi' }))).toEqual({ token: 'abc.def.ghi' })
  expect(bearerFrom(new Headers({ authorization: 'bearer abc' }))).toEqual({ token: 'abc' })
  expect(bearerFrom(new Headers({ authorization: 'Basic dXNlcjpwYXNz' }))).toBeUndefined()
  expect(bearerFrom(new Headers({ authorization: 'Bearer a b' }))).toBeUndefined()
})

test('browsers offer the token as a WebSocket subprotocol after "bearer"', () => {
  expect(bearerFrom(new Headers({ 'sec-websocket-protocol': 'bearer, abc.def.ghi' }))).toEqual({ token: 'abc.def.ghi', subprotocol: 'bearer' })
  expect(bearerFrom(new Headers({ 'sec-websocket-protocol': 'chat, v2' }))).toBeUndefined()
  expect(bearerFrom(new Headers({ 'sec-websocket-protocol': 'bearer' }))).toBeUndefined()
})

test('the Authorization header wins over a subprotocol', () => {
  expect(bearerFrom(new Headers({ authorization: 'Bearer header-token', 'sec-websocket-protocol': 'bearer, proto-token' }))?.token).toBe('header-token')
})

test('the shared verification accepts a subprotocol token, for the WebSocket upgrade', async () => {
  const { makeApp, ADMIN, login } = await import('../helpers.ts')
  const { authenticateRequest } = await import('../../src/auth/plugin.ts')
  const t = await makeApp({ ADMIN_EMAIL: ADMIN.email, ADMIN_PASSWORD: ADMIN.password })
  try {
    const { accessToken, user } = await login(t, ADMIN.email, ADMIN.password)
    const upgrade = new Request('http://localhost/ws/agent', { headers: { 'sec-websocket-protocol': `bearer, ${accessToken}` } })
    expect((await authenticateRequest(t.deps.access, upgrade)).userId).toBe(user.id)
    const forged = new Request('http://localhost/ws/agent', { headers: { 'sec-websocket-protocol': `bearer, ${accessToken}x` } })
    await expect(authenticateRequest(t.deps.access, forged)).rejects.toMatchObject({ code: 'invalid_token' })
  } finally {
    await t.close()
  }
})
