/**
 * Conversations, not one-shot tasks: `continue` goes on from an ended develop task with a follow-up instruction, in
 * its workspace and with its conversation, and diffs against the original base. Only one follow-up takes a task's
 * workspace; another user's task, a task still running and a task with no conversation are refused.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { ModelMessage } from '../../src/llm/provider.ts'
import { answerEveryCall, condenseConversation } from '../../plugins/agents/develop/condense.ts'
import { userWithRole } from '../helpers.ts'
import { agentHarness, call, isFinal, type AgentHarness } from './helpers.ts'

describe('continue', () => {
  let h: AgentHarness
  beforeAll(async () => {
    h = await agentHarness()
  })
  afterAll(() => h.close())

  async function runTask(command: string, params: Record<string, unknown>) {
    const client = await h.connect()
    const taskId = await h.run(client, command, params)
    const final = await client.next(isFinal(taskId), 60_000)
    client.close()
    return { taskId, final }
  }
  const files = async (taskId: string, path = '/diff') =>
    fetch(`${h.url}/api/agents/tasks/${taskId}${path}`, { headers: { authorization: `Bearer ${h.token}` } })

  test('a follow-up goes on in the same workspace with the earlier conversation, and its diff is against the original base', async () => {
    h.model.queue = [
      call('write_file', { path: 'sum.ts', content: 'export const sum = (a: number, b: number) => a + b\n' }),
      call('finish', { summary: 'Added sum.' }),
    ]
    const first = await runTask('develop', { instruction: 'Add a sum function', checks: ['test -f sum.ts'] })
    expect(first.final).toMatchObject({ type: 'result', output: { finished: true, files: [{ path: 'sum.ts', status: 'added' }] } })

    h.model.queue = [
      call('write_file', { path: 'sum.test.ts', content: "import { sum } from './sum'\nif (sum(2, 3) !== 5) throw new Error('sum')\n" }),
      call('run_command', { command: 'bun sum.test.ts && echo ok' }),
      call('finish', { summary: 'Added a test.' }),
    ]
    const asked = h.model.completions.length
    const second = await runTask('continue', { taskId: first.taskId, message: 'Now add a test for it' })
    expect(second.final.type).toBe('result')
    const output = second.final.output
    expect(output.files).toEqual([
      { path: 'sum.test.ts', status: 'added' },
      { path: 'sum.ts', status: 'added' },
    ])
    expect(output.branch).toBe(`agent/${second.taskId}`)
    // The earlier checks carry over, and the model saw the whole earlier conversation, then the follow-up.
    expect(output.checks).toMatchObject([{ command: 'test -f sum.ts', passed: true }])
    const firstRequest = h.model.completions[asked]!.messages as { role: string; content: string | null; tool_calls?: unknown[] }[]
    expect(firstRequest[1]!.content).toContain('Add a sum function')
    expect(firstRequest.some((m) => m.role === 'assistant' && JSON.stringify(m.tool_calls).includes('write_file'))).toBe(true)
    expect(firstRequest.at(-1)).toMatchObject({ role: 'user' })
    expect(firstRequest.at(-1)!.content).toStartWith('Follow-up: Now add a test for it')
    expect(String(h.model.completions.at(-1)!.messages.at(-1).content)).toContain('ok')

    // The workspace moved on with the follow-up: the earlier task's reads find it gone, and it cannot be taken twice.
    expect((await files(first.taskId)).status).toBe(404)
    expect((await (await files(second.taskId)).json()).files).toEqual(output.files)
    const again = await runTask('continue', { taskId: first.taskId, message: 'Once more' })
    expect(again.final).toMatchObject({ type: 'error', code: 'workspace_not_found' })

    // A follow-up of the follow-up goes on from both.
    h.model.queue = [call('finish', { summary: 'Nothing more.' })]
    const third = await runTask('continue', { taskId: second.taskId, message: 'Anything else?' })
    expect(third.final).toMatchObject({ type: 'result', output: { finished: true } })
    const thirdRequest = JSON.stringify(h.model.completions.at(-1)!.messages)
    expect(thirdRequest).toContain('Follow-up: Now add a test for it')
    expect(thirdRequest).toContain('Follow-up: Anything else?')
  })

  test("another user's task, a task that is not a develop task, and an unknown one are refused", async () => {
    h.model.queue = [call('finish', { summary: 'done' })]
    const mine = await runTask('develop', { instruction: 'Nothing' })
    const stranger = await userWithRole(h.t, 'member')
    const client = await h.connect(stranger.token)
    const refusedId = await h.run(client, 'continue', { taskId: mine.taskId, message: 'Take it' })
    expect(await client.next(isFinal(refusedId), 30_000)).toMatchObject({ type: 'error', code: 'task_not_found' })
    client.close()
    const status = await runTask('status', {})
    expect((await runTask('continue', { taskId: status.taskId, message: 'x' })).final).toMatchObject({ type: 'error', code: 'validation_failed' })
    expect((await runTask('continue', { taskId: 'task_unknown', message: 'x' })).final).toMatchObject({ type: 'error', code: 'task_not_found' })
    // The refusals left the task's workspace where it was.
    expect((await files(mine.taskId)).status).toBe(200)
  })
})

describe('condensing an earlier conversation', () => {
  const exchange = (i: number, answer: string): ModelMessage[] => [
    { role: 'assistant', content: null, tool_calls: [{ id: `c${i}`, type: 'function', function: { name: 'read_file', arguments: `{"path":"f${i}"}` } }] },
    { role: 'tool', tool_call_id: `c${i}`, content: answer },
  ]
  const conversation: ModelMessage[] = [
    { role: 'system', content: 'system' },
    { role: 'user', content: 'the first instruction' },
    ...Array.from({ length: 60 }, (_, i) => exchange(i, `answer ${i} `.repeat(400))).flat(),
  ]

  test('a conversation within the budget is kept whole', () => {
    expect(condenseConversation(conversation.slice(0, 10), 1_000_000)).toEqual(conversation.slice(0, 10))
  })

  test('past the budget: the head and the recent exchanges stay whole, older answers are cut, the oldest exchanges give way with a note', () => {
    const budget = 40_000
    const condensed = condenseConversation(conversation, budget)
    expect(JSON.stringify(condensed).length).toBeLessThanOrEqual(budget + 2 * condensed.length)
    expect(condensed.slice(0, 2)).toEqual(conversation.slice(0, 2))
    expect(condensed.slice(-12)).toEqual(conversation.slice(-12))
    expect(condensed[2]).toMatchObject({ role: 'user' })
    expect(String(condensed[2]!.content)).toMatch(/^\[\d+ earlier steps of this conversation are left out/)
    // Every tool answer follows the assistant message that called it.
    for (const [i, message] of condensed.entries()) if (message.role === 'tool') expect(JSON.stringify(condensed[i - 1])).toContain(message.tool_call_id)
  })
})

describe('a conversation cut in the middle of a turn', () => {
  test('every call gets an answer, after those it has, so a model provider takes the conversation', () => {
    const call = (id: string) => ({ id, type: 'function' as const, function: { name: 'read_file', arguments: '{}' } })
    const cut: ModelMessage[] = [
      { role: 'system', content: 's' },
      { role: 'user', content: 'u' },
      { role: 'assistant', content: null, tool_calls: [call('a'), call('b')] },
      { role: 'tool', tool_call_id: 'a', content: 'answer a' },
      { role: 'assistant', content: null, tool_calls: [call('c')] },
    ]
    expect(answerEveryCall(cut)).toEqual([
      ...cut.slice(0, 4),
      { role: 'tool', tool_call_id: 'b', content: 'Not answered: the task ended before this call finished.' },
      cut[4]!,
      { role: 'tool', tool_call_id: 'c', content: 'Not answered: the task ended before this call finished.' },
    ])
    expect(answerEveryCall(cut.slice(0, 2))).toEqual(cut.slice(0, 2))
  })
})
