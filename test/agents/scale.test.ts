/** 1,000 concurrent agent connections, each running a short task to its result. */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { agentHarness, expectContiguous, isFinal, type AgentClient, type AgentHarness } from './helpers.ts'

const CONNECTIONS = 1000

describe('many connections', () => {
  let h: AgentHarness
  beforeAll(async () => {
    h = await agentHarness({ AGENT_MAX_CONNECTIONS_PER_USER: String(CONNECTIONS), AGENT_MAX_RUNNING_TASKS_PER_USER: String(CONNECTIONS) })
  })
  afterAll(() => h.close())

  test(`${CONNECTIONS} connections each run a status task at the same time; every one gets its whole log`, async () => {
    const clients: AgentClient[] = []
    for (let i = 0; i < CONNECTIONS; i += 100) clients.push(...(await Promise.all(Array.from({ length: 100 }, () => h.connect()))))
    expect(h.t.deps.agentConnections.size).toBe(CONNECTIONS)
    const tasks = await Promise.all(clients.map((client) => h.run(client, 'status')))
    expect(new Set(tasks).size).toBe(CONNECTIONS)
    const finals = await Promise.all(clients.map((client, i) => client.next(isFinal(tasks[i]!), 30_000)))
    expect(finals.every((final) => final.type === 'result')).toBe(true)
    for (const [i, client] of clients.entries()) {
      const messages = client.taskMessages(tasks[i]!)
      expectContiguous(messages)
      // Each connection heard only about its own task.
      expect(client.received.filter((m) => m.taskId && m.taskId !== tasks[i]).length).toBe(0)
    }
    for (const client of clients) client.close()
    await Promise.all(clients.map((client) => client.closed))
    for (let i = 0; i < 200 && h.t.deps.agentConnections.size > 0; i++) await Bun.sleep(10)
    expect(h.t.deps.agentConnections.size).toBe(0)
  }, 120_000)
})
