/**
 * The develop command with a scripted model issuing tool calls, on a repository served over git HTTP and imported:
 * the loop, its result and diff, the workspace API, and cancelling a long command.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createHash } from 'node:crypto'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { startGitServer, type GitServer } from '../fakes/git-server.ts'
import { userWithRole } from '../helpers.ts'
import { marker, processesWith, waitFor } from '../sandbox/support.ts'
import { agentHarness, importRepository, call, expectContiguous, isFinal, type AgentHarness } from './helpers.ts'

const BROKEN = 'export const sum = (a: number, b: number) => a - b\n'
const FIXED = 'export const sum = (a: number, b: number) => a + b\n'
const TESTS =
  "import { expect, test } from 'bun:test'\nimport { sum } from './sum'\ntest('adds', () => {\n  expect(sum(2, 3)).toBe(5)\n  expect(sum(2, 2)).toBe(4)\n})\n"

const blob = (text: string) =>
  createHash('sha1')
    .update(`blob ${Buffer.byteLength(text)}\0${text}`)
    .digest('hex')

describe('develop', () => {
  let git: GitServer
  let h: AgentHarness
  let importId: string
  beforeAll(async () => {
    git = startGitServer()
    h = await agentHarness({ IMPORT_ALLOW_HOSTS: `127.0.0.1:${git.port}` })
    git.createRepository('acme/calc', { 'README.md': '# Calc\n', 'src/sum.ts': BROKEN, 'src/sum.test.ts': TESTS })
    importId = (await importRepository(h, git.urlOf('acme/calc'))).id
  })
  afterAll(async () => {
    await h.close()
    await git.close()
  })

  test('the agent reads, edits, sees the tests fail, edits again, sees them pass and finishes with exactly the expected diff', async () => {
    h.model.queue = [
      call('read_file', { path: 'src/sum.ts' }),
      call('edit_file', { path: 'src/sum.ts', old_text: 'a - b', new_text: 'a * b' }),
      call('run_command', { command: 'bun test' }),
      call('edit_file', { path: 'src/sum.ts', old_text: 'a * b', new_text: 'a + b' }),
      call('run_command', { command: 'bun test' }),
      call('finish', { summary: 'sum subtracted; it now adds.' }),
    ]
    const client = await h.connect()
    const taskId = await h.run(client, 'develop', { importId, instruction: 'Make the tests pass', checks: ['bun test'] })
    const final = await client.next(isFinal(taskId), 60_000)
    expect(final).toMatchObject({ type: 'result' })
    const output = final.output
    expect(output).toMatchObject({
      summary: 'sum subtracted; it now adds.',
      finished: true,
      steps: 6,
      files: [{ path: 'src/sum.ts', status: 'modified' }],
      checks: [{ command: 'bun test', verdict: 'passed', exitCode: 0, passed: true }],
      branch: `agent/${taskId}`,
    })
    expect(output.base.importId).toBe(importId)
    expect(output.diff).toBe(
      [
        'diff --git a/src/sum.ts b/src/sum.ts',
        `index ${blob(BROKEN)}..${blob(FIXED)} 100644`,
        '--- a/src/sum.ts',
        '+++ b/src/sum.ts',
        '@@ -1 +1 @@',
        '-export const sum = (a: number, b: number) => a - b',
        '+export const sum = (a: number, b: number) => a + b',
        '',
      ].join('\n'),
    )
    // What the model was told after each tool call: the file, then the failing run, then the passing one.
    const toolAnswers = h.model.completions.slice(-6).map((body) => body.messages.at(-1))
    expect(toolAnswers[1].content).toContain(BROKEN.trim())
    expect(toolAnswers[1].content).toStartWith('src/sum.ts line 1 of 1 (the whole file)\n1\texport const sum')
    expect(toolAnswers[2].content).toStartWith('Edited src/sum.ts: line 1 now holds what was 1 line.')
    expect(toolAnswers[3].content).toMatch(/^exit 1 · \d+\.\d s \(limit \d+ s\)\n/)
    expect(toolAnswers[3].content).toContain('1 fail')
    expect(toolAnswers[5].content).toMatch(/^exit 0 · /)
    expect(toolAnswers[5].content).toContain('1 pass')
    // The model was offered the tools.
    expect(h.model.completions.at(-1)!.tools.map((t: { function: { name: string } }) => t.function.name)).toEqual([
      'list_files',
      'find_file',
      'search_code',
      'read_file',
      'edit_file',
      'insert',
      'undo_edit',
      'write_file',
      'delete_file',
      'run_command',
      'finish',
    ])

    const messages = client.taskMessages(taskId)
    expectContiguous(messages)
    const steps = messages.filter((m) => m.type === 'progress' && m.step).map((m) => m.step)
    // Each step after the first states the budgets spent so far.
    expect(steps[1]).toMatch(/^read_file src\/sum\.ts · step 1\/50 · [\d,]+\/1,000,000 tokens · \d+\/480 s$/)
    expect(steps[7]).toMatch(/^Running 1 check · step 6\/50 · [\d,]+\/1,000,000 tokens · \d+\/480 s$/)
    expect(steps.map((s) => s.split(' · ')[0])).toEqual([
      'Opening a workspace on the import',
      'read_file src/sum.ts',
      'edit_file src/sum.ts',
      'run_command bun test',
      'edit_file src/sum.ts',
      'run_command bun test',
      'finish',
      'Running 1 check',
    ])
    // Once a step has finished, each later step carries an ETA; the steps counted are the task's own, not its budget of 50.
    expect(
      messages
        .filter((m) => m.type === 'progress' && m.step)
        .slice(1)
        .every((m) => typeof m.eta === 'string'),
    ).toBe(true)
    expect(Math.max(...messages.filter((m) => m.type === 'progress' && m.steps).map((m) => m.steps))).toBeLessThan(20)
    expect(output.budgets).toEqual({
      steps: { used: 6, limit: 50 },
      tokens: { used: output.tokens, limit: 1_000_000 },
      timeMs: { used: expect.any(Number), limit: 480_000 },
    })
    const logs = messages.filter((m) => m.type === 'log').map((m) => m.message)
    expect(logs.some((l) => l.startsWith('$ bun test → failed (exit 1)'))).toBe(true)
    expect(logs.some((l) => l.startsWith('$ bun test → passed (exit 0)'))).toBe(true)

    // The workspace stays readable after the task, by its owner only.
    const get = (path: string, token = h.token) => fetch(`${h.url}/api/agents/tasks/${taskId}${path}`, { headers: { authorization: `Bearer ${token}` } })
    const listing = await (await get('/files')).json()
    expect(listing.files.map((f: { path: string }) => f.path)).toEqual(['README.md', 'src/sum.test.ts', 'src/sum.ts'])
    expect(await (await get('/file?path=src/sum.ts')).text()).toBe(FIXED)
    expect(await (await get('/diff')).json()).toEqual({ diff: output.diff, files: output.files, leftOut: [] })
    expect((await get('/file?path=..%2F..%2Fservice.db')).status).toBe(400)
    expect((await get('/file?path=missing.ts')).status).toBe(404)
    const stranger = await userWithRole(h.t, 'member')
    expect((await get('/files', stranger.token)).status).toBe(404)
    expect((await get('/diff', stranger.token)).status).toBe(404)
    expect((await fetch(`${h.url}/api/agents/tasks/${taskId}/diff`)).status).toBe(401)
    client.close()
  })

  test('an edit whose text is missing or not unique is refused and the model is told why', async () => {
    h.model.queue = [
      call('write_file', { path: 'notes.txt', content: 'one\none\n' }),
      call('edit_file', { path: 'notes.txt', old_text: 'one', new_text: 'two' }),
      call('edit_file', { path: 'notes.txt', old_text: 'three', new_text: 'two' }),
      call('edit_file', { path: 'notes.txt', old_text: 'one\none', new_text: 'one\ntwo' }),
      call('delete_file', { path: 'README.md' }),
      call('finish', { summary: 'done' }),
    ]
    const client = await h.connect()
    const taskId = await h.run(client, 'develop', { instruction: 'Write notes' })
    const final = await client.next(isFinal(taskId), 30_000)
    const answers = h.model.completions.slice(-5).map((body) => body.messages.at(-1).content)
    expect(answers[1]).toBe('Refused: old_text occurs 2 times in notes.txt; include more surrounding text so it is unique')
    expect(answers[2]).toBe('Refused: old_text was not found in notes.txt')
    expect(answers[3]).toBe('Edited notes.txt: line 2 now holds what was 1 line. Lines 1-2 of 2 as the file now reads:\n1\tone\n2\ttwo')
    // A new project has no README: deleting it is refused, not fatal.
    expect(answers[4]).toContain('Refused: No file "README.md"')
    expect(final.output).toMatchObject({ base: null, files: [{ path: 'notes.txt', status: 'added' }] })
    expect(final.output.diff).toContain('+one\n+two\n')
    client.close()
  })

  test('the same call three times in a row gets a warning; the fifth is not run and ends the loop as stuck, the task succeeding with what it has', async () => {
    const read = call('read_file', { path: 'a.txt', lines: 5 })
    h.model.queue = [
      call('write_file', { path: 'a.txt', content: 'a\n' }),
      read,
      read,
      call('list_files', {}),
      read,
      read,
      read,
      read,
      // The same arguments in another order are the same call.
      call('read_file', { lines: 5, path: 'a.txt' }),
      call('finish', { summary: 'never reached' }),
    ]
    const client = await h.connect()
    const taskId = await h.run(client, 'develop', { instruction: 'Read a.txt' })
    const final = await client.next(isFinal(taskId), 30_000)
    h.model.queue = []
    expect(final).toMatchObject({
      type: 'result',
      output: { finished: false, stopped: 'stuck', steps: 8, summary: null, files: [{ path: 'a.txt', status: 'added' }] },
    })
    const answers = h.model.completions
      .at(-1)!
      .messages.filter((m: { role: string }) => m.role === 'tool')
      .map((m: { content: string }) => m.content)
    expect(answers).toHaveLength(8)
    // Two in a row, and a different call in between, warn of nothing.
    for (const i of [1, 2, 3, 4, 5]) expect(answers[i]).not.toContain('[Warning')
    expect(answers[6]).toEndWith(
      '\n\n[Warning: this is the 3rd read_file call in a row with exactly these arguments, and its answer does not change. Do something else (other arguments, another tool, or finish); at 5 in a row the task stops as stuck.]',
    )
    expect(answers[7]).toContain('[Warning: this is the 4th read_file call in a row')
    const messages = client.taskMessages(taskId)
    expect(messages.some((m) => m.type === 'log' && m.message === 'Stopped: the same call came 5 times in a row (stuck)')).toBe(true)
    expect(messages.filter((m) => m.type === 'progress' && String(m.step).startsWith('read_file'))).toHaveLength(6)
    client.close()
  })

  test('cancelling in the middle of a long command kills it and ends the task cancelled', async () => {
    const mark = marker('develop-cancel')
    h.model.queue = [call('run_command', { command: `echo started > started; sleep 60 # ${mark}` })]
    const client = await h.connect()
    const taskId = await h.run(client, 'develop', { importId, instruction: 'Wait' })
    // The command really runs in the sandbox: it wrote into the workspace and its sleep is alive.
    const started = join(h.t.deps.config.dataDir, 'agent-workspaces', taskId, 'tree', 'started')
    expect(await waitFor(() => existsSync(started), 20_000)).toBe(true)
    expect(await waitFor(async () => (await processesWith(mark)).length > 0, 10_000)).toBe(true)
    client.send({ type: 'cancel', id: 'stop', taskId })
    const final = await client.next(isFinal(taskId), 15_000)
    expect(final).toMatchObject({ type: 'error', status: 'cancelled', code: 'task_cancelled' })
    expect(await waitFor(async () => (await processesWith(mark)).length === 0)).toBe(true)
    // The workspace is still readable after the cancel.
    const answer = await fetch(`${h.url}/api/agents/tasks/${taskId}/files`, { headers: { authorization: `Bearer ${h.token}` } })
    expect(answer.status).toBe(200)
    client.close()
  })

  test('cancelling while the model answers abandons its stream and ends the task cancelled', async () => {
    h.model.queue = [call('list_files', {}), { text: 'thinking '.repeat(1000), delayMs: 20 }]
    const client = await h.connect()
    const taskId = await h.run(client, 'develop', { instruction: 'Think slowly' })
    await client.next((m) => m.taskId === taskId && m.type === 'log' && String(m.message).startsWith('listed'), 20_000)
    expect(await waitFor(() => h.model.open > 0, 10_000)).toBe(true)
    const abandonedBefore = h.model.abandoned
    client.send({ type: 'cancel', id: 'stop-model', taskId })
    expect(await client.next(isFinal(taskId), 15_000)).toMatchObject({ type: 'error', status: 'cancelled', code: 'task_cancelled' })
    expect(await waitFor(() => h.model.abandoned > abandonedBefore, 10_000)).toBe(true)
    client.close()
  })

  test('the workspace is removed after the retention time', async () => {
    const short = await agentHarness({ AGENT_TASK_RETENTION_SECONDS: '1' })
    try {
      short.model.queue = [call('write_file', { path: 'a.txt', content: 'a' }), call('finish', { summary: 'done' })]
      const client = await short.connect()
      const taskId = await short.run(client, 'develop', { instruction: 'Write a' })
      await client.next(isFinal(taskId), 30_000)
      const dir = join(short.t.deps.config.dataDir, 'agent-workspaces', taskId)
      expect(existsSync(dir)).toBe(true)
      expect(await waitFor(() => !existsSync(dir), 5000)).toBe(true)
      client.close()
    } finally {
      await short.close()
    }
  })
})
