/**
 * Development tasks, the parts the service adds around the model and the commands:
 *
 * 1. The sandbox's cost to start one command: `runCommand` of `true` (and of `bun --version`) in a workspace,
 *    against spawning `/bin/sh -c true` (and Bun) directly, median of 30 runs each, alternating; and `true` in a
 *    workspace of 5,000 files (100 directories), where the run takes over the files it does not own yet.
 * 2. The loop's own overhead per step with the model's time excluded: a develop task whose model is an
 *    in-process provider answering at once with one `read_file` call per step (no HTTP, no sandbox), timed per
 *    step; baseline: reading the same file with readFileSync.
 * 3. Tasks at once before a step's overhead doubles: 1, 2, 4, ... such tasks started together; the mean step
 *    time of each level against one task alone.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createModels } from '../src/llm/models.ts'
import type { ModelEvent, ModelProvider } from '../src/llm/provider.ts'
import { memoryLogger } from '../src/log.ts'
import { createSandbox } from '../src/sandbox/index.ts'
import { createWorkspaces, developCommand } from '../plugins/agents/index.ts'
import { printTable, ratioOf, type Row } from './lib/report.ts'

const COMMAND_RUNS = 30
const STEPS = 200
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!

/** Answers every request at once with one read_file call, `steps` times, then finish. */
function instantProvider(steps: number): ModelProvider {
  return {
    async *stream(request) {
      const calls = request.messages.filter((m) => m.role === 'tool').length
      // A window further on each time: the same call over and over would be stopped by the loop's repeat guard.
      const [name, args] = calls < steps ? ['read_file', { path: 'src/app.ts', start: 1 + (calls % 150) }] : ['finish', { summary: 'done' }]
      const events: ModelEvent[] = [
        { type: 'tool-call', index: 0, id: `call_${calls}`, name, argumentsDelta: JSON.stringify(args) },
        { type: 'usage', inputTokens: 10, outputTokens: 10 },
        { type: 'finish', reason: 'tool_calls' },
      ]
      yield events
    },
    generateImage: () => Promise.reject(new Error('not used')),
  }
}

async function time(run: () => Promise<unknown>): Promise<number> {
  const started = performance.now()
  await run()
  return performance.now() - started
}

