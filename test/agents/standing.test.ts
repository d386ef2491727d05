/**
 * An agent connection lives only while its user has the right to it: a logout, an expired token, a role without
 * agents:run or a removed user closes it (4401 or 4403, with a reason; the hub looks every 500 ms, and reads the
 * users every second), and a command sent meanwhile is not handled.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createAccessTokens } from '../../src/auth/access-tokens.ts'
import { userWithRole } from '../helpers.ts'
import { agentHarness, type AgentHarness } from './helpers.ts'

describe('an open agent connection whose user loses the right to it', () => {
  let h: AgentHarness
  beforeAll(async () => {
    h = await agentHarness()
  })
  afterAll(() => h.close())

  const post = (path: string, body: unknown) =>
    fetch(`${h.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })

  test('a logout closes it with 4401, and a command sent after the logout is refused', async () => {
    const member = await userWithRole(h.t, 'member')
    const client = await h.connect(member.token)
    const other = await userWithRole(h.t, 'member')
    const bystander = await h.connect(other.token)
    expect((await post('/auth/logout', { refreshToken: member.refreshToken })).status).toBe(204)
    client.send({ type: 'agent_command', id: 'late', command: 'status' })
    const closed = await client.closed
    expect(closed).toEqual({ code: 4401, reason: expect.stringContaining('signed out') })
    expect(client.received.some((m) => m.type === 'ack')).toBe(false)
    expect(client.received).toContainEqual(expect.objectContaining({ type: 'error', code: 'invalid_token' }))
    // Another user's connection is not touched.
    bystander.send({ type: 'ping', id: 'p' })
    expect(await bystander.next((m) => m.type === 'pong')).toMatchObject({ id: 'p' })
    bystander.close()
  })

  test('a role without agents:run closes it with 4403; a removed user with 4401', async () => {
    const member = await userWithRole(h.t, 'member')
    const client = await h.connect(member.token)
    expect(await h.t.deps.accounts.setRole(member.user.id, 'viewer')).toBe(true)
    expect(await client.closed).toEqual({ code: 4403, reason: 'the viewer role does not allow agents:run' })

    const doomed = await userWithRole(h.t, 'member')
    const second = await h.connect(doomed.token)
    await h.t.deps.db.sql`DELETE FROM refresh_tokens WHERE user_id = ${doomed.user.id}`
    await h.t.deps.db.sql`DELETE FROM users WHERE id = ${doomed.user.id}`
    expect(await second.closed).toEqual({ code: 4401, reason: 'the user was removed' })
  })

  test('the token it was opened with expiring closes it with 4401', async () => {
    const member = await userWithRole(h.t, 'member')
    const { config } = h.t.deps
    // A token of the service's own, signed as it signs them, that lives two seconds.
    const shortLived = createAccessTokens({ secret: config.secrets.jwtSecret, issuer: config.tokens.issuer, audience: config.tokens.audience, ttlSeconds: 2 })
    const { token } = await shortLived.issue({
      userId: member.user.id,
      orgId: member.user.orgId,
      role: 'member',
      scopes: ['agents:run'],
      sessionId: crypto.randomUUID(),
    })
    const client = await h.connect(token)
    expect(await client.closed).toEqual({ code: 4401, reason: 'token expired: connect again with a fresh token' })
  })
})

describe('an open agent connection whose account is deleted through the API', () => {
  let h: AgentHarness
  beforeAll(async () => {
    h = await agentHarness()
  })
  afterAll(() => h.close())

  test("deleting one's own account, or an owner deleting a member, closes the user's open connections with 4401", async () => {
    const owner = await userWithRole(h.t, 'owner')
    const member = await userWithRole(h.t, 'member', { orgId: owner.user.orgId })
    const self = await userWithRole(h.t, 'member', { orgId: owner.user.orgId })
    const memberClient = await h.connect(member.token)
    const selfClient = await h.connect(self.token)
    const ownerClient = await h.connect(owner.token)
    const remove = (userId: string, token: string) => fetch(`${h.url}/api/users/${userId}`, { method: 'DELETE', headers: { authorization: `Bearer ${token}` } })

    expect((await remove(member.user.id, owner.token)).status).toBe(200)
    // Signed out first (the session check), before the user row goes.
    expect(await memberClient.closed).toEqual({ code: 4401, reason: expect.stringMatching(/signed out|the user was removed/) })
    expect((await remove(self.user.id, self.token)).status).toBe(200)
    expect(await selfClient.closed).toEqual({ code: 4401, reason: expect.stringMatching(/signed out|the user was removed/) })
    // The owner's own connection stays open.
    ownerClient.send({ type: 'ping', id: 'still-here' })
    expect(await ownerClient.next((m) => m.type === 'pong')).toMatchObject({ id: 'still-here' })
    ownerClient.close()
  })
})

describe('an open agent connection opened with a personal API key', () => {
  let h: AgentHarness
  beforeAll(async () => {
    h = await agentHarness()
  })
  afterAll(() => h.close())

  test('revoking the key closes the connections opened with it (4401); one opened with a session token stays', async () => {
    const member = await userWithRole(h.t, 'member')
    const created = await fetch(`${h.url}/api/keys`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${member.token}` },
      body: JSON.stringify({ name: 'agent script', scopes: ['agents:run'] }),
    })
    expect(created.status).toBe(201)
    const { id, key } = (await created.json()) as { id: string; key: string }
    const withKey = await h.connect(key)
    const withSession = await h.connect(member.token)
    withKey.send({ type: 'ping', id: 'k' })
    expect(await withKey.next((m) => m.type === 'pong')).toMatchObject({ id: 'k' })

    const revoked = await fetch(`${h.url}/api/keys/${id}`, { method: 'DELETE', headers: { authorization: `Bearer ${member.token}` } })
    expect(revoked.status).toBe(204)
    expect(await withKey.closed).toEqual({ code: 4401, reason: expect.stringContaining('signed out') })
    withSession.send({ type: 'ping', id: 's' })
    expect(await withSession.next((m) => m.type === 'pong')).toMatchObject({ id: 's' })
    withSession.close()
  })
})
