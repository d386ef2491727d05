/**
 * The develop task's ETA comes from its own history (steps done, their mean time, the checks' last durations),
 * never from its step budget. A fake clock stands for time: the model, the commands and the checks each advance
 * it, and the progress is kept as the agent service keeps it (StepProgress on the same clock).
 */
import { afterAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createModels } from '../../src/llm/models.ts'
import type { ModelEvent, ModelProvider } from '../../src/llm/provider.ts'
import { memoryLogger } from '../../src/log.ts'
import type { SandboxCommandRequest, SandboxResult } from '../../src/sandbox/index.ts'
import { developCommand } from '../../plugins/agents/develop/develop.ts'
import { loopStepsAhead, StepPace, StepProgress } from '../../plugins/agents/tasks/eta.ts'
import { createWorkspaces } from '../../plugins/agents/workspaces/workspaces.ts'

class FakeClock {
  ms = 0
  now() {
    return this.ms
  }
}

const root = mkdtempSync(join(tmpdir(), 'develop-eta-test-'))
const workspaces = createWorkspaces({ root: join(root, 'ws'), limits: { maxFiles: 100, maxBytes: 1_000_000 }, retentionSeconds: 60, logger: memoryLogger() })
let n = 0

afterAll(async () => {
  await workspaces.close()
  rmSync(root, { recursive: true, force: true })
})

