/**
 * The `develop` command: a workspace (an import's files at its commit, or an empty project), then a loop in
 * which the model calls tools (read, search, edit, run commands in the sandbox) until it calls `finish`, a
 * budget (steps, tokens, wall time) runs out, or the repeat guard finds it stuck. Each tool call is a progress
 * step labelled with the budgets spent so far, with an ETA from the task's own pace; what it did goes to the log.
 * The checks are run once more at the end, and the result carries the diff, the files changed, the last
 * verdict of each check, the budgets spent and the model's summary.
 */
import { NO_EXTRA_TOOLS, type ExtraTools } from '../../../src/llm/extra-tools.ts'
import { runModelLoop, type LoopProgress } from '../../../src/llm/model-loop.ts'
import type { ModelMessage } from '../../../src/llm/provider.ts'
import type { SandboxCommandRequest, SandboxResult, SandboxVerdict } from '../../../src/sandbox/index.ts'
import type { CodeIndex } from '../../code-search/index.ts'
import type { ImportService } from '../../imports/index.ts'
import { clip, DEVELOP_TOOLS, newDevelopSession, runDevelopTool, type DevelopToolContext, type ToolOutcome } from './develop-tools.ts'
import { REPEAT_STOP_AT, REPEAT_WARN_AT, RepeatGuard, repeatWarning, stuckAnswer } from './repeat-guard.ts'
import { count } from './text.ts'
import { answerEveryCall, condenseConversation } from './condense.ts'
import { developSteps } from './loaded-on-first-task.ts'
import { FINISHED_STATUSES, type ContinueParams, type DevelopParams } from '../schemas.ts'
import { loopStepsAhead, StepPace, TaskError, type CommandHandler, type StepClock, type TaskContext } from '../tasks/index.ts'
import type { TaskWorkspace, WorkspaceCommit, Workspaces } from '../workspaces/index.ts'
import type { Models } from '../../../src/llm/models.ts'
import type { UsageMeter } from '../../../src/usage/meter.ts'
import { AppError } from '../../../src/errors.ts'
import type { ChangeProposal, ProposedChange } from '../../publish/index.ts'
import type { Caller } from '../../../src/auth/caller.ts'

export interface DevelopLimits {
  /** Tool calls the model may make. */
  maxSteps: number
  /** Tokens (in and out, every model call together) the task may spend. */
  maxTokens: number
  /** Wall time of the loop, in milliseconds; the final checks run after it. */
  timeLimitMs: number
  /** Longest tool answer handed to the model, in characters. Default MAX_ANSWER_CHARS. */
  maxAnswerChars?: number
  /** Longest log line of a tool's output, in characters. Default MAX_LOG_CHARS. */
  maxLogChars?: number
}

/** Longest tool answer handed to the model, in characters: a file's window, a listing, a command's output. */
export const MAX_ANSWER_CHARS = 12_000
/** Longest log line of a command the model ran, in characters. */
export const MAX_LOG_CHARS = 4000

export interface DevelopDependencies {
  models: Models
  meter?: Pick<UsageMeter, 'record'>
  imports: Pick<ImportService, 'get' | 'readFiles'>
  codeIndex: Pick<CodeIndex, 'search'>
  workspaces: Workspaces
  /** Runs the model's commands and the checks; its limits, when given, are stated in run_command's answers. */
  sandbox: { runCommand(request: SandboxCommandRequest): Promise<SandboxResult>; readonly limits?: { timeoutMs: number; maxOutputBytes: number } }
  limits: DevelopLimits
  /** Progress steps the caller reports after the loop's own (build_site checks and publishes): counted in the ETA. Default 0. */
  stepsAfter?: number
  /** Measures steps and durations. Default `performance`; tests pass a fake one. */
  clock?: StepClock
  /** Replaces the loop's instructions (build_site brings its own). */
  systemPrompt?: string
  /** Tools of the organisation's MCP servers (those offered by default), offered beside the workspace's tools. */
  extraTools?: ExtraTools
  /** Pushes a change on a new branch with the user's code-host connection and opens a pull request (`push: true`). */
  publisher?: {
    proposeChange(caller: Caller, proposal: ChangeProposal): Promise<ProposedChange>
    ensureBranchFree(caller: Caller, proposal: Pick<ChangeProposal, 'repositoryUrl' | 'branch'>): Promise<void>
  }
}

