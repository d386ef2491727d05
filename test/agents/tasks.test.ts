/** Agent tasks over the WebSocket: commands from ack to result, cancel, reconnect and subscribe, limits. */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { userWithRole } from '../helpers.ts'
import { eventually } from '../chat/helpers.ts'
import { agentHarness, expectContiguous, isFinal, type AgentHarness } from './helpers.ts'

const addTests = `import { expect, test } from 'bun:test'
import { add } from './main'
test('adds', () => expect(add(2, 3)).toBe(5))
`
const fence = (code: string) => `The fault is the operator.\n\`\`\`ts\n${code}\n\`\`\`\n`
const buggy = 'export function add(a: number, b: number) { return a - b }'
const fixed = 'export function add(a: number, b: number) { return a + b }'
const ETA = /^(\d+s|\d+m|\d+h(\d+m)?)$/

describe('agent tasks', () => {
  let h: AgentHarness
  beforeAll(async () => {
    h = await agentHarness({ AGENT_MAX_RUNNING_TASKS_PER_USER: '3' })
  })
  afterAll(() => h.close())

  test('debug: ack, progress with steps and ETA, check logs, then the fix that passed the tests', async () => {
    h.model.queue = [
      { text: '{"steps": ["Find the fault", "Fix add"]}' },
      { text: 'It subtracts instead of adding.', delayMs: 30 },
      { text: fence(buggy) },
      { text: fence(fixed) },
    ]
    const client = await h.connect()
    const taskId = await h.run(client, 'debug', { code: buggy, error: 'add(2, 3) returned -1', tests: addTests })
    const final = await client.next(isFinal(taskId), 60_000)
    expect(final).toMatchObject({ type: 'result', status: 'succeeded' })
    expect(final.output.passed).toBe(true)
    expect(final.output.fix).toEqual({ language: 'typescript', code: `${fixed}\n` })
    expect(final.output.checks.map((c: { verdict: string }) => c.verdict)).toEqual(['failed', 'passed'])

    const messages = client.taskMessages(taskId)
    expectContiguous(messages)
    expect(messages[0]).toMatchObject({ type: 'ack', seq: 1, command: 'debug', status: 'queued' })
    const progress = messages.filter((m) => m.type === 'progress')
    expect(progress.map((p) => p.status)).toContain('running')
    expect(progress.at(-1)).toMatchObject({ status: 'succeeded', percent: 100 })
    const steps = progress.filter((p) => p.step).map((p) => p.step)
    expect(steps).toEqual(['Gathering context', 'Planning', 'Planned 2 steps', 'Step 1: Find the fault', 'Step 2: Fix add', 'Summarising'])
    // Once a step has finished, the time left is estimated from the steps' observed durations.
    const withEta = progress.filter((p) => p.status === 'running' && p.eta !== undefined)
    expect(withEta.length).toBeGreaterThan(0)
    for (const p of withEta) expect(p.eta).toMatch(ETA)
    expect(progress.at(-1)!.steps).toBe(5)
    const percents = progress.filter((p) => p.percent !== undefined).map((p) => p.percent)
    expect(percents).toEqual([...percents].sort((a, b) => a - b))
    const logs = messages.filter((m) => m.type === 'log').map((m) => m.message)
    expect(logs).toEqual(['Step 2, attempt 1 of 3: failed', 'Step 2, attempt 2 of 3: passed'])
    // The failing test output went back to the model.
    expect(h.model.completions.at(-1)!.messages.at(-1).content).toContain('Expected: 5')
    client.close()
  })

  test('cancel stops a running task: its log ends with status cancelled, and the model stream is abandoned', async () => {
    h.model.queue = [{ text: '{"steps": ["Think"]}' }, { text: 'word '.repeat(1000), delayMs: 20 }]
    const client = await h.connect()
    const taskId = await h.run(client, 'debug', { error: 'TypeError: x is undefined' })
    await client.next((m) => m.taskId === taskId && m.step === 'Step 1: Think')
    // The step is announced before its model request goes out: cancel once that stream is running.
    await eventually(() => h.model.open > 0, "the step's model stream to start")
    const abandonedBefore = h.model.abandoned
    client.send({ type: 'cancel', id: 'stop-it', taskId })
    expect(await client.next((m) => m.id === 'stop-it')).toMatchObject({ type: 'cancelling', taskId })
    const final = await client.next(isFinal(taskId))
    expect(final).toMatchObject({ type: 'error', status: 'cancelled', code: 'task_cancelled' })
    const messages = client.taskMessages(taskId)
    expectContiguous(messages)
    expect(messages.at(-2)).toMatchObject({ type: 'progress', status: 'cancelled' })
    await eventually(() => h.model.abandoned > abandonedBefore, 'the model stream to be abandoned')
    client.send({ type: 'cancel', id: 'again', taskId })
    expect(await client.next((m) => m.id === 'again')).toMatchObject({ type: 'error', code: 'task_finished' })
    client.close()
  })

  test('a task outlives its connection; after a reconnect, subscribe with the last seq gets exactly the missed messages, then live ones', async () => {
    h.model.queue = [
      { text: '{"steps": ["Read", "Explain"]}' },
      { text: 'one two three four five six', delayMs: 60 },
      { text: 'the explanation is here', delayMs: 60 },
    ]
    const first = await h.connect()
    const taskId = await h.run(first, 'debug', { error: 'boom' })
    await first.next((m) => m.taskId === taskId && m.step === 'Step 1: Read')
    const seen = first.taskMessages(taskId)
    const lastSeen = seen.at(-1)!.seq as number
    first.close()
    await first.closed

    const second = await h.connect()
    second.send({ type: 'subscribe', id: 'resume', taskId, afterSeq: lastSeen })
    const subscribed = await second.next((m) => m.id === 'resume')
    expect(subscribed).toMatchObject({ type: 'subscribed', taskId, command: 'debug', status: 'running' })
    expect(subscribed.lastSeq).toBeGreaterThanOrEqual(lastSeen)
    const final = await second.next(isFinal(taskId), 30_000)
    expect(final.type).toBe('result')
    const resumed = second.taskMessages(taskId)
    expectContiguous(resumed, lastSeen + 1)
    // Together: every message once, in order.
    expectContiguous([...seen, ...resumed])

    // The finished task stays readable: a subscribe from 0 replays the whole log.
    const third = await h.connect()
    third.send({ type: 'subscribe', id: 'all', taskId })
    await third.next(isFinal(taskId))
    expect(third.taskMessages(taskId).map((m) => m.seq)).toEqual([...seen, ...resumed].map((m) => m.seq))
    expect(third.received.find((m) => m.id === 'all')).toMatchObject({ status: 'succeeded', lastSeq: final.seq })
    second.close()
    third.close()
  })

  test('many followers joining at different points each get every message after their own seq once, in order; one that leaves gets no more', async () => {
    h.model.queue = [
      { text: '{"steps": ["Read", "Trace", "Explain"]}' },
      { text: 'one', delayMs: 40 },
      { text: 'two', delayMs: 40 },
      { text: 'three', delayMs: 40 },
    ]
    const starter = await h.connect()
    const taskId = await h.run(starter, 'debug', { error: 'boom' })
    const followers = await Promise.all(Array.from({ length: 12 }, () => h.connect()))
    const joinedAfter: number[] = []
    for (const [i, follower] of followers.entries()) {
      // Joined from the start, from where the starter is, and from beyond what exists yet.
      const afterSeq = i % 3 === 0 ? 0 : i % 3 === 1 ? (starter.taskMessages(taskId).at(-1)?.seq ?? 0) : 2
      joinedAfter.push(afterSeq)
      follower.send({ type: 'subscribe', id: `f${i}`, taskId, afterSeq })
      await follower.next((m) => m.id === `f${i}`)
      if (i === 5) await Bun.sleep(30)
    }
    const leaver = followers[11]!
    leaver.send({ type: 'unsubscribe', id: 'bye', taskId })
    await leaver.next((m) => m.id === 'bye')
    const leftWith = leaver.taskMessages(taskId).length
    const final = await starter.next(isFinal(taskId), 30_000)
    expectContiguous(starter.taskMessages(taskId))
    for (const [i, follower] of followers.slice(0, 11).entries()) {
      await follower.next(isFinal(taskId), 30_000)
      expectContiguous(follower.taskMessages(taskId), Math.min(joinedAfter[i]!, final.seq) + 1)
    }
    await Bun.sleep(100)
    expect(leaver.taskMessages(taskId).length).toBe(leftWith)
    for (const client of [starter, ...followers]) client.close()
  })

  test('several tasks run at once on one connection, each with its own sequence', async () => {
    h.model.fallback = () => ({ text: 'A concise summary.', delayMs: 5 })
    const client = await h.connect()
    const ids = await Promise.all([h.run(client, 'status'), h.run(client, 'debug', { error: 'e1' }), h.run(client, 'debug', { error: 'e2' })])
    expect(new Set(ids).size).toBe(3)
    for (const id of ids) await client.next(isFinal(id), 30_000)
    for (const id of ids) expectContiguous(client.taskMessages(id))
    client.close()
  })

  test("another user's task is not found; neither is an unknown one", async () => {
    const client = await h.connect()
    const taskId = await h.run(client, 'status')
    await client.next(isFinal(taskId))
    const stranger = await userWithRole(h.t, 'member')
    const other = await h.connect(stranger.token)
    other.send({ type: 'subscribe', id: 's1', taskId })
    other.send({ type: 'cancel', id: 's2', taskId })
    other.send({ type: 'subscribe', id: 's3', taskId: 'task_nope' })
    for (const id of ['s1', 's2', 's3']) expect(await other.next((m) => m.id === id)).toMatchObject({ type: 'error', code: 'task_not_found' })
    client.close()
    other.close()
  })

  test('status reports one task, or the recent tasks of the user', async () => {
    const client = await h.connect()
    const first = await h.run(client, 'status')
    await client.next(isFinal(first))
    const one = await h.run(client, 'status', { taskId: first })
    expect((await client.next(isFinal(one))).output.task).toMatchObject({ taskId: first, command: 'status', status: 'succeeded', lastSeq: 5 })
    const all = await h.run(client, 'status')
    const listed = (await client.next(isFinal(all))).output.tasks.map((t: { taskId: string }) => t.taskId)
    expect(listed).toContain(first)
    expect(listed).toContain(one)
    client.close()
  })

  test('more running tasks than AGENT_MAX_RUNNING_TASKS_PER_USER are refused with too_many_tasks', async () => {
    h.model.fallback = () => ({ text: 'slow '.repeat(50), delayMs: 20 })
    const client = await h.connect()
    const running = [await h.run(client, 'debug', { error: '1' }), await h.run(client, 'debug', { error: '2' }), await h.run(client, 'debug', { error: '3' })]
    client.send({ type: 'agent_command', id: 'fourth', command: 'status' })
    expect(await client.next((m) => m.id === 'fourth')).toMatchObject({ type: 'error', code: 'too_many_tasks' })
    for (const taskId of running) client.send({ type: 'cancel', taskId })
    for (const taskId of running) await client.next(isFinal(taskId))
    client.close()
  })

  test('without a model provider, debug fails with not_configured naming the settings', async () => {
    const bare = await agentHarness({ OPENAI_BASE_URL: '' })
    try {
      const client = await bare.connect()
      const taskId = await bare.run(client, 'analyze', { importId: 'imp_x' })
      expect(await client.next(isFinal(taskId))).toMatchObject({ type: 'error', status: 'failed', code: 'not_configured' })
      expect(client.received.at(-1)!.message).toContain('OPENAI_API_KEY')
      client.close()
    } finally {
      await bare.close()
    }
  })
})

describe('limits on commands', () => {
  let h: AgentHarness
  beforeAll(async () => {
    h = await agentHarness({ RATE_LIMIT_CHAT_PER_MINUTE: '2', AGENT_TASK_RETENTION_SECONDS: '1' })
  })
  afterAll(() => h.close())

  test('commands spend the chat budget: the third in a minute gets rate_limited with the retry time', async () => {
    const client = await h.connect()
    const first = await h.run(client, 'status')
    await h.run(client, 'status')
    client.send({ type: 'agent_command', id: 'third', command: 'status' })
    const refused = await client.next((m) => m.id === 'third')
    expect(refused).toMatchObject({ type: 'error', code: 'rate_limited' })
    expect(refused.retryAfterSeconds).toBeGreaterThan(0)
    // Pings and subscribes are not commands.
    client.send({ type: 'ping', id: 'p' })
    await client.next((m) => m.id === 'p')

    // After AGENT_TASK_RETENTION_SECONDS a finished task is gone.
    await client.next(isFinal(first))
    await Bun.sleep(1300)
    client.send({ type: 'subscribe', id: 'late', taskId: first })
    expect(await client.next((m) => m.id === 'late')).toMatchObject({ type: 'error', code: 'task_not_found' })
    client.close()
  })
})
