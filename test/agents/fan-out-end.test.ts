/**
 * When a task followed through a topic ends, its followers leave the topic a slice per event-loop turn (all at once
 * held the loop some 100 ms at 10,000 followers), and a task followed again afterwards gets a topic of its own.
 */
import { describe, expect, test } from 'bun:test'
import { createConnectionHub, type AgentSocket, type ConnectionHubOptions } from '../../plugins/agents/connections/connections.ts'
import type { AgentCaller, AgentService } from '../../plugins/agents/tasks/index.ts'
import { memoryLogger } from '../../src/log.ts'

const FOLLOWERS = 1000
const TASK = 'task-1'
const caller = { userId: 'u1', orgId: 'o1', role: 'member', scopes: [] } as unknown as AgentCaller

/** A socket that records its topics; a message sent to it is counted. */
class RecordingSocket implements AgentSocket {
  topics = new Set<string>()
  left: string[] = []
  texts: string[] = []
  sendText(text: string) {
    this.texts.push(text)
    return text.length
  }
  ping() {
    return 0
  }
  close() {}
  terminate() {}
  subscribe(topic: string) {
    this.topics.add(topic)
  }
  unsubscribe(topic: string) {
    this.topics.delete(topic)
    this.left.push(topic)
  }
}

type Listener = (text: string, seq: number, final: boolean) => void

function hubWithOneTask() {
  const followers: Listener[] = []
  const agents = {
    async ownTask() {
      return { taskId: TASK, userId: caller.userId, command: 'status', status: 'running', lastSeq: 0 }
    },
    async follow(_caller: AgentCaller, _taskId: string, _afterSeq: number, listener: Listener) {
      followers.push(listener)
      return { stop() {} }
    },
  } as unknown as AgentService
  const published: { topic: string; text: string }[] = []
  const hub = createConnectionHub({
    agents,
    logger: memoryLogger(),
    rateLimit: { limiter: {} as ConnectionHubOptions['rateLimit']['limiter'], policies: [] },
    settings: { maxConnectionsPerUser: FOLLOWERS + 1, maxMessageBytes: 4096, maxBadMessages: 10, heartbeatIntervalMs: 60_000, idleTimeoutMs: 60_000 },
  })
  // biome-ignore lint/correctness/useHookAtTopLevel: the hub's method, not a React hook
  hub.useServer({ publish: (topic, text) => published.push({ topic, text }) })
  return { hub, followers, published }
}

async function follow(hub: ReturnType<typeof createConnectionHub>, count: number): Promise<RecordingSocket[]> {
  const sockets = Array.from({ length: count }, () => new RecordingSocket())
  for (const socket of sockets) hub.receive(hub.open(socket, caller), JSON.stringify({ type: 'subscribe', id: 's', taskId: TASK }))
  // Each subscription is answered once it has joined the task's topic.
  while (!sockets.every((socket) => socket.topics.size === 1)) await Bun.sleep(1)
  return sockets
}

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve))

describe('the end of a task with many followers', () => {
  test('its followers leave its topic over several turns, every one of them in the end', async () => {
    const { hub, followers, published } = hubWithOneTask()
    const sockets = await follow(hub, FOLLOWERS)
    const [topic] = sockets[0]!.topics
    expect(sockets.every((socket) => socket.topics.has(topic!))).toBe(true)

    followers[0]!('{"seq":1}', 1, false)
    followers[0]!('{"seq":2,"final":true}', 2, true)
    expect(published.map((p) => p.topic)).toEqual([topic!, topic!])
    // The turn that published the end has taken only a slice of them out.
    const leftAtOnce = sockets.filter((socket) => socket.left.length > 0).length
    expect(leftAtOnce).toBeGreaterThan(0)
    expect(leftAtOnce).toBeLessThan(FOLLOWERS)

    for (let turn = 0; turn < FOLLOWERS && sockets.some((socket) => socket.topics.size > 0); turn++) await nextTurn()
    expect(sockets.every((socket) => socket.topics.size === 0 && socket.left.length === 1)).toBe(true)
  })

  test('a task followed again while the last followers are still leaving uses a topic of its own', async () => {
    const { hub, followers, published } = hubWithOneTask()
    const first = await follow(hub, FOLLOWERS)
    const [endedTopic] = first[0]!.topics
    followers[0]!('{"seq":1,"final":true}', 1, true)
    expect(first.some((socket) => socket.topics.size > 0)).toBe(true)

    // The task's log is followed again (say, to replay it) before the slices are done.
    const again = new RecordingSocket()
    hub.receive(hub.open(again, caller), JSON.stringify({ type: 'subscribe', id: 's2', taskId: TASK }))
    while (followers.length < 2) await Bun.sleep(1)
    followers[1]!('{"seq":1}', 1, false)
    while (again.topics.size === 0) await Bun.sleep(1)
    const [newTopic] = again.topics
    expect(newTopic).not.toBe(endedTopic)

    for (let turn = 0; turn < FOLLOWERS && first.some((socket) => socket.topics.size > 0); turn++) await nextTurn()
    // The old channel's leaving never took the new follower out of the new topic.
    expect(again.topics.has(newTopic!)).toBe(true)
    followers[1]!('{"seq":2,"final":true}', 2, true)
    expect(published.at(-1)).toEqual({ topic: newTopic!, text: '{"seq":2,"final":true}' })
  })
})