export interface CheckVerdict {
  command: string
  verdict: SandboxVerdict
  exitCode: number | null
  passed: boolean
  /** The end of its output. */
  output: string
}

const SYSTEM_PROMPT = [
  'You are a software engineer working in a workspace through tools. Make the change the user asks for, and nothing else.',
  'Look before you edit: find files with find_file, text with search_code, and read the lines around it with read_file (a window at a time).',
  "Change files with edit_file (exact text, unique in the file) or insert; undo_edit takes a change back. A change that breaks a file's syntax is refused with the parser's message.",
  "Run the project's checks with run_command (one shell session: cd and exports carry over) and iterate until they pass. When done, call finish with a short summary for the reviewer.",
  'The sandbox has no network: nothing can be installed. Do not repeat a call whose answer you already have.',
].join('\n')

function modelServices(deps: DevelopDependencies) {
  try {
    return { provider: deps.models.provider(), model: deps.models.model }
  } catch (err) {
    if (err instanceof AppError) throw new TaskError(err.code, err.message)
    throw err
  }
}

/** The workspace the task starts from: the import's files at its commit, or nothing. */
async function openWorkspace(
  deps: DevelopDependencies,
  context: TaskContext,
  importId: string | undefined,
): Promise<{ workspace: TaskWorkspace; repositoryId?: string; source?: { url: string; ref: string | null } }> {
  if (!importId) return { workspace: await deps.workspaces.create(context.taskId, []) }
  const view = await deps.imports.get(context.caller.orgId, importId)
  if (!view) throw new TaskError('not_found', `params.importId: no import ${importId} in your organisation`)
  if (view.status !== 'succeeded' || !view.commit) throw new TaskError('import_not_ready', `Import ${importId} is ${view.status}; it must have succeeded`)
  const { maxFiles, maxBytes } = deps.workspaces.limits
  const read = await deps.imports.readFiles(context.caller.orgId, importId, { directory: '', maxFiles, maxBytes })
  if (!read) throw new TaskError('not_found', `params.importId: no import ${importId} in your organisation`)
  if (read.exceeded)
    throw new TaskError(
      'workspace_limit',
      `${view.repository.name} has more ${read.exceeded} than a workspace holds (AGENT_WORKSPACE_MAX_FILES, AGENT_WORKSPACE_MAX_BYTES)`,
    )
  const workspace = await deps.workspaces.create(context.taskId, read.files, { importId, commit: read.commit })
  return { workspace, repositoryId: view.repository.id, source: { url: view.repository.url, ref: view.ref } }
}

/** A code host's refusal as the task's error, with its code. */
async function asTaskError<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work()
  } catch (err) {
    if (err instanceof AppError) throw new TaskError(err.code, err.message)
    throw err
  }
}

/** The pull request's body: the model's summary, then each check with its verdict. */
export function pullRequestBody(summary: string, checks: readonly CheckVerdict[]): string {
  if (checks.length === 0) return summary
  const lines = checks.map(
    (c) => `- ${c.passed ? '✅' : '❌'} \`${c.command.replaceAll('`', "'")}\`: ${c.verdict}${c.exitCode !== null && !c.passed ? ` (exit ${c.exitCode})` : ''}`,
  )
  return [summary, '', '### Checks', '', ...lines].join('\n').trim()
}

/** The workspace's change pushed as a new branch on the import's repository, with a pull request. */
async function pushChange(
  deps: DevelopDependencies,
  context: TaskContext,
  change: {
    source: { url: string; ref: string | null }
    baseCommit: string
    branch: string
    committed: WorkspaceCommit
    message: string
    summary: string | undefined
    checks: readonly CheckVerdict[]
    draft: boolean
  },
): Promise<ProposedChange> {
  if (!deps.publisher) throw new TaskError('not_configured', 'Pushing a change is not available in this deployment')
  const publisher = deps.publisher
  // What is pushed is what was committed, never the tree read again.
  const changes: { path: string; bytes: Uint8Array | null }[] = []
  for (const [path, content] of change.committed.contents) {
    if (content?.mode === '120000') throw new TaskError('workspace_path_refused', `${path} is a symbolic link; a change holding links cannot be pushed`)
    changes.push({ path, bytes: content ? content.bytes : null })
  }
  const [title, ...rest] = change.message.split('\n')
  return asTaskError(() =>
    publisher.proposeChange(context.caller, {
      repositoryUrl: change.source.url,
      baseBranch: change.source.ref,
      baseCommit: change.baseCommit,
      branch: change.branch,
      changes,
      message: change.message,
      title: title!,
      body: pullRequestBody(rest.join('\n').trim() || (change.summary ?? ''), change.checks),
      draft: change.draft,
    }),
  )
}

