/**
 * The enhanced turn: ask for a plan, work through it one step at a time, and check every piece of code
 * for real (transpile, then run it or the user's tests in the sandbox) before it counts, sending failures
 * back to the model for repair up to a number of attempts. Streamed as AI SDK UI message chunks, with
 * `data-plan`, `data-step` and `data-check` parts a UI can draw as a checklist; a caller that shows no stream is told
 * the same progress through an observer, and the outcome as the answer's text or a thrown StreamError.
 */
import { createMessageBuilder } from '../../src/llm/message-builder.ts'
import { streamModelText, textPart, type ModelCallContext } from '../../src/llm/model-call.ts'
import { StreamError, upstreamFailure, type ModelMessage, type ModelProvider } from '../../src/llm/provider.ts'
import { toModelMessages } from '../../src/llm/ui-messages.ts'
import type { Emit, UiMessage } from '../../src/llm/ui-stream.ts'
import type { SandboxVerdict } from '../../src/sandbox/index.ts'
import type { UsageMeter } from '../../src/usage/meter.ts'
import type { Turn } from '../chat/index.ts'
import { extractCode, parsePlan, trimOutput, type CodeLanguage } from './plan.ts'

/** The sandbox's verdicts, and two of the orchestration's own: no code in a repair, no sandbox on this machine. */
export type CheckVerdict = SandboxVerdict | 'no_code' | 'sandbox_unavailable'

/** What the orchestration needs of the sandbox. */
export interface CodeChecker {
  checkSyntax(language: CodeLanguage, code: string): { ok: true } | { ok: false; message: string }
  run(request: {
    language: CodeLanguage
    files: Record<string, string>
    mode: 'run' | 'test'
    entry?: string
    signal?: AbortSignal
  }): Promise<{ verdict: SandboxVerdict; output: string; exitCode: number | null; durationMs: number; truncated: boolean }>
}

export interface EnhancedOptions {
  /** Most plan steps worked through. */
  maxSteps: number
  /** Whole-turn time limit; remaining steps are skipped when it is reached. */
  timeLimitMs: number
  /** Check-and-repair rounds per piece of code, the first check included. */
  maxAttempts: number
  /** Tests (TypeScript, `bun test`) the code must pass; they import from `./main`. */
  tests?: string
}

/** The model the turn asks, and where its tokens are counted. */
export interface EnhancedModel {
  provider: ModelProvider
  /** Asked unless the turn names another model. */
  model: string
  meter?: Pick<UsageMeter, 'record'>
}

type StepStatus = 'pending' | 'running' | 'done' | 'passed' | 'failed' | 'skipped'

/** Where the code goes, and the tests beside it: bun tests for TypeScript and JavaScript, unittest for Python. */
const MAIN_FILES: Record<CodeLanguage, string> = { typescript: 'main.ts', javascript: 'main.js', python: 'main.py' }
const TEST_FILES: Record<CodeLanguage, string> = { typescript: 'main.test.ts', javascript: 'main.test.ts', python: 'test_main.py' }

const PLAN_PROMPT = (max: number) =>
  `Before answering, plan. Reply with JSON only: {"steps": ["..."]}, at most ${max} short imperative steps. ` +
  'Keep it to the steps the request really needs; one step is fine for a simple request.'

const STEP_PROMPT = (index: number, total: number, title: string, tests?: string) =>
  `Now carry out step ${index + 1} of ${total}: ${title}\n` +
  'When the step needs code, write the complete program in ONE fenced block tagged ts, js (runnable as it is with Bun) or py (Python 3, standard library only); ' +
  'define what the tests import.' +
  (tests ? `\nThe code must pass these tests (they import from main):\n\`\`\`\n${tests}\n\`\`\`` : '')

const REPAIR_PROMPT = (verdict: string, output: string) =>
  `The code did not pass its check (${verdict}). Output:\n\`\`\`\n${output}\n\`\`\`\n` +
  'Find the fault and answer with the complete corrected program in ONE fenced block, in the same language (ts, js or py).'

