/** The agent channel's connection rules: who may connect, bad messages, limits, heartbeats, the schema. */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { connect as tcpConnect } from 'node:net'
import { createAccessTokens } from '../../src/auth/access-tokens.ts'
import { userWithRole } from '../helpers.ts'
import { eventually } from '../chat/helpers.ts'
import { agentHarness, type AgentHarness } from './helpers.ts'

const handshake = (port: number, token: string) =>
  `GET /ws/agent HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n` +
  `Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\nAuthorization: Bearer ${token}\r\n\r\n`

describe('the agent channel', () => {
  let h: AgentHarness
  beforeAll(async () => {
    h = await agentHarness({ AGENT_MAX_CONNECTIONS_PER_USER: '3', AGENT_MAX_MESSAGE_BYTES: '2048', AGENT_MAX_BAD_MESSAGES: '8' })
  })
  afterAll(() => h.close())

  const upgrade = (headers: Record<string, string>) =>
    fetch(`${h.url}/ws/agent`, {
      headers: { upgrade: 'websocket', connection: 'Upgrade', 'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==', 'sec-websocket-version': '13', ...headers },
    })

  test('an upgrade without a token, with a bad token, or without agents:run is refused before the switch', async () => {
    const none = await upgrade({})
    expect(none.status).toBe(401)
    expect(await none.json()).toMatchObject({ code: 'unauthenticated' })
    const forged = await upgrade({ authorization: 'Bearer not.a.token' })
    expect(forged.status).toBe(401)
    expect(await forged.json()).toMatchObject({ code: 'invalid_token' })
    const viewer = await userWithRole(h.t, 'viewer')
    const refused = await upgrade({ authorization: `Bearer ${viewer.token}` })
    expect(refused.status).toBe(403)
    expect(await refused.json()).toMatchObject({ code: 'insufficient_scope', requiredScope: 'agents:run' })
    const plain = await fetch(`${h.url}/ws/agent`, { headers: { authorization: `Bearer ${h.token}` } })
    expect(plain.status).toBe(426)
    expect(await plain.json()).toMatchObject({ code: 'upgrade_required' })
  })

  test('an expired token is refused', async () => {
    const tokens = createAccessTokens({
      secret: h.t.config.secrets.jwtSecret,
      issuer: h.t.config.tokens.issuer,
      audience: h.t.config.tokens.audience,
      ttlSeconds: -10,
    })
    const { token } = await tokens.issue({ userId: h.user.id, orgId: h.user.orgId, role: 'member', scopes: ['agents:run'] })
    const response = await upgrade({ authorization: `Bearer ${token}` })
    expect(response.status).toBe(401)
  })

  test("a browser's token as the subprotocol pair ['bearer', token] is taken, and the protocol is echoed", async () => {
    const client = await h.connect(undefined, { protocols: ['bearer', h.token] })
    expect(client.socket.protocol).toBe('bearer')
    client.send({ type: 'ping', id: 'p' })
    expect(await client.next((m) => m.type === 'pong')).toMatchObject({ id: 'p' })
    client.close()
    await client.closed
    await eventually(() => h.t.deps.agentConnections.size === 0, 'the connection to be forgotten')
  })

  test('the per-user connection cap answers 429 too_many_connections; a closed connection frees its place', async () => {
    const open = [await h.connect(), await h.connect(), await h.connect()]
    const fourth = await upgrade({ authorization: `Bearer ${h.token}` })
    expect(fourth.status).toBe(429)
    expect(await fourth.json()).toMatchObject({ code: 'too_many_connections' })
    open[0]!.close()
    await open[0]!.closed
    await eventually(() => h.t.deps.agentConnections.size === 2, 'the closed connection to be forgotten')
    const again = await h.connect()
    for (const c of [...open.slice(1), again]) c.close()
    await Promise.all([...open.slice(1), again].map((c) => c.closed))
    await eventually(() => h.t.deps.agentConnections.size === 0, 'every connection to be forgotten')
  })

  test('bad JSON, an unknown type, a wrong field and an oversize message each get an error with a code; the connection lives on', async () => {
    const client = await h.connect()
    client.sendRaw('{"type": "ping"')
    client.send({ type: 'launch_missiles', id: 'x1' })
    client.send({ type: 'subscribe', id: 'x2', taskId: 42 })
    client.send({ type: 'agent_command', id: 'x3', command: 'debug', params: { code: 'x'.repeat(3000) } })
    client.send([1, 2])
    client.send({ type: 'agent_command', id: 'x4', command: 'deploy' })
    client.send({ type: 'ping', id: 'alive' })
    await client.next((m) => m.type === 'pong' && m.id === 'alive')
    const errors = client.received.filter((m) => m.type === 'error')
    expect(errors.map((e) => [e.code, e.id ?? null, e.field ?? null])).toEqual([
      ['invalid_json', null, null],
      ['unknown_type', 'x1', 'type'],
      ['invalid_message', 'x2', 'taskId'],
      ['message_too_large', null, null],
      ['invalid_json', null, null],
      ['unknown_command', 'x4', 'command'],
    ])
    expect(errors[5]!.commands).toEqual(['debug', 'analyze', 'index', 'status', 'develop', 'build_site', 'continue'])
    expect(errors[3]!.message).toContain('at most 2048')
    client.close()
    await client.closed
  })

  test('a flood of bad messages closes the connection with 1008; the server carries on', async () => {
    const client = await h.connect()
    for (let i = 0; i < 50; i++) client.sendRaw(`garbage ${i}`)
    const closed = await client.closed
    expect(closed.code).toBe(1008)
    const next = await h.connect()
    next.send({ type: 'ping' })
    await next.next((m) => m.type === 'pong')
    next.close()
    await next.closed
  })

  test('a frame over 4 × AGENT_MAX_MESSAGE_BYTES closes the connection with 1009', async () => {
    const client = await h.connect()
    client.sendRaw('x'.repeat(4 * 2048 + 100))
    expect((await client.closed).code).toBe(1009)
  })

  test('the JSON Schema of the protocol is served and names every message, command and code', async () => {
    const response = await fetch(`${h.url}/api/agents/protocol`)
    expect(response.status).toBe(200)
    const schema = (await response.json()) as Record<string, any>
    expect(Object.keys(schema.$defs).sort()).toEqual(
      [
        'client.agent_command',
        'client.cancel',
        'client.ping',
        'client.subscribe',
        'client.unsubscribe',
        'params.analyze',
        'params.build_site',
        'params.continue',
        'params.debug',
        'params.develop',
        'params.index',
        'params.status',
        'server.ack',
        'server.cancelling',
        'server.error',
        'server.log',
        'server.pong',
        'server.progress',
        'server.result',
        'server.subscribed',
        'server.unsubscribed',
      ].sort(),
    )
    expect(schema.$defs['server.progress'].properties.status.enum).toEqual(['queued', 'running', 'succeeded', 'failed', 'cancelled'])
    expect(schema.errorCodes).toHaveProperty('rate_limited')
    expect(schema.closeCodes).toHaveProperty('1001')
  })
})

