import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { extractCode, parsePlan, trimOutput } from '../../plugins/enhanced-chat/plan.ts'
import { ADMIN, makeApp, userWithRole } from '../helpers.ts'
import { chatHarness, chunks, readEvents, textOf, type ChatHarness } from '../chat/helpers.ts'

describe('reading the model', () => {
  test('plans come as JSON, fenced JSON or a list, capped', () => {
    expect(parsePlan('{"steps": ["a", "b", "c"]}', 2)).toEqual(['a', 'b'])
    expect(parsePlan('```json\n["write it", "test it"]\n```', 5)).toEqual(['write it', 'test it'])
    expect(parsePlan('Plan:\n1. First\n2) Second\n- Third', 5)).toEqual(['First', 'Second', 'Third'])
    expect(parsePlan('just do it', 5)).toEqual(['just do it'])
  })

  test('the last TypeScript, JavaScript or Python block is the code', () => {
    expect(extractCode('a\n```ts\nlet x = 1\n```\nthen\n```javascript\nlet y = 2\n```')).toEqual({ language: 'javascript', code: 'let y = 2\n' })
    expect(extractCode('```python\nprint(1)\n```')).toEqual({ language: 'python', code: 'print(1)\n' })
    expect(extractCode('```py\nprint(2)\n```')).toEqual({ language: 'python', code: 'print(2)\n' })
    expect(extractCode('```ruby\nputs 1\n```')).toBeUndefined()
    expect(extractCode('no code')).toBeUndefined()
    expect(trimOutput('x'.repeat(3000), 100)).toEndWith('x'.repeat(100))
  })
})

const addTests = `import { expect, test } from 'bun:test'
import { add } from './main'
test('adds', () => expect(add(2, 3)).toBe(5))
`
const fence = (code: string) => `Here is the code:\n\`\`\`ts\n${code}\n\`\`\`\n`
const buggy = 'export function add(a: number, b: number) { return a - b }'
const fixed = 'export function add(a: number, b: number) { return a + b }'

