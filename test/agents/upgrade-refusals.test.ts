/**
 * Upgrades that never become a socket, sent the way someone probing the cap would: each is refused with a problem
 * body, and none of them keeps one of the user's connection slots.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createConnectionHub, type ConnectionHubOptions } from '../../plugins/agents/connections/connections.ts'
import type { AgentService } from '../../plugins/agents/tasks/service.ts'
import { createApp } from '../../src/main/app.ts'
import { memoryLogger } from '../../src/log.ts'
import { eventually } from '../chat/helpers.ts'
import { agentHarness, type AgentClient, type AgentHarness } from './helpers.ts'

const KEY = 'dGhlIHNhbXBsZSBub25jZQ=='

/** Upgrade requests that Bun itself would not switch, each with the header its refusal must name. */
const malformed: { name: string; headers: Record<string, string>; names: string }[] = [
  { name: 'no key', headers: { 'sec-websocket-version': '13' }, names: 'Sec-WebSocket-Key' },
  { name: 'a short key', headers: { 'sec-websocket-key': 'abc', 'sec-websocket-version': '13' }, names: 'Sec-WebSocket-Key' },
  {
    name: 'a key of the right length that is not base64',
    headers: { 'sec-websocket-key': '!!!!!!!!!!!!!!!!!!!!!!==', 'sec-websocket-version': '13' },
    names: 'Sec-WebSocket-Key',
  },
  { name: 'a key of 17 bytes', headers: { 'sec-websocket-key': 'AAAAAAAAAAAAAAAAAAAAAAA=', 'sec-websocket-version': '13' }, names: 'Sec-WebSocket-Key' },
  { name: 'two keys', headers: { 'sec-websocket-key': `${KEY}, ${KEY}`, 'sec-websocket-version': '13' }, names: 'Sec-WebSocket-Key' },
  { name: 'no version', headers: { 'sec-websocket-key': KEY }, names: 'Sec-WebSocket-Version' },
  { name: 'version 8', headers: { 'sec-websocket-key': KEY, 'sec-websocket-version': '8' }, names: 'Sec-WebSocket-Version' },
  { name: 'a list of versions', headers: { 'sec-websocket-key': KEY, 'sec-websocket-version': '13, 8' }, names: 'Sec-WebSocket-Version' },
]

const handshake = (port: number, token: string) =>
  `GET /ws/agent HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n` +
  `Sec-WebSocket-Key: ${KEY}\r\nSec-WebSocket-Version: 13\r\nAuthorization: Bearer ${token}\r\n\r\n`

