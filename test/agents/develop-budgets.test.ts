/** The develop loop's budgets (steps, tokens, wall time) and the refusals before any workspace is opened. */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { marker, processesWith, waitFor } from '../sandbox/support.ts'
import { agentHarness, call, isFinal, type AgentHarness } from './helpers.ts'

describe('develop budgets', () => {
  let h: AgentHarness
  beforeAll(async () => {
    h = await agentHarness({ AGENT_DEVELOP_MAX_STEPS: '3', AGENT_DEVELOP_MAX_TOKENS: '1000', AGENT_DEVELOP_TIME_LIMIT_SECONDS: '5' })
  })
  afterAll(() => h.close())

  async function develop(params: Record<string, unknown>) {
    const client = await h.connect()
    const taskId = await h.run(client, 'develop', params)
    const final = await client.next(isFinal(taskId), 30_000)
    client.close()
    return { taskId, final, messages: client.taskMessages(taskId) }
  }

  test('the step budget stops the loop; the task succeeds with what was done and says which budget ran out', async () => {
    h.model.queue = [1, 2, 3, 4, 5].map((n) => call('write_file', { path: `f${n}.txt`, content: `${n}\n` }))
    const { final, messages } = await develop({ instruction: 'Write files' })
    expect(final).toMatchObject({ type: 'result', output: { finished: false, stopped: 'steps', steps: 3, summary: null } })
    expect(final.output.files.map((f: { path: string }) => f.path)).toEqual(['f1.txt', 'f2.txt', 'f3.txt'])
    expect(messages.some((m) => m.type === 'log' && m.message === 'Stopped: the steps budget is spent')).toBe(true)
  })

  test('the token budget stops the loop after the call that spent it', async () => {
    h.model.queue = [
      { ...call('write_file', { path: 'a.txt', content: 'a' }), usage: { prompt_tokens: 900, completion_tokens: 200 } },
      call('write_file', { path: 'b.txt', content: 'b' }),
    ]
    const { final } = await develop({ instruction: 'Write files' })
    expect(final).toMatchObject({ type: 'result', output: { finished: false, stopped: 'tokens', steps: 1, tokens: 1100 } })
    expect(final.output.files).toEqual([{ path: 'a.txt', status: 'added' }])
  })

  test('the wall time budget kills a running command and stops the loop', async () => {
    const mark = marker('develop-deadline')
    h.model.queue = [call('run_command', { command: `sleep 60 # ${mark}` })]
    const { final, messages } = await develop({ instruction: 'Wait' })
    expect(final).toMatchObject({ type: 'result', output: { finished: false, stopped: 'time', steps: 1 } })
    expect(messages.some((m) => m.type === 'log' && m.message.startsWith(`$ sleep 60 # ${mark} → cancelled`))).toBe(true)
    expect(await waitFor(async () => (await processesWith(mark)).length === 0)).toBe(true)
  })

  test('an answer without a tool call ends the loop with its text as the summary', async () => {
    h.model.queue = [{ text: 'Nothing to change.' }]
    const { final } = await develop({ instruction: 'Look' })
    expect(final).toMatchObject({ type: 'result', output: { summary: 'Nothing to change.', finished: false, files: [], diff: '' } })
    expect(final.output.stopped).toBeUndefined()
  })

  test('an unknown import fails the task with not_found, and a malformed branch is refused before a task starts', async () => {
    const { final } = await develop({ importId: 'imp_missing', instruction: 'Fix it' })
    expect(final).toMatchObject({ type: 'error', status: 'failed', code: 'not_found' })
    const client = await h.connect()
    client.send({ type: 'agent_command', id: 'bad', command: 'develop', params: { instruction: 'x', branch: '../main' } })
    expect(await client.next((m) => m.id === 'bad')).toMatchObject({ type: 'error', code: 'invalid_message' })
    client.close()
  })
})