/** What a turn reports to a caller that does not read its UI stream: the plan, each step as it starts, each check. */
export interface TurnObserver {
  /** The plan is made: the titles of its steps, in order. */
  planned?(steps: readonly string[]): void
  /** Step `index` (from 0) of the plan begins. */
  stepStarted?(index: number, title: string): void
  /** A step's code was checked, or a repair brought no code (`no_code`). */
  checked?(check: CheckReport): void
}

export interface CheckReport {
  /** The plan step, from 0. */
  step: number
  /** From 1; the first check is attempt 1. */
  attempt: number
  maxAttempts: number
  verdict: CheckVerdict
  passed: boolean
}

/** The turn as a UI message stream: its chunks go to `outerEmit`; a failure ends the stream with an error (or abort) chunk. */
export async function runEnhancedTurn(
  services: EnhancedModel,
  checker: CodeChecker,
  options: EnhancedOptions,
  turn: Turn,
  outerEmit: Emit,
  turnSignal: AbortSignal,
): Promise<UiMessage> {
  const builder = createMessageBuilder(turn.messageId)
  const emit: Emit = (chunk) => {
    builder.add(chunk)
    outerEmit(chunk)
  }
  const work = new EnhancedTurn(services, checker, options, turn, emit, turnSignal)
  try {
    await work.run()
    return builder.message('complete')
  } catch (err) {
    const failure = turnFailure(err, turnSignal)
    if (failure.code === 'generation_cancelled') emit({ type: 'abort', reason: `${failure.code}: ${failure.message}` })
    else emit({ type: 'error', errorText: `${failure.code}: ${failure.message}` })
    return builder.message('interrupted')
  } finally {
    work.stop()
  }
}

/**
 * The turn for a caller that shows no UI stream: its progress goes to `observer`, it resolves to its answer's text,
 * and a failure is thrown as the StreamError (a stable code and a message) a stream would end with.
 */
export async function answerEnhancedTurn(
  services: EnhancedModel,
  checker: CodeChecker,
  options: EnhancedOptions,
  turn: Turn,
  signal: AbortSignal,
  observer: TurnObserver = {},
): Promise<{ text: string }> {
  const builder = createMessageBuilder(turn.messageId)
  const work = new EnhancedTurn(services, checker, options, turn, (chunk) => builder.add(chunk), signal, observer)
  try {
    await work.run()
  } catch (err) {
    throw turnFailure(err, signal)
  } finally {
    work.stop()
  }
  const parts = builder.message('complete').parts
  return { text: parts.map((part) => (part.type === 'text' ? (part.text as string) : '')).join('') }
}

/** What ended a turn early, as a stable code and a message: the turn's own abort reason when it carries one. */
const turnFailure = (err: unknown, turnSignal: AbortSignal): StreamError =>
  turnSignal.aborted && turnSignal.reason instanceof StreamError ? turnSignal.reason : upstreamFailure(err)

/** One turn's work: the plan, then each step, its code checked and repaired, then the summary. */
class EnhancedTurn {
  /** The time limit ends the work in hand; the turn still closes with a summary. */
  private readonly deadline = new AbortController()
  private readonly timer: ReturnType<typeof setTimeout>
  private readonly signal: AbortSignal
  private readonly context: ModelCallContext
  private readonly messages: ModelMessage[]
  private steps: { title: string; status: StepStatus }[] = []
  private readonly outcomes: { index: number; verdict: CheckVerdict; attempts: number }[] = []