const parseArguments = (text: string): Record<string, unknown> | undefined => {
  try {
    const value = JSON.parse(text || '{}') as unknown
    return value && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined
  } catch {
    return undefined
  }
}

/** A task's first step, once the model provider is known to be there; the pace that later steps' ETAs come from. */
function firstStep(deps: DevelopDependencies, context: TaskContext, label: string, stepsAfterLoop: number): StepPace {
  modelServices(deps)
  const pace = new StepPace(deps.clock ?? performance)
  pace.start()
  context.step(0, label, pace.totalFor(0, undefined, loopStepsAhead(0, deps.limits.maxSteps) + stepsAfterLoop))
  return pace
}

export function developCommand(deps: DevelopDependencies): CommandHandler<TaskContext> {
  const { limits } = deps
  // Steps after the loop: the checks, then the caller's own (build_site checks and publishes the site).
  const stepsAfterLoop = 1 + (deps.stepsAfter ?? 0)
  return {
    // Opening the workspace, the first few tool calls, what follows: the total is then kept from the task's own pace.
    steps: developSteps(limits.maxSteps, deps.stepsAfter),
    async run(context) {
      const params = context.params as DevelopParams
      const pace = firstStep(deps, context, params.importId ? 'Opening a workspace on the import' : 'Opening an empty workspace', stepsAfterLoop)
      if (params.push && !params.importId) throw new TaskError('validation_failed', 'params.push: a new project has no repository to push to; give an importId')
      const opened = await openWorkspace(deps, context, params.importId)
      return runTask(deps, context, {
        ...opened,
        pace,
        stepsAfterLoop,
        instruction: params.instruction,
        checks: params.checks ?? [],
        branch: params.branch ?? `agent/${context.taskId}`,
        push: params.push === true,
        draft: params.draft === true,
      })
    },
  }
}

/**
 * `continue`: a follow-up on an ended develop task. The task's workspace is taken over (so two follow-ups of one
 * task cannot both go on), its conversation condensed to a budget, and the loop goes on from it with the new
 * instruction; the diff is against the original base.
 */
export function continueCommand(deps: DevelopDependencies): CommandHandler {
  const { limits } = deps
  const stepsAfterLoop = 1
  return {
    steps: developSteps(limits.maxSteps),
    async run(context) {
      const params = context.params as ContinueParams
      const pace = firstStep(deps, context, `Taking over the workspace of ${params.taskId}`, stepsAfterLoop)
      const earlier = await context.tasks.ownTask(context.caller, params.taskId)
      if (earlier.command !== 'develop' && earlier.command !== 'continue')
        throw new TaskError(
          'validation_failed',
          `params.taskId: ${params.taskId} is a ${earlier.command} task; only develop tasks (and their follow-ups) can be continued`,
        )
      if (!FINISHED_STATUSES.includes(earlier.status))
        throw new TaskError('task_running', `params.taskId: ${params.taskId} is still ${earlier.status}; continue it once it has ended`)
      const workspace = await deps.workspaces.adopt(params.taskId, context.taskId)
      const kept = deps.workspaces.loadConversation(context.taskId)
      const saved = kept && { ...(kept.header as ConversationHeader), messages: kept.messages as ModelMessage[] }
      if (saved?.version !== 1) {
        await deps.workspaces.release(context.taskId)
        throw new TaskError('conversation_not_found', `${params.taskId} kept no conversation to continue (it ended before its model loop began)`)
      }
      context.log(`Continuing ${params.taskId}: ${saved.messages.length} earlier messages`)
      return runTask(deps, context, {
        workspace,
        repositoryId: saved.repositoryId,
        source: saved.source,
        pace,
        stepsAfterLoop,
        instruction: params.message,
        checks: params.checks ?? saved.checks,
        branch: params.branch ?? `agent/${context.taskId}`,
        push: params.push === true,
        draft: params.draft === true,
        continued: { messages: condenseConversation(answerEveryCall(saved.messages)), followUp: params.message },
      })
    },
  }
}

