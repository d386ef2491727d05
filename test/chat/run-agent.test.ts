/**
 * The chat model runs an agent task with run_agent: the task's progress streams into the answer as one
 * `data-agent` part, the task can be followed over /ws/agent too, and its result is the tool result.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createAccessTokens } from '../../src/auth/access-tokens.ts'
import { agentHarness, call, isFinal, type AgentHarness } from '../agents/helpers.ts'
import { chunks, readEvents, textOf } from './helpers.ts'

describe('run_agent in chat', () => {
  let h: AgentHarness
  const post = (body: unknown, token = h.token, signal?: AbortSignal) =>
    fetch(`${h.url}/api/chat`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body: JSON.stringify(body),
      signal,
    })
  beforeAll(async () => {
    h = await agentHarness()
  })
  afterAll(() => h.close())

  test('a develop task runs from the chat: progress parts with one id, the result back to the model, which answers', async () => {
    h.model.queue = [
      call('run_agent', { command: 'develop', params: { instruction: 'Write hello.txt' } }),
      call('write_file', { path: 'hello.txt', content: 'hi\n' }),
      call('finish', { summary: 'Wrote hello.txt.' }),
      { text: 'Done: hello.txt is added.' },
    ]
    const events = await readEvents(await post({ messages: [{ role: 'user', content: 'Make me a hello file' }] }))
    const all = chunks(events)
    const parts = all.filter((c) => c.type === 'data-agent')
    const taskId = parts[0]!.data.taskId as string
    expect(taskId).toMatch(/^task_/)
    expect(new Set(parts.map((p) => p.id))).toEqual(new Set([`agent-${taskId}`]))
    expect(parts[0]!.data).toEqual({ taskId, command: 'develop', step: null, eta: null, status: 'queued' })
    const steps = parts.map((p) => p.data.step)
    expect(steps).toContain('Opening an empty workspace')
    // Each tool step names the call, then the budgets spent so far.
    expect(steps.some((step) => typeof step === 'string' && step.startsWith('write_file hello.txt · step 1/'))).toBe(true)
    expect(parts.some((p) => p.data.status === 'running')).toBe(true)
    expect(parts.at(-1)!.data).toMatchObject({ taskId, status: 'succeeded', eta: null })

    const output = all.find((c) => c.type === 'tool-output-available')!.output
    expect(output).toMatchObject({ taskId, status: 'succeeded', output: { summary: 'Wrote hello.txt.', files: [{ path: 'hello.txt', status: 'added' }] } })
    expect(output.output.diff).toContain('+hi')
    // The model read the result as the tool's answer, then answered.
    const toolMessage = h.model.completions.at(-1)!.messages.find((m: any) => m.role === 'tool')
    expect(JSON.parse(toolMessage.content)).toMatchObject({ taskId, status: 'succeeded', output: { files: [{ path: 'hello.txt', status: 'added' }] } })
    expect(textOf(events)).toBe('Done: hello.txt is added.')

    // The same task, followed over /ws/agent.
    const client = await h.connect()
    client.send({ type: 'subscribe', id: 's1', taskId })
    const final = await client.next(isFinal(taskId), 10_000)
    expect(final).toMatchObject({ type: 'result', output: { summary: 'Wrote hello.txt.' } })
    client.close()
  })

  test('a follow-up from the chat: run_agent continue goes on from an ended develop task, in its workspace', async () => {
    h.model.queue = [
      call('run_agent', { command: 'develop', params: { instruction: 'Write a.txt' } }),
      call('write_file', { path: 'a.txt', content: 'a\n' }),
      call('finish', { summary: 'Wrote a.txt.' }),
      { text: 'a.txt is there.' },
    ]
    const first = chunks(await readEvents(await post({ messages: [{ role: 'user', content: 'Make a.txt' }] })))
    const taskId = first.find((c) => c.type === 'data-agent')!.data.taskId as string
    h.model.queue = [
      call('run_agent', { command: 'continue', params: { taskId, message: 'Add b.txt too' } }),
      call('write_file', { path: 'b.txt', content: 'b\n' }),
      call('finish', { summary: 'Wrote b.txt.' }),
      { text: 'Both are there.' },
    ]
    const second = chunks(await readEvents(await post({ messages: [{ role: 'user', content: 'And b.txt' }] })))
    const output = second.find((c) => c.type === 'tool-output-available')!.output
    expect(output).toMatchObject({ status: 'succeeded', output: { summary: 'Wrote b.txt.' } })
    expect(output.output.files).toEqual([
      { path: 'a.txt', status: 'added' },
      { path: 'b.txt', status: 'added' },
    ])
  })

  test('a bad command comes back to the model as a tool error, with no task started', async () => {
    h.model.queue = [call('run_agent', { command: 'index', params: {} }), { text: 'I cannot do that.' }]
    const events = await readEvents(await post({ messages: [{ role: 'user', content: 'index it' }] }))
    expect(chunks(events).find((c) => c.type === 'tool-output-error')!.errorText).toContain(
      'command must be one of develop, continue, build_site, analyze, debug',
    )
    expect(chunks(events).some((c) => c.type === 'data-agent')).toBe(false)
  })

  test('without the agents:run scope the model is not offered run_agent', async () => {
    const tokens = createAccessTokens({ secret: h.t.config.secrets.jwtSecret, issuer: h.t.config.tokens.issuer, audience: h.t.config.tokens.audience })
    const { token } = await tokens.issue({ userId: h.user.id, orgId: h.user.orgId, role: 'member', scopes: ['chat:write'] })
    h.model.queue = [{ text: 'Hello.' }]
    const events = await readEvents(await post({ messages: [{ role: 'user', content: 'hi' }] }, token))
    expect(textOf(events)).toBe('Hello.')
    const offered = (h.model.completions.at(-1)!.tools ?? []).map((t: any) => t.function.name)
    expect(offered).not.toContain('run_agent')
    // With the scope it is.
    h.model.queue = [{ text: 'Hello.' }]
    await readEvents(await post({ messages: [{ role: 'user', content: 'hi' }] }))
    expect(h.model.completions.at(-1)!.tools.map((t: any) => t.function.name)).toContain('run_agent')
  })

  test("run_agent's params are a JSON schema per command, with each field's name, type and description", async () => {
    h.model.queue = [{ text: 'Hello.' }]
    await readEvents(await post({ messages: [{ role: 'user', content: 'hi' }] }))
    const runAgent = h.model.completions.at(-1)!.tools.find((t: any) => t.function.name === 'run_agent').function
    expect(runAgent.parameters.properties.command.enum).toEqual(['develop', 'continue', 'build_site', 'analyze', 'debug'])
    const alternatives = runAgent.parameters.properties.params.oneOf as any[]
    expect(alternatives.map((a) => a.title)).toEqual(['develop', 'continue', 'build_site', 'analyze', 'debug'])
    const [develop, followUp, buildSite, analyze, debug] = alternatives
    expect(followUp.required).toEqual(['taskId', 'message'])
    expect(followUp.properties.taskId.type).toBe('string')
    expect(develop).toMatchObject({ type: 'object', additionalProperties: false, required: ['instruction'] })
    expect(develop.description).toStartWith('params of develop: Change code in a private workspace')
    expect(develop.properties.instruction).toMatchObject({ type: 'string', description: 'What to change or build, in your words' })
    expect(develop.properties.checks).toMatchObject({ type: 'array', items: { type: 'string' } })
    expect(develop.properties.push.type).toBe('boolean')
    expect(buildSite.required).toEqual(['instruction', 'repository'])
    expect(analyze.required).toEqual(['importId'])
    expect(JSON.stringify(debug.properties.language)).toContain('javascript')
    // Plain JSON Schema: no TypeBox internals reach the model.
    expect(JSON.stringify(runAgent.parameters)).not.toContain('Symbol')
  })

  test('cancelling the chat stops waiting for the task; the task goes on and can still be followed to its result', async () => {
    h.model.queue = [
      call('run_agent', { command: 'develop', params: { instruction: 'Slow' } }),
      call('run_command', { command: 'sleep 2' }),
      call('finish', { summary: 'Slept.' }),
    ]
    const abort = new AbortController()
    const response = await post({ id: 'chat_run_agent_cancel', messages: [{ role: 'user', content: 'slow one' }] }, h.token, abort.signal)
    // Read until the task is running its command.
    const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader()
    let seen = ''
    let taskId: string | undefined
    while (!seen.includes('run_command sleep 2')) {
      const { value, done } = await reader.read()
      if (done) throw new Error('the stream ended before the command ran')
      seen += value
      taskId ??= /"taskId":"(task_[^"]+)"/.exec(seen)?.[1]
    }
    const cancelled = await fetch(`${h.url}/api/chat/chat_run_agent_cancel/cancel`, { method: 'POST', headers: { authorization: `Bearer ${h.token}` } })
    expect(cancelled.status).toBeLessThan(300)
    abort.abort()
    const client = await h.connect()
    client.send({ type: 'subscribe', id: 's2', taskId: taskId! })
    const final = await client.next(isFinal(taskId!), 20_000)
    expect(final).toMatchObject({ type: 'result', output: { summary: 'Slept.' } })
    client.close()
  })
})

describe('run_agent and the chat budget', () => {
  let h: AgentHarness
  beforeAll(async () => {
    h = await agentHarness({ RATE_LIMIT_CHAT_PER_MINUTE: '1' })
  })
  afterAll(() => h.close())

  test('a task started from the chat spends the chat budget: with the request having spent it, the start is refused', async () => {
    h.model.queue = [call('run_agent', { command: 'develop', params: { instruction: 'Anything' } }), { text: 'Out of budget.' }]
    const response = await fetch(`${h.url}/api/chat`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${h.token}` },
      body: JSON.stringify({ messages: [{ role: 'user', content: 'go' }] }),
    })
    expect(response.status).toBe(200)
    const events = await readEvents(response)
    expect(chunks(events).find((c) => c.type === 'tool-output-error')!.errorText).toMatch(/^Rate limit "[^"]+" exceeded/)
    expect(chunks(events).some((c) => c.type === 'data-agent')).toBe(false)
    expect(textOf(events)).toBe('Out of budget.')
  })
})