  constructor(
    services: EnhancedModel,
    private readonly checker: CodeChecker,
    private readonly options: EnhancedOptions,
    private readonly turn: Turn,
    private readonly emit: Emit,
    private readonly turnSignal: AbortSignal,
    private readonly observer: TurnObserver = {},
  ) {
    this.timer = setTimeout(
      () => this.deadline.abort(new StreamError('generation_timeout', `The ${Math.round(options.timeLimitMs / 1000)} s time limit was reached`)),
      options.timeLimitMs,
    )
    this.signal = AbortSignal.any([turnSignal, this.deadline.signal])
    let partCounter = 0
    this.context = {
      provider: services.provider,
      meter: services.meter,
      caller: { orgId: turn.orgId, userId: turn.userId },
      model: turn.model ?? services.model,
      emit,
      signal: this.signal,
      nextPartId: (kind) => `${kind}-${turn.messageId}-${++partCounter}`,
    }
    this.messages = [
      { role: 'system', content: turn.system ?? 'You are a careful software engineer on a real-time AI development platform. Work step by step.' },
      ...toModelMessages(turn.history),
    ]
  }

  /** Emits the turn from its start to its finish; throws what ended it otherwise. */
  async run(): Promise<void> {
    const { emit } = this
    emit({ type: 'start', messageId: this.turn.messageId })
    let finishReason: 'stop' | 'length' = 'stop'
    try {
      await this.workThroughPlan()
    } catch (err) {
      if (!(this.deadline.signal.aborted && !this.turnSignal.aborted)) throw err
      // Out of time: what is unfinished is skipped, and the summary says so.
      finishReason = 'length'
      for (const step of this.steps) if (step.status === 'pending' || step.status === 'running') step.status = 'skipped'
      if (this.steps.length) this.showPlan()
      emit({ type: 'finish-step' })
    }
    emit({ type: 'start-step' })
    this.say(summary(this.steps, this.outcomes, this.options, finishReason === 'length'))
    emit({ type: 'finish-step' })
    emit({ type: 'finish', finishReason })
  }

  stop() {
    clearTimeout(this.timer)
  }

  private async workThroughPlan() {
    const { emit, messages, options } = this
    emit({ type: 'start-step' })
    const planText = await streamModelText(this.context, [...messages, { role: 'user', content: PLAN_PROMPT(options.maxSteps) }], { silent: true })
    const steps = (this.steps = parsePlan(planText, options.maxSteps).map((title) => ({ title, status: 'pending' as StepStatus })))
    this.showPlan()
    this.observer.planned?.(steps.map((s) => s.title))
    emit({ type: 'finish-step' })
    messages.push({ role: 'assistant', content: `Plan:\n${steps.map((s, i) => `${i + 1}. ${s.title}`).join('\n')}` })

    for (let index = 0; index < steps.length; index++) {
      const step = steps[index]!
      emit({ type: 'start-step' })
      step.status = 'running'
      this.showPlan()
      this.showStep(index)
      this.observer.stepStarted?.(index, step.title)
      messages.push({ role: 'user', content: STEP_PROMPT(index, steps.length, step.title, options.tests) })
      const answer = await streamModelText(this.context, messages)
      messages.push({ role: 'assistant', content: answer })
      if (extractCode(answer)) {
        const outcome = await this.checkAndRepair(index, answer)
        this.outcomes.push({ index, ...outcome })
        step.status = outcome.verdict === 'passed' ? 'passed' : 'failed'
        this.showStep(index, { verdict: outcome.verdict, attempts: outcome.attempts })
      } else {
        step.status = 'done'
        this.showStep(index)
      }
      this.showPlan()
      emit({ type: 'finish-step' })
    }
  }

  /** Checks the code, asking for repairs, until it passes or the attempts run out. */
  private async checkAndRepair(index: number, firstAnswer: string): Promise<{ verdict: CheckVerdict; attempts: number }> {
    const { options, messages, signal } = this
    let code = extractCode(firstAnswer)!
    for (let attempt = 1; ; attempt++) {
      const syntax = this.checker.checkSyntax(code.language, code.code)
      const result = syntax.ok ? await this.runCode(code) : { verdict: 'syntax_error' as const, output: syntax.message, exitCode: null, durationMs: 0 }
      const verdict = result.verdict
      this.showCheck({
        step: index,
        attempt,
        maxAttempts: options.maxAttempts,
        language: code.language,
        mode: syntax.ok ? (options.tests ? 'test' : 'run') : 'transpile',
        verdict,
        passed: verdict === 'passed',
        exitCode: result.exitCode,
        durationMs: Math.round(result.durationMs),
        output: trimOutput(result.output),
      })
      if (verdict === 'passed' || verdict === 'sandbox_unavailable' || attempt >= options.maxAttempts) return { verdict, attempts: attempt }
      if (signal.aborted) throw signal.reason
      messages.push({ role: 'user', content: REPAIR_PROMPT(verdict, trimOutput(result.output, 4000)) })
      const repair = await streamModelText(this.context, messages)
      messages.push({ role: 'assistant', content: repair })
      const repaired = extractCode(repair)
      if (!repaired) {
        this.showCheck({ step: index, attempt: attempt + 1, maxAttempts: options.maxAttempts, verdict: 'no_code', passed: false, output: '' })
        return { verdict: 'no_code', attempts: attempt + 1 }
      }
      code = repaired
    }
  }