describe('heartbeats', () => {
  let h: AgentHarness
  beforeAll(async () => {
    h = await agentHarness({ AGENT_HEARTBEAT_INTERVAL_MS: '100', AGENT_IDLE_TIMEOUT_MS: '400' })
  })
  afterAll(() => h.close())

  test('a client that answers pings stays; one that never answers is closed and forgotten', async () => {
    const live = await h.connect()
    const port = Number(new URL(h.url).port)
    // A raw socket that completes the handshake and then never reads or answers a ping.
    const silent = tcpConnect(port, '127.0.0.1')
    let upgraded = ''
    silent.on('data', (chunk) => (upgraded += chunk.toString('latin1')))
    const ended = new Promise<void>((resolve) => silent.on('close', () => resolve()))
    silent.write(handshake(port, h.token))
    const hub = h.t.deps.agentConnections
    // The hub counts the socket as Bun opens it, which can be before this client has read the 101.
    for (let i = 0; i < 100 && (hub.size < 2 || !upgraded); i++) await Bun.sleep(10)
    expect(upgraded).toStartWith('HTTP/1.1 101')
    expect(hub.size).toBe(2)
    await ended
    expect(hub.size).toBe(1)
    // Well past the idle timeout, the answering client is still there and served.
    await Bun.sleep(600)
    live.send({ type: 'ping', id: 'still' })
    expect(await live.next((m) => m.type === 'pong' && m.id === 'still')).toBeDefined()
    expect(hub.size).toBe(1)
    live.close()
    await live.closed
    for (let i = 0; i < 100 && hub.size > 0; i++) await Bun.sleep(10)
    expect(hub.size).toBe(0)
  })
})