describe('refused upgrades', () => {
  let h: AgentHarness
  beforeAll(async () => {
    h = await agentHarness({ AGENT_MAX_CONNECTIONS_PER_USER: '2' })
  })
  afterAll(() => h.close())

  // A timeout so an upgrade wrongly switched fails the test instead of hanging it.
  const upgrade = (headers: Record<string, string>, token = h.token) =>
    fetch(`${h.url}/ws/agent`, {
      headers: { upgrade: 'websocket', connection: 'Upgrade', authorization: `Bearer ${token}`, ...headers },
      signal: AbortSignal.timeout(5000),
    })

  /** Both slots taken by real sockets, a third refused with 429, then both closed and forgotten. */
  async function expectTwoSlotsFree() {
    const clients: AgentClient[] = [await h.connect(), await h.connect()]
    const third = await upgrade({ 'sec-websocket-key': KEY, 'sec-websocket-version': '13' })
    expect(third.status).toBe(429)
    expect(await third.json()).toMatchObject({ code: 'too_many_connections' })
    for (const client of clients) client.close()
    await Promise.all(clients.map((client) => client.closed))
    await eventually(() => h.t.deps.agentConnections.slotsHeld(h.user.id) === 0, 'both slots to be given back')
  }

  test('each malformed upgrade is answered 400 bad_request as problem+json, naming the header at fault', async () => {
    for (const probe of malformed) {
      const response = await upgrade(probe.headers)
      expect({ probe: probe.name, status: response.status, type: response.headers.get('content-type') }).toEqual({
        probe: probe.name,
        status: 400,
        type: 'application/problem+json',
      })
      const body = (await response.json()) as { code: string; detail: string }
      expect(body.code).toBe('bad_request')
      expect(body.detail).toContain(probe.names)
      if (probe.names === 'Sec-WebSocket-Version') expect(response.headers.get('sec-websocket-version')).toBe('13')
    }
  })

  test('a malformed upgrade is refused even without a token, so probing it costs nothing', async () => {
    const response = await fetch(`${h.url}/ws/agent`, { headers: { upgrade: 'websocket', connection: 'Upgrade' }, signal: AbortSignal.timeout(5000) })
    expect(response.status).toBe(400)
    expect(response.headers.get('content-type')).toBe('application/problem+json')
    expect(await response.json()).toMatchObject({ code: 'bad_request' })
  })

  test('a switched connection is logged 101 and keeps no error: only a refused handshake is an error', async () => {
    const from = h.t.logs.length
    const client = await h.connect()
    client.close()
    await client.closed
    // This user's upgrade lines since: an earlier test's refusals (before any token is read) name no user.
    const mine = () => h.t.logs.slice(from).filter((l) => l.msg === 'request' && l.route === '/ws/agent' && l.userId === h.user.id)
    await eventually(() => mine().length > 0, "the upgrade's access line")
    expect(mine().map((l) => l.status)).toEqual([101])
    const refused = await upgrade({ 'sec-websocket-version': '13' })
    expect(refused.status).toBe(400)
    await eventually(() => h.t.logs.slice(from).some((l) => l.msg === 'request' && l.route === '/ws/agent' && l.status === 400), "the refusal's access line")
  })

  test('a plain GET is answered 426 upgrade_required as problem+json', async () => {
    const response = await fetch(`${h.url}/ws/agent`, { headers: { authorization: `Bearer ${h.token}` } })
    expect(response.status).toBe(426)
    expect(response.headers.get('content-type')).toBe('application/problem+json')
    expect(response.headers.get('upgrade')).toBe('websocket')
    expect(await response.json()).toMatchObject({ code: 'upgrade_required' })
  })

  test('ten malformed upgrades with the cap at 2 hold no slot: two real sockets still connect, and a third is refused', async () => {
    for (let i = 0; i < 10; i++) {
      const response = await upgrade(malformed[i % malformed.length]!.headers)
      expect(response.status).toBe(400)
      await response.body?.cancel()
    }
    expect(h.t.deps.agentConnections.slotsHeld(h.user.id)).toBe(0)
    await expectTwoSlotsFree()
  })

  test('malformed upgrades sent all at once hold no slot either', async () => {
    const responses = await Promise.all(Array.from({ length: 20 }, (_, i) => upgrade(malformed[i % malformed.length]!.headers)))
    expect(responses.map((response) => response.status)).toEqual(responses.map(() => 400))
    await Promise.all(responses.map((response) => response.body?.cancel()))
    await expectTwoSlotsFree()
  })

  test('clients that send a sound upgrade and drop before the switch hold no slot', async () => {
    const port = Number(new URL(h.url).port)
    for (const drop of ['terminate', 'end'] as const)
      for (let i = 0; i < 5; i++) {
        const socket = await Bun.connect({ hostname: '127.0.0.1', port, socket: { data() {} } })
        socket.write(handshake(port, h.token))
        socket[drop]()
      }
    await eventually(
      () => h.t.deps.agentConnections.slotsHeld(h.user.id) === 0 && h.t.deps.agentConnections.size === 0,
      'the dropped upgrades to give their slots back',
    )
    await expectTwoSlotsFree()
  })

  test('a client that drops while its token is being checked leaves no slot behind when the switch then fails', async () => {
    // The same service with the token check held until the client has gone, so the switch is tried on a dead socket;
    // no token counts as verified before, or the check would not wait.
    const { access, agentConnections: hub } = h.t.deps
    let checking!: () => void
    const checkStarted = new Promise<void>((resolve) => (checking = resolve))
    let clientGone!: () => void
    const gone = new Promise<void>((resolve) => (clientGone = resolve))
    let reserved!: () => void
    const slotReserved = new Promise<void>((resolve) => (reserved = resolve))
    const app = createApp({
      ...h.t.deps,
      access: {
        ...access,
        knownPrincipal: () => undefined,
        authenticate: async (token: string) => {
          checking()
          await gone
          return access.authenticate(token)
        },
      },
      agentConnections: {
        ...hub,
        reserve: (userId: string) => {
          reserved()
          return hub.reserve(userId)
        },
      },
    })
    app.listen({ hostname: '127.0.0.1', port: 0 })
    try {
      const port = app.server!.port!
      const socket = await Bun.connect({ hostname: '127.0.0.1', port, socket: { data() {} } })
      socket.write(handshake(port, h.token))
      await checkStarted
      socket.terminate()
      await Bun.sleep(50)
      clientGone()
      await slotReserved
      await eventually(() => hub.slotsHeld(h.user.id) === 0, 'the slot of the dropped upgrade to be given back')
      await expectTwoSlotsFree()
    } finally {
      await app.stop(true)
    }
  })
})

describe('a slot reserved for an upgrade', () => {
  const hubWith = (reservationTimeoutMs: number) =>
    createConnectionHub({
      agents: {} as AgentService,
      logger: memoryLogger(),
      rateLimit: { limiter: {} as ConnectionHubOptions['rateLimit']['limiter'], policies: [] },
      settings: { maxConnectionsPerUser: 2, maxMessageBytes: 1024, maxBadMessages: 10, heartbeatIntervalMs: 60_000, idleTimeoutMs: 60_000 },
      reservationTimeoutMs,
    })

  test('is given back when its socket never opens', async () => {
    const hub = hubWith(50)
    expect(hub.reserve('u1')).toBeDefined()
    expect(hub.reserve('u1')).toBeDefined()
    expect(hub.reserve('u1')).toBeUndefined()
    await eventually(() => hub.slotsHeld('u1') === 0, 'the reservations to expire')
    expect(hub.reserve('u1')).toBeDefined()
  })

  test('once claimed by an open socket, stays until the socket closes', async () => {
    const hub = hubWith(20)
    const slot = hub.reserve('u1')!
    expect(slot.claim()).toBe(true)
    await Bun.sleep(60)
    expect(hub.slotsHeld('u1')).toBe(1)
    slot.release()
    expect(hub.slotsHeld('u1')).toBe(1)
  })

  test('can be released only once, and cannot be claimed after it expired', async () => {
    const hub = hubWith(20)
    const first = hub.reserve('u1')!
    hub.reserve('u1')
    first.release()
    first.release()
    expect(hub.slotsHeld('u1')).toBe(1)
    await eventually(() => hub.slotsHeld('u1') === 0, 'the other reservation to expire')
    const late = hub.reserve('u2')!
    await Bun.sleep(60)
    expect(late.claim()).toBe(false)
    expect(hub.slotsHeld('u2')).toBe(0)
  })
})