  /** Runs the code, or the user's tests against it, in the sandbox. */
  private runCode(code: {
    language: CodeLanguage
    code: string
  }): Promise<{ verdict: CheckVerdict; output: string; exitCode: number | null; durationMs: number }> {
    const { options } = this
    const mainFile = MAIN_FILES[code.language]
    return this.checker
      .run({
        language: code.language,
        files: { [mainFile]: code.code, ...(options.tests ? { [TEST_FILES[code.language]]: options.tests } : {}) },
        mode: options.tests ? 'test' : 'run',
        entry: mainFile,
        signal: this.signal,
      })
      .catch((err: Error) => {
        // A machine without isolation refuses runs; the code then stays unchecked, and the answer says so.
        if (err.name !== 'SandboxUnavailableError') throw err
        return { verdict: 'sandbox_unavailable' as const, output: err.message, exitCode: null, durationMs: 0 }
      })
  }

  private showPlan() {
    this.emit({ type: 'data-plan', id: 'plan', data: { steps: this.steps.map((s, index) => ({ index, ...s })) } })
  }

  private showStep(index: number, extra: Record<string, unknown> = {}) {
    const step = this.steps[index]!
    this.emit({ type: 'data-step', id: `step-${index}`, data: { index, title: step.title, status: step.status, ...extra } })
  }

  /** A `data-check` part, and its verdict to the observer. */
  private showCheck(data: CheckReport & Record<string, unknown>) {
    this.emit({ type: 'data-check', id: `check-${data.step}-${data.attempt}`, data })
    const { step, attempt, maxAttempts, verdict, passed } = data
    this.observer.checked?.({ step, attempt, maxAttempts, verdict, passed })
  }

  private say(text: string) {
    const part = textPart(this.emit, 'text', () => this.context.nextPartId('text'))
    part.delta(text)
    part.end()
  }
}

function summary(
  steps: { title: string; status: StepStatus }[],
  outcomes: { index: number; verdict: CheckVerdict; attempts: number }[],
  options: EnhancedOptions,
  outOfTime: boolean,
): string {
  const lines: string[] = []
  for (const o of outcomes) {
    const step = `Step ${o.index + 1} (${steps[o.index]!.title})`
    if (o.verdict === 'passed')
      lines.push(`${step}: the code passed its ${options.tests ? 'tests' : 'run'} on attempt ${o.attempts} of ${options.maxAttempts}.`)
    else lines.push(`${step}: the code did NOT pass after ${o.attempts} attempt${o.attempts === 1 ? '' : 's'} (last verdict: ${o.verdict}).`)
  }
  if (outcomes.length === 0) lines.push('No code was produced, so nothing needed checking.')
  if (outOfTime)
    lines.push(`Stopped at the ${Math.round(options.timeLimitMs / 1000)} s time limit; ${steps.filter((s) => s.status === 'skipped').length} step(s) skipped.`)
  const passed = outcomes.length > 0 && outcomes.every((o) => o.verdict === 'passed')
  return `\n\n**Result:** ${passed ? 'all code checks passed.' : outcomes.length ? 'some code did not pass its checks.' : 'done.'}\n${lines.join('\n')}`
}