export async function run(): Promise<Row[]> {
  const root = mkdtempSync(join(tmpdir(), 'develop-bench-'))
  const logger = memoryLogger()
  const sandbox = createSandbox({ bunPath: process.execPath, logger })
  const workspaces = createWorkspaces({ root: join(root, 'ws'), limits: { maxFiles: 10_000, maxBytes: 100 * 1024 * 1024 }, retentionSeconds: 3600, logger })
  const source = `${'export const line = 1\n'.repeat(200)}`
  try {
    // 1. Starting a command.
    const { tree } = await workspaces.create('task_bench_sandbox', [{ path: 'a.txt', bytes: new TextEncoder().encode('a') }])
    const direct = async (cmd: string[]) => {
      const child = Bun.spawn(cmd, { stdout: 'ignore', stderr: 'ignore', cwd: tree })
      await child.exited
    }
    const large = await workspaces.create(
      'task_bench_large',
      Array.from({ length: 5000 }, (_, i) => ({ path: `d${i % 100}/f${i}.ts`, bytes: new TextEncoder().encode('export const x = 1\n') })),
    )
    const sandboxedLarge: number[] = []
    const sandboxed: number[] = []
    const spawned: number[] = []
    const sandboxedBun: number[] = []
    const spawnedBun: number[] = []
    for (let i = 0; i < COMMAND_RUNS; i++) {
      sandboxed.push(await time(() => sandbox.runCommand({ directory: tree, command: 'true' })))
      sandboxedLarge.push(await time(() => sandbox.runCommand({ directory: large.tree, command: 'true' })))
      spawned.push(await time(() => direct(['/bin/sh', '-c', 'true'])))
      sandboxedBun.push(await time(() => sandbox.runCommand({ directory: tree, command: 'bun --version' })))
      spawnedBun.push(await time(() => direct([process.execPath, '--version'])))
    }

    // 2. One task's steps, the model answering at once.
    const models = createModels(instantProvider(STEPS), 'bench')
    const handler = developCommand({
      models,
      // An import of one file: the workspace is opened as for a real one.
      imports: {
        get: async () => ({ status: 'succeeded', commit: 'bench', repository: { id: 'repo_bench', name: 'bench/app' } }) as never,
        readFiles: async () => ({ commit: 'bench', files: [{ path: 'src/app.ts', bytes: new TextEncoder().encode(source) }], skipped: [] }),
      },
      codeIndex: { search: async () => [] },
      workspaces,
      sandbox,
      limits: { maxSteps: STEPS + 10, maxTokens: 1e9, timeLimitMs: 600_000, maxAnswerChars: 12_000, maxLogChars: 4000 },
    })
    let counter = 0
    const task = async () => {
      const taskId = `task_bench_${++counter}`
      const stepTimes: number[] = []
      let last = 0
      await handler.run({
        caller: { userId: 'bench', orgId: 'bench' },
        taskId,
        params: { importId: 'imp_bench', instruction: 'Read the file' },
        signal: new AbortController().signal,
        // From one tool step's start to the next: the model call, the tool, the log and the progress report.
        step(index) {
          const now = performance.now()
          if (last && index > 1 && index <= STEPS) stepTimes.push(now - last)
          last = now
        },
        log() {},
      })
      await workspaces.remove(taskId)
      return stepTimes
    }
    const directReads: number[] = []
    const file = join(root, 'app.ts')
    writeFileSync(file, source)
    for (let i = 0; i < STEPS; i++) directReads.push(await time(async () => readFileSync(file, 'utf8').split('\n')))
    await task() // warm-up
    const alone = median(await task())

    // 3. Tasks at once.
    let doubledAt: number | undefined
    const levels: string[] = []
    for (const tasks of [2, 4, 8, 16, 32]) {
      const all = (await Promise.all(Array.from({ length: tasks }, () => task()))).flat()
      const perStep = median(all)
      levels.push(`${tasks}: ${perStep.toFixed(2)} ms`)
      if (perStep >= 2 * alone) {
        doubledAt = tasks
        break
      }
    }
    const note = `median step time by tasks at once: 1: ${alone.toFixed(2)} ms, ${levels.join(', ')}`
    return [
      {
        figure: 'sandbox command start (true)',
        unit: 'ms',
        baseline: median(spawned),
        value: median(sandboxed),
        ratio: ratioOf(median(sandboxed), median(spawned)),
      },
      {
        figure: 'sandbox command start (true), 5,000-file workspace',
        unit: 'ms',
        baseline: median(spawned),
        value: median(sandboxedLarge),
        ratio: ratioOf(median(sandboxedLarge), median(spawned)),
      },
      {
        figure: 'sandbox command start (bun --version)',
        unit: 'ms',
        baseline: median(spawnedBun),
        value: median(sandboxedBun),
        ratio: ratioOf(median(sandboxedBun), median(spawnedBun)),
      },
      {
        figure: 'develop step overhead, model excluded (read_file)',
        unit: 'ms',
        baseline: median(directReads),
        value: alone,
        ratio: ratioOf(alone, median(directReads)),
        notes: [note],
      },
      {
        figure: 'develop tasks at once before a step takes twice as long',
        unit: 'tasks',
        baseline: 1,
        value: doubledAt ?? 64,
        ratio: null,
        notes: [doubledAt ? note : `${note}; not doubled at 32 tasks`],
      },
    ]
  } finally {
    await sandbox.close()
    await workspaces.close()
    rmSync(root, { recursive: true, force: true })
  }
}

if (import.meta.main) printTable(await run())