describe('POST /api/enhanced-chat', () => {
  let h: ChatHarness
  beforeAll(async () => {
    h = await chatHarness({}, { search: false })
  })
  afterAll(() => h.close())

  const post = (body: unknown) =>
    fetch(`${h.url}/api/enhanced-chat`, { method: 'POST', headers: { 'content-type': 'application/json', ...h.headers }, body: JSON.stringify(body) })

  test('Python is debugged in the same sandbox: a syntax error, then a failing unittest, then the fix that passes', async () => {
    const py = (code: string) => `Here it is:\n\`\`\`python\n${code}\n\`\`\`\n`
    const pyTests =
      'import unittest\nfrom main import add\n\nclass AddTest(unittest.TestCase):\n    def test_adds(self):\n        self.assertEqual(add(2, 3), 5)\n'
    h.model.queue = [
      { text: '{"steps": ["Write add"]}' },
      { text: py('def add(a, b)\n    return a - b') },
      { text: py('def add(a, b):\n    return a - b') },
      { text: py('def add(a, b):\n    return a + b') },
    ]
    const events = await readEvents(
      await post({ messages: [{ role: 'user', content: 'write add(a, b) in Python' }], tests: pyTests, options: { maxAttempts: 3 } }),
    )
    const checks = chunks(events)
      .filter((c) => c.type === 'data-check')
      .map((c) => c.data)
    expect(checks.map((c) => [c.attempt, c.language, c.verdict])).toEqual([
      [1, 'python', 'syntax_error'],
      [2, 'python', 'failed'],
      [3, 'python', 'passed'],
    ])
    // The parser's own message, from inside the sandbox, naming the file and the line.
    expect(checks[0].output).toStartWith('main.py:1:')
    expect(checks[0].output).toContain('SyntaxError')
    expect(checks[1].output).toContain('AssertionError: -1 != 5')
    expect(checks[2].output).toContain('OK')
    expect(h.model.completions.at(-1)!.messages.at(-1).content).toContain('AssertionError')
  })

  test('a bug is fixed on the second attempt: the plan, each check and the verdict are streamed', async () => {
    h.model.queue = [{ text: '{"steps": ["Write add"]}' }, { text: fence(buggy) }, { text: fence(fixed) }]
    const response = await post({ messages: [{ role: 'user', content: 'write add(a, b)' }], tests: addTests })
    expect(response.headers.get('x-vercel-ai-ui-message-stream')).toBe('v1')
    const events = await readEvents(response)
    const all = chunks(events)
    const plans = all.filter((c) => c.type === 'data-plan')
    expect(plans[0]!.data.steps).toEqual([{ index: 0, title: 'Write add', status: 'pending' }])
    expect(plans.at(-1)!.data.steps[0].status).toBe('passed')
    const checks = all.filter((c) => c.type === 'data-check').map((c) => c.data)
    expect(checks.map((c) => [c.attempt, c.verdict, c.mode])).toEqual([
      [1, 'failed', 'test'],
      [2, 'passed', 'test'],
    ])
    expect(checks[0].output).toContain('Expected: 5')
    // The failure went back to the model with the output.
    const repairRequest = h.model.completions.at(-1)!
    expect(repairRequest.messages.at(-1).content).toContain('did not pass its check (failed)')
    expect(repairRequest.messages.at(-1).content).toContain('Expected: 5')
    expect(textOf(events)).toContain('all code checks passed')
    expect(textOf(events)).toContain('on attempt 2 of 3')
    expect(all.filter((c) => c.type === 'start-step').length).toBe(all.filter((c) => c.type === 'finish-step').length)
    expect(all.at(-1)).toMatchObject({ type: 'finish', finishReason: 'stop' })
  })

  test('a bug never fixed within the attempt limit: the answer says so', async () => {
    h.model.queue = [{ text: '{"steps": ["Write add"]}' }, { text: fence(buggy) }, { text: fence(buggy) }]
    const events = await readEvents(await post({ messages: [{ role: 'user', content: 'write add' }], tests: addTests, options: { maxAttempts: 2 } }))
    const checks = chunks(events)
      .filter((c) => c.type === 'data-check')
      .map((c) => c.data.verdict)
    expect(checks).toEqual(['failed', 'failed'])
    expect(textOf(events)).toContain('did NOT pass after 2 attempts')
    expect(
      chunks(events)
        .filter((c) => c.type === 'data-step')
        .at(-1)!.data,
    ).toMatchObject({ status: 'failed', attempts: 2 })
  })

  test('a syntax error is caught by the transpiler before anything runs, then the repaired program is run', async () => {
    h.model.queue = [
      { text: '{"steps": ["Print the answer", "Explain it"]}' },
      { text: fence('console.log(6 *)') },
      { text: fence('console.log(6 * 7)') },
      { text: 'It multiplies six by seven.' },
    ]
    const events = await readEvents(await post({ messages: [{ role: 'user', content: 'print 42' }] }))
    const checks = chunks(events)
      .filter((c) => c.type === 'data-check')
      .map((c) => c.data)
    expect(checks.map((c) => [c.verdict, c.mode])).toEqual([
      ['syntax_error', 'transpile'],
      ['passed', 'run'],
    ])
    expect(checks[1].output).toContain('42')
    const finalPlan = chunks(events)
      .filter((c) => c.type === 'data-plan')
      .at(-1)!.data.steps
    expect(finalPlan.map((s: any) => s.status)).toEqual(['passed', 'done'])
  })

  test('code that reaches for the service is contained and the service stays healthy', async () => {
    h.model.queue = [{ text: '["Look around"]' }, { text: fence(`const r = await fetch('${h.url}/health'); console.log('reached', r.status)`) }]
    const events = await readEvents(await post({ messages: [{ role: 'user', content: 'x' }], options: { maxAttempts: 1 } }))
    const check = chunks(events).find((c) => c.type === 'data-check')!.data
    expect(check.verdict).toBe('failed')
    expect(check.output).not.toContain('reached')
    expect((await fetch(`${h.url}/health`)).status).toBe(200)
  })

  test('the answer is stored with the chat and resumable like any chat stream', async () => {
    h.model.queue = [{ text: '["Say hi"]' }, { text: 'hi' }]
    const events = await readEvents(await post({ id: 'enhanced-1', messages: [{ role: 'user', content: 'greet' }] }))
    const chat = await fetch(`${h.url}/api/chat/enhanced-1`, { headers: h.headers }).then((r) => r.json())
    expect(chat.messages[1].parts.some((p: any) => p.type === 'data-plan')).toBe(true)
    const generation = events[0]!.id!.split(':')[0]
    const replay = await readEvents(await fetch(`${h.url}/api/chat/enhanced-1/stream`, { headers: { ...h.headers, 'last-event-id': `${generation}:2` } }))
    expect(replay.map((e) => e.id)).toEqual(events.slice(2).map((e) => e.id))
  })

  test("the model's reasoning streams as reasoning chunks within its step", async () => {
    h.model.queue = [
      { text: '["Think"]', reasoning: 'planning quietly' },
      { text: 'done', reasoning: 'weighing the options' },
    ]
    const events = await readEvents(await post({ messages: [{ role: 'user', content: 'think' }] }))
    const all = chunks(events)
    const reasoning = all.filter((c) => c.type === 'reasoning-delta').map((c) => c.delta)
    expect(reasoning).toEqual(['planning quietly', 'weighing the options'])
    const stepStart = all.findIndex((c) => c.type === 'data-step')
    expect(all.findIndex((c) => c.type === 'reasoning-delta' && c.delta === 'weighing the options')).toBeGreaterThan(stepStart)
  })

  test('without a model provider the route answers 503 not_configured', async () => {
    const t = await makeApp({ ADMIN_EMAIL: ADMIN.email, ADMIN_PASSWORD: ADMIN.password })
    const { accessToken } = await t.send('POST', '/auth/login', ADMIN).then((r) => r.json())
    const res = await t.send('POST', '/api/enhanced-chat', { messages: [{ role: 'user', content: 'x' }] }, { authorization: `Bearer ${accessToken}` })
    expect(res.status).toBe(503)
    expect((await res.json()).code).toBe('not_configured')
    await t.close()
  })

  test('bad input is refused, no token is 401 and a token without chat:write is 403', async () => {
    expect((await post({ messages: [{ role: 'user', content: 'x' }], options: { maxAttempts: 0 } })).status).toBe(422)
    expect((await post({ messages: [{ role: 'user', content: 'x' }], tests: '' })).status).toBe(422)
    const valid = JSON.stringify({ messages: [{ role: 'user', content: 'x' }] })
    const anonymous = await fetch(`${h.url}/api/enhanced-chat`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: valid })
    expect(anonymous.status).toBe(401)
    const viewer = await userWithRole(h.t, 'viewer')
    const refused = await fetch(`${h.url}/api/enhanced-chat`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${viewer.token}` },
      body: valid,
    })
    expect(refused.status).toBe(403)
  })
})