/** Where a develop task starts from and what it is to do: a new workspace, or the one of the task it continues. */
export interface TaskStart {
  workspace: TaskWorkspace
  repositoryId?: string
  source?: { url: string; ref: string | null }
  pace: StepPace
  stepsAfterLoop: number
  /** The instruction the task began with: the commit's subject, and the first message of a new conversation. */
  instruction: string
  checks: readonly string[]
  branch: string
  push: boolean
  draft: boolean
  /** The conversation of the task continued, condensed, and what the user asks now. */
  continued?: { messages: ModelMessage[]; followUp: string }
}

/** What a develop task was asked, kept first in its conversation beside its workspace, for a follow-up (`continue`). */
export interface ConversationHeader {
  version: 1
  instruction: string
  checks: readonly string[]
  repositoryId?: string
  source?: { url: string; ref: string | null }
}

/** The loop, the checks, the commit and, when asked, the push: everything after the workspace is open. */
async function runTask(deps: DevelopDependencies, context: TaskContext, start: TaskStart) {
  const { limits } = deps
  const clock = deps.clock ?? performance
  const { workspace, repositoryId, source, pace, stepsAfterLoop, checks, branch } = start
  let messages: ModelMessage[] | undefined
  let flush = () => Promise.resolve()
  try {
    if (start.push && source) {
      if (!deps.publisher) throw new TaskError('not_configured', 'Pushing a change is not available in this deployment')
      const publisher = deps.publisher
      // Before any work: a branch the repository has already, or a missing connection, would only fail at the end.
      await asTaskError(() => publisher.ensureBranchFree(context.caller, { repositoryUrl: source.url, branch }))
    }
    const files = await deps.workspaces.list(context.taskId)
    context.log(`Workspace ready: ${files.length} files${workspace.base ? ` at ${workspace.base.commit}` : ''}`)
    // Written whole once, then each step appends what it added: the messages are only ever appended to.
    const header: ConversationHeader = { version: 1, instruction: start.instruction, checks, repositoryId, source }
    let written = -1
    const save = async (kept: ModelMessage[]) => {
      if (written < 0) await deps.workspaces.startConversation(context.taskId, header, kept)
      else await deps.workspaces.appendConversation(context.taskId, kept.slice(written))
      written = kept.length
    }
    flush = () => (messages ? save(messages) : Promise.resolve())
    const loop = await runLoop(
      deps,
      context,
      { checks, files: files.map((f) => f.path), repositoryId, pace, stepsAfterLoop, instruction: start.instruction, continued: start.continued },
      {
        keep: (kept) => (messages = kept),
        // After every step, so a task whose process dies can be continued from its last completed step.
        checkpoint: (kept) => save(kept).catch((err) => context.log(`The conversation could not be kept: ${err instanceof Error ? err.message : err}`, 'warn')),
      },
    )
    const { summary, stopped, lastVerdicts, checkMs } = loop

    pace.start()
    const mean = pace.meanMs()
    const step = pace.typicalMs()
    // This step takes the checks' time (StepProgress counts a mean step for the step running); the caller's steps follow.
    const msAfter =
      mean === undefined || step === undefined
        ? undefined
        : Math.max(0, checks.reduce((sum, c) => sum + (checkMs.get(c) ?? step), 0) - mean) + (stepsAfterLoop - 1) * step
    context.step(
      loop.steps + 1,
      `${checks.length ? `Running ${checks.length} check${checks.length === 1 ? '' : 's'}` : 'Collecting the diff'} · ${loop.budgetsNote()}`,
      pace.totalFor(loop.steps + 1, msAfter, stepsAfterLoop - 1),
    )
    for (const command of checks) {
      const { value: result, problem } = await deps.workspaces.whileWithinLimits(context.taskId, context.signal, (signal) =>
        deps.sandbox.runCommand({ directory: workspace.tree, command, maxFileBytes: deps.workspaces.limits.maxBytes, signal }),
      )
      context.signal.throwIfAborted()
      if (problem) throw new TaskError('workspace_limit', `Check \`${command.slice(0, 200)}\` made the workspace hold ${problem}`)
      lastVerdicts.set(command, describeVerdict(result, command))
      context.log(`check \`${command}\`: ${result.verdict}`, result.verdict === 'passed' ? 'info' : 'warn')
    }
    const usage = await deps.workspaces.usage(context.taskId)
    if (usage.problem) throw new TaskError('workspace_limit', `The workspace holds ${usage.problem}`)
    const message = commitMessage(start.instruction, summary)
    const committed = await deps.workspaces.commit(context.taskId, branch, message)
    const { diff, files: changed, commit } = committed
    if (committed.note) context.log(committed.note, 'warn')
    let pushed: ProposedChange | undefined
    let pushRefused: { code: 'checks_failed'; message: string } | undefined
    const verdicts = checks.map((command) => lastVerdicts.get(command)!)
    const failing = verdicts.filter((v) => !v.passed)
    if (start.push && source && workspace.base) {
      if (changed.length === 0) throw new TaskError('nothing_to_push', 'The workspace holds no change to push')
      if (failing.length > 0 && !start.draft) {
        const message = `Not pushed: ${failing.length} of ${verdicts.length} checks did not pass (${failing.map((v) => `\`${v.command}\` ${v.verdict}`).join(', ')}); with draft: true a draft pull request is opened over failing checks`
        pushRefused = { code: 'checks_failed', message }
        context.log(message, 'warn')
      } else {
        context.log(`Pushing ${branch} to ${source.url} and opening a${start.draft ? ' draft' : ''} pull request`)
        pushed = await pushChange(deps, context, {
          source,
          baseCommit: workspace.base.commit,
          branch,
          committed,
          message,
          summary,
          checks: verdicts,
          draft: start.draft,
        })
        context.log(`Pull request ${pushed.pullRequest.url}`)
      }
    }
    return {
      summary: summary ?? null,
      finished: summary !== undefined && stopped === undefined,
      ...(stopped && stopped !== 'answered' ? { stopped } : {}),
      base: workspace.base ?? null,
      branch,
      commit,
      ...(pushed
        ? {
            pushed: { repository: pushed.repository, branch: pushed.branch, commit: pushed.commit, base: pushed.base },
            pullRequest: { ...pushed.pullRequest, draft: start.draft },
          }
        : {}),
      ...(pushRefused ? { pushRefused } : {}),
      files: changed,
      diff,
      leftOut: committed.leftOut,
      checks: verdicts,
      steps: loop.steps,
      tokens: loop.tokens,
      budgets: {
        steps: { used: loop.steps, limit: limits.maxSteps },
        tokens: { used: loop.tokens, limit: limits.maxTokens },
        timeMs: { used: loop.loopMs, limit: limits.timeLimitMs },
      },
      durationMs: Math.round(clock.now() - loop.started),
    }
  } finally {
    // Whatever ended the task, what was said so far is kept for a follow-up.
    await flush().catch(() => undefined)
    await deps.workspaces.release(context.taskId)
  }
}

/** Why the loop ended before the model called finish: a budget, the repeat guard, or an answer without a tool call. */
export type LoopStop = 'steps' | 'tokens' | 'time' | 'stuck' | 'answered'

const STOP_NOTES: Record<Exclude<LoopStop, 'answered'>, string> = {
  steps: 'Stopped: the steps budget is spent',
  tokens: 'Stopped: the tokens budget is spent',
  time: 'Stopped: the time budget is spent',
  stuck: `Stopped: the same call came ${REPEAT_STOP_AT} times in a row (stuck)`,
}

const describeVerdict = (result: SandboxResult, command: string): CheckVerdict => ({
  command,
  verdict: result.verdict,
  exitCode: result.exitCode,
  passed: result.verdict === 'passed',
  output: clip(result.output, 2000),
})

/** A call of an MCP server's tool as the develop loop reports it: the capped, untrusted result, clipped to the answer budget. */
async function extraOutcome(
  extra: import('../../../src/llm/extra-tools.ts').ExtraToolSet,
  name: string,
  args: Record<string, unknown>,
  context: DevelopToolContext,
): Promise<ToolOutcome> {
  const result = await extra.call(name, args, context.signal)
  return { answer: clip(result.text, context.maxAnswerChars), summary: `${name}: ${result.isError ? 'failed' : 'answered'}`, refused: result.isError }
}

/**
 * The model's loop: ask, run each tool call it makes, append what each answered, until it calls finish, answers
 * without a tool call, repeats itself into the repeat guard, or a budget runs out. The conversation is the
 * `messages` array, only ever appended to; every tool call in it gets an answer, even one left unrun.
 */
async function runLoop(
  deps: DevelopDependencies,
  context: TaskContext,
  task: {
    checks: readonly string[]
    files: string[]
    repositoryId?: string
    pace: StepPace
    stepsAfterLoop: number
    instruction: string
    continued?: { messages: ModelMessage[]; followUp: string }
  },
  conversation: {
    /** Handed the conversation as soon as it exists, so it is kept however the loop ends. */
    keep: (messages: ModelMessage[]) => void
    /** Called after each completed step, every tool call of the step answered. */
    checkpoint: (messages: ModelMessage[]) => Promise<void>
  },
) {
  const { limits } = deps
  const clock = deps.clock ?? performance
  const { checks, pace } = task
  const started = clock.now()
  const deadline = AbortSignal.timeout(limits.timeLimitMs)
  const toolContext: DevelopToolContext = {
    taskId: context.taskId,
    orgId: context.caller.orgId,
    workspaces: deps.workspaces,
    runCommand: (request) => deps.sandbox.runCommand(request),
    ...(deps.sandbox.limits ? { commandLimits: { timeoutMs: deps.sandbox.limits.timeoutMs, maxOutputBytes: deps.sandbox.limits.maxOutputBytes } } : {}),
    codeIndex: deps.codeIndex,
    repositoryId: task.repositoryId,
    signal: AbortSignal.any([context.signal, deadline]),
    maxAnswerChars: limits.maxAnswerChars ?? MAX_ANSWER_CHARS,
    session: newDevelopSession(),
  }
  const checksLine = checks.length ? `These commands must pass: ${checks.map((c) => `\`${c}\``).join(', ')}` : ''
  const filesLine = `The workspace holds ${task.files.length} files:\n${clip(task.files.join('\n') || '(none: a new project)', 4000)}`
  const messages: ModelMessage[] = task.continued
    ? [...task.continued.messages, { role: 'user', content: [`Follow-up: ${task.continued.followUp}`, checksLine, filesLine].filter(Boolean).join('\n\n') }]
    : [
        { role: 'system', content: deps.systemPrompt ?? SYSTEM_PROMPT },
        { role: 'user', content: [task.instruction, checksLine, filesLine].filter(Boolean).join('\n\n') },
      ]
  conversation.keep(messages)
  const lastVerdicts = new Map<string, CheckVerdict>()
  // The last measured duration of each check, run by the model: what the final checks are expected to take.
  const checkMs = new Map<string, number>()
  const guard = new RepeatGuard()
  // How many times in a row the call about to run has come.
  let times = 0
  let summary: string | undefined
  const budgetsNote = (spent: Readonly<LoopProgress>) =>
    `step ${count(spent.toolCalls)}/${count(limits.maxSteps)} · ${count(spent.tokens)}/${count(limits.maxTokens)} tokens · ${Math.floor((clock.now() - started) / 1000)}/${count(Math.round(limits.timeLimitMs / 1000))} s`
  // What is expected after the current step: a few more model steps at the pace so far, the checks' last durations, the caller's steps.
  const msAfter = (steps: number) => {
    const step = pace.typicalMs()
    if (step === undefined) return undefined
    const checksMs = checks.reduce((sum, c) => sum + (checkMs.get(c) ?? step), 0)
    return loopStepsAhead(steps, limits.maxSteps - steps) * step + checksMs + (task.stepsAfterLoop - 1) * step
  }

  // An MCP server whose tool names collide with the workspace's never shadows them: its names are namespaced.
  const extra = deps.extraTools ? await deps.extraTools.forCaller(context.caller) : NO_EXTRA_TOOLS
  const end = await runModelLoop<'finished' | 'stuck'>({
    ...modelServices(deps),
    // The organisation's default model, as chat uses when a request names none.
    model: await deps.models.defaultFor(context.caller.orgId),
    messages,
    signal: context.signal,
    request: { temperature: 0 },
    limits: { maxToolCalls: limits.maxSteps, maxTokens: limits.maxTokens, deadline },
    metering: { meter: deps.meter, caller: context.caller },
    tools: {
      definitions: [...DEVELOP_TOOLS, ...extra.definitions],
      callId: (index) => `call_${context.taskId}_${messages.length}_${index}`,
      refuse(call) {
        times = guard.see(call.name, call.arguments)
        return times >= REPEAT_STOP_AT ? { answer: stuckAnswer(call.name), stop: { reason: 'stuck', why: 'the task stopped as stuck.' } } : undefined
      },
      async run(call, spent) {
        const steps = spent.toolCalls
        pace.start()
        context.step(
          steps,
          `${call.name}${describeCall(call.arguments)} · ${budgetsNote(spent)}`,
          pace.totalFor(steps, msAfter(steps), loopStepsAhead(steps, limits.maxSteps - steps) + task.stepsAfterLoop),
        )
        const args = parseArguments(call.arguments)
        const outcome: ToolOutcome = !args
          ? { answer: 'Refused: the arguments are not a JSON object', summary: 'refused: arguments not JSON', refused: true }
          : extra.has(call.name)
            ? await extraOutcome(extra, call.name, args, toolContext)
            : await runDevelopTool(toolContext, call.name, args)
        context.signal.throwIfAborted()
        if (outcome.command) {
          const { command, result, fromRoot } = outcome.command
          // A check's verdict counts only when run as the final check runs it: from the workspace root.
          if (checks.includes(command.trim()) && fromRoot) {
            lastVerdicts.set(command.trim(), describeVerdict(result, command.trim()))
            checkMs.set(command.trim(), result.durationMs)
          }
          context.log(clip(`${outcome.summary}\n${result.output}`, limits.maxLogChars ?? MAX_LOG_CHARS), result.verdict === 'passed' ? 'info' : 'warn')
        } else context.log(outcome.summary, outcome.refused ? 'warn' : 'info')
        const answer = times >= REPEAT_WARN_AT ? outcome.answer + repeatWarning(call.name, times) : outcome.answer
        if (!outcome.finished) return { answer }
        summary = outcome.finished.summary
        return { answer, stop: { reason: 'finished', why: 'finish ended the task.' } }
      },
      checkpoint: conversation.checkpoint,
    },
  })
  // An answer without a tool call ends the loop: the text is the summary.
  if (end.stop === 'answered') summary = end.text.trim()
  // Nothing here stops a model call or answers a tool elsewhere: the loop ended answered, finished, stuck or out of a budget.
  const stopped = end.stop === 'finished' ? undefined : (end.stop as LoopStop)
  if (stopped && stopped !== 'answered') context.log(STOP_NOTES[stopped], 'warn')
  return {
    summary,
    stopped,
    steps: end.toolCalls,
    tokens: end.tokens,
    lastVerdicts,
    checkMs,
    started,
    loopMs: Math.round(clock.now() - started),
    budgetsNote: () => budgetsNote(end),
    messages,
  }
}

/** The first line of the instruction as the subject, the model's summary as the body. */
function commitMessage(instruction: string, summary: string | undefined): string {
  const subject = instruction.split('\n')[0]!.trim().slice(0, 72) || 'Agent change'
  return summary ? `${subject}\n\n${summary}` : subject
}

/** ` path` or ` $ command` after the tool's name in a progress step, from its (maybe partial) arguments. */
function describeCall(argumentsText: string): string {
  const args = parseArguments(argumentsText)
  const target = args?.path ?? args?.command ?? args?.query ?? args?.name ?? args?.directory
  return typeof target === 'string' && target ? ` ${target.slice(0, 120)}` : ''
}