/** Seconds of an ETA as the protocol writes it (`45s`, `2m`, `1h5m`). */
const etaSeconds = (eta: string) => {
  const [, h, m, s] = /^(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?$/.exec(eta)!
  return Number(h ?? 0) * 3600 + Number(m ?? 0) * 60 + Number(s ?? 0)
}

/**
 * Runs a develop task whose model answers `calls` in turn, each answer taking `modelMs`; `bun test` takes
 * `checkMs` and any other command `commandMs`. Answers the progress as reported: label, total and ETA of each step.
 */
async function runTask(options: { maxSteps: number; calls: [string, Record<string, unknown>][]; modelMs: number; commandMs: number; checkMs: number }) {
  const clock = new FakeClock()
  const provider: ModelProvider = {
    async *stream(request) {
      clock.ms += options.modelMs
      const asked = request.messages.filter((m) => m.role === 'tool').length
      const [name, args] = options.calls[asked] ?? ['finish', { summary: 'done' }]
      const events: ModelEvent[] = [
        { type: 'tool-call', index: 0, id: `call_${asked}`, name, argumentsDelta: JSON.stringify(args) },
        { type: 'usage', inputTokens: 100, outputTokens: 10 },
        { type: 'finish', reason: 'tool_calls' },
      ]
      yield events
    },
    generateImage: () => Promise.reject(new Error('not used')),
  }
  const sandbox = {
    async runCommand(request: SandboxCommandRequest): Promise<SandboxResult> {
      const ms = request.command.includes('bun test') ? options.checkMs : options.commandMs
      clock.ms += ms
      return { verdict: 'passed', exitCode: 0, output: '', truncated: false, durationMs: ms }
    },
  }
  const handler = developCommand({
    models: createModels(provider, 'fake'),
    imports: { get: async () => undefined, readFiles: async () => undefined },
    codeIndex: { search: async () => [] },
    workspaces,
    sandbox,
    limits: { maxSteps: options.maxSteps, maxTokens: 1e9, timeLimitMs: 600_000, maxAnswerChars: 12_000, maxLogChars: 4000 },
    clock,
  })
  // As the agent service keeps a task's progress.
  const progress = new StepProgress(handler.steps, clock)
  const reported: { label: string; steps: number; eta: string | undefined }[] = []
  const output = (await handler.run({
    caller: { userId: 'user_eta', orgId: 'org_eta' },
    taskId: `task_eta_${++n}`,
    params: { instruction: 'Add a file', checks: ['bun test'] },
    signal: new AbortController().signal,
    step(index, label, steps) {
      if (steps !== undefined) progress.setTotal(steps)
      progress.start(index)
      reported.push({ label, steps: progress.steps, eta: progress.eta() })
    },
    log() {},
  })) as { durationMs: number; steps: number }
  return { reported, output, clock }
}

const shortTask: [string, Record<string, unknown>][] = [
  ['write_file', { path: 'a.txt', content: 'a\n' }],
  ['run_command', { command: 'bun test' }],
  ['read_file', { path: 'a.txt' }],
  ['finish', { summary: 'Added a.txt.' }],
]

describe('the ETA of a develop task', () => {
  test('the loop expects half as many steps again as it has made, at least 2, never more than its budget leaves', () => {
    expect(loopStepsAhead(0, 50)).toBe(2)
    expect(loopStepsAhead(4, 46)).toBe(2)
    expect(loopStepsAhead(10, 40)).toBe(5)
    expect(loopStepsAhead(10, 3)).toBe(3)
    expect(loopStepsAhead(50, 0)).toBe(0)
  })

  test('StepPace turns the time expected after a step into the total whose ETA, as StepProgress computes it, is that time', () => {
    const clock = new FakeClock()
    const progress = new StepProgress(4, clock)
    const pace = new StepPace(clock)
    pace.start()
    progress.start(0)
    clock.ms += 500
    pace.start()
    // 3 s expected after this step, at 500 ms a step: 6 steps after it.
    const total = pace.totalFor(1, 3000, 2)
    expect(total).toBe(8)
    progress.setTotal(total)
    progress.start(1)
    expect(progress.remainingMs()).toBe(3500)
    expect(progress.eta()).toBe('4s')
    // Before any step has finished there is no mean: the steps given are counted.
    expect(new StepPace(clock).totalFor(0, undefined, 3)).toBe(4)
  })

  test('a 3-second task reports an ETA of seconds at every step, and the same whether its step budget is 50 or 500', async () => {
    const small = await runTask({ maxSteps: 50, calls: shortTask, modelMs: 500, commandMs: 100, checkMs: 300 })
    const large = await runTask({ maxSteps: 500, calls: shortTask, modelMs: 500, commandMs: 100, checkMs: 300 })
    expect(small.clock.ms).toBeLessThanOrEqual(3500)
    expect(small.reported.map((r) => r.label.split(' · ')[0])).toEqual([
      'Opening an empty workspace',
      'write_file a.txt',
      'run_command bun test',
      'read_file a.txt',
      'finish',
      'Running 1 check',
    ])
    const etas = small.reported.slice(1).map((r) => r.eta!)
    for (const eta of etas) {
      expect(eta).toMatch(/^\d+s$/)
      expect(etaSeconds(eta)).toBeLessThanOrEqual(3)
    }
    // The budget's size plays no part: with the old estimate (every budgeted step left at the mean pace) a budget of 500 said minutes.
    expect(large.reported.map((r) => r.eta)).toEqual(small.reported.map((r) => r.eta))
    expect(Math.max(...small.reported.map((r) => r.steps))).toBeLessThan(15)
  })

  test('a check that took 20 s when the model ran it counts for 20 s in the ETA until the final checks are done', async () => {
    const { reported } = await runTask({ maxSteps: 50, calls: shortTask, modelMs: 500, commandMs: 100, checkMs: 20_000 })
    const at = (label: string) => reported.find((r) => r.label.startsWith(label))!
    // Before the check ran, it is counted as one step at the mean pace.
    expect(etaSeconds(at('run_command bun test').eta!)).toBeLessThan(5)
    // Once measured, the steps after it expect the 20 s of the final check.
    for (const label of ['read_file a.txt', 'finish', 'Running 1 check']) {
      const seconds = etaSeconds(at(label).eta!)
      expect(seconds).toBeGreaterThanOrEqual(18)
      expect(seconds).toBeLessThanOrEqual(30)
    }
  })
})
