/**
 * One chat turn: the answer to the latest message, written as UI message stream chunks.
 * Commands first (`!search`, `!image`); otherwise the model in a bounded tool loop. The first answer
 * streams at once while its leading tokens are measured for confidence; an unsure one is withdrawn
 * (`reset-step`, for a client that reads it) and replaced by one grounded on a web search.
 */
import type { UsageMeter } from '../../src/usage/meter.ts'
import { commandHelp, parseCommand } from './commands.ts'
import { createConfidenceGauge, type ConfidenceVerdict } from './confidence.ts'
import type { Caller } from '../../src/auth/caller.ts'
import { createMessageBuilder } from '../../src/llm/message-builder.ts'
import { textPart, uiStepView } from '../../src/llm/model-call.ts'
import { NO_EXTRA_TOOLS, type ExtraTools, type ExtraToolSet } from '../../src/llm/extra-tools.ts'
import { runModelLoop, type LoopTools, type StepView, type ToolCall } from '../../src/llm/model-loop.ts'
import { StreamError, upstreamFailure, type ModelMessage, type ModelProvider, type ModelTool } from '../../src/llm/provider.ts'
import { messageText, toModelMessages } from '../../src/llm/ui-messages.ts'
import type { Emit, UiMessage } from '../../src/llm/ui-stream.ts'
import type { ClientTool } from './schemas.ts'
import { generateImage, serverTools, type ServerTool, type ServerToolDependencies, type ServerToolName } from './tools.ts'

export interface ChatSettings {
  model: string
  imageModel: string
  imageMaxBytes: number
  maxSteps: number
  confidenceThreshold: number
  confidenceTokens: number
  searchAugmentation: boolean
}

export interface TurnServices extends Omit<ServerToolDependencies, 'imageModel' | 'imageMaxBytes'> {
  provider: ModelProvider
  meter?: Pick<UsageMeter, 'record'>
  settings: ChatSettings
  /** Tools of the organisation's MCP servers, offered beside the server tools. */
  extraTools?: ExtraTools
}

export interface Turn {
  messageId: string
  orgId: string
  userId: string
  model?: string
  history: readonly UiMessage[]
  temperature?: number
  maxOutputTokens?: number
  maxSteps?: number
  searchAugmentation?: boolean
  /** `replace` withdraws an unsure streamed draft with `reset-step` (clients that read it); default `keep` leaves it in place. */
  unsureDraft?: 'replace' | 'keep'
  /** Server tools offered to the model; default all available. */
  serverTools?: readonly ServerToolName[]
  clientTools?: readonly ClientTool[]
  /** Instructions placed before the history. */
  system?: string
  /** The caller holds `agents:run`: only then is run_agent offered. */
  mayRunAgents?: boolean
  /** MCP servers (by name) whose allowed tools are offered; default those the organisation offers by default. */
  mcpServers?: readonly string[]
}

const SYSTEM_PROMPT = 'You are the assistant of a real-time AI development platform. Answer clearly and concisely; use the tools when they help.'

const groundingPrompt = (results: { title: string; url: string; snippet: string }[]) =>
  'Answer the question using these web search results. Cite the results you use as [n], with n the result number.\n\n' +
  results.map((r, i) => `[${i + 1}] ${r.title}\n${r.url}\n${r.snippet}`).join('\n\n')

type FinishReason = 'stop' | 'length' | 'content-filter' | 'tool-calls' | 'error' | 'other'
const finishReasonOf = (reason: string | undefined): FinishReason =>
  reason === 'stop'
    ? 'stop'
    : reason === 'length'
      ? 'length'
      : reason === 'content_filter'
        ? 'content-filter'
        : reason === 'tool_calls'
          ? 'tool-calls'
          : 'other'

/** What every part of one turn shares. */
interface TurnScope {
  services: TurnServices
  turn: Turn
  settings: ChatSettings
  model: string
  caller: Caller
  emit: Emit
  signal: AbortSignal
  partId: (kind: string) => string
}

/** Runs the turn, streaming through `emit`; resolves to the assistant message as streamed. */
export async function runTurn(services: TurnServices, turn: Turn, outerEmit: Emit, signal: AbortSignal): Promise<UiMessage> {
  const builder = createMessageBuilder(turn.messageId)
  const emit: Emit = (chunk) => {
    builder.add(chunk)
    outerEmit(chunk)
  }
  let partCounter = 0
  const scope: TurnScope = {
    services,
    turn,
    settings: services.settings,
    model: turn.model ?? services.settings.model,
    caller: { orgId: turn.orgId, userId: turn.userId },
    emit,
    signal,
    partId: (kind) => `${kind}-${turn.messageId}-${++partCounter}`,
  }
  emit({ type: 'start', messageId: turn.messageId })
  try {
    emit({ type: 'finish', finishReason: await answer(scope) })
    return builder.message('complete')
  } catch (err) {
    const failure = signal.aborted && signal.reason instanceof StreamError ? signal.reason : upstreamFailure(err)
    if (failure.code === 'generation_cancelled') emit({ type: 'abort', reason: `${failure.code}: ${failure.message}` })
    else emit({ type: 'error', errorText: `${failure.code}: ${failure.message}` })
    return builder.message('interrupted')
  }
}

/** A command's answer (`!image`, `!search`), or the model's. */
async function answer(scope: TurnScope): Promise<FinishReason> {
  const { services, turn, emit } = scope
  const command = parseCommand(lastUserText(turn.history))
  if (command?.name === 'unknown') throw new StreamError('unknown_command', `!${command.given} is not a command. ${commandHelp()}`)
  if (command?.name === 'missing-argument') throw new StreamError('unknown_command', `!${command.command} needs an argument. ${commandHelp()}`)
  if (command?.name === 'image') return imageCommand(scope, command.argument)
  if (command?.name !== 'search') return modelLoop(scope)
  if (!services.webSearch.configured) throw new StreamError('upstream_error', 'Web search is not configured on this server')
  emit({ type: 'start-step' })
  const history: ModelMessage[] = [
    { role: 'system', content: turn.system ?? SYSTEM_PROMPT },
    ...toModelMessages(withoutCommand(turn.history, command.argument)),
  ]
  const finishReason = await groundedAnswer(scope, history, command.argument)
  emit({ type: 'finish-step' })
  return finishReason
}

/** What every model call of the turn is: its provider, model and signal, its tokens metered to the caller. */
const callOf = (scope: TurnScope) => ({
  provider: scope.services.provider,
  model: scope.model,
  signal: scope.signal,
  metering: { meter: scope.services.meter, caller: scope.caller },
})

/** The model in a bounded tool loop; its first answer, when unsure, replaced by one grounded on a web search. */
async function modelLoop(scope: TurnScope): Promise<FinishReason> {
  const { services, turn, settings } = scope
  const messages: ModelMessage[] = [{ role: 'system', content: turn.system ?? SYSTEM_PROMPT }, ...toModelMessages(turn.history)]
  // Holding text back only pays when a search could follow.
  const augment = (turn.searchAugmentation ?? settings.searchAugmentation) && services.webSearch.configured && lastUserText(turn.history) !== ''
  const extra = services.extraTools ? await services.extraTools.forCaller(scope.caller, { servers: turn.mcpServers }) : NO_EXTRA_TOOLS
  const end = await runModelLoop({
    ...callOf(scope),
    messages,
    request: (step) => ({ temperature: turn.temperature, maxOutputTokens: turn.maxOutputTokens, logprobs: augment && step === 0 }),
    tools: offeredTools(scope, extra),
    limits: { maxModelCalls: Math.min(turn.maxSteps ?? settings.maxSteps, settings.maxSteps) },
    view: (step, stop) => stepView(scope, augment && step === 0, stop),
  })
  if (end.stop === 'interrupted') {
    const reason = await groundedAnswer(scope, messages, lastUserText(turn.history))
    scope.emit({ type: 'finish-step' })
    return reason
  }
  // Out of steps, or waiting for the client's tool.
  return end.stop === 'answered' ? finishReasonOf(end.finishReason) : 'tool-calls'
}

/**
 * A step of the loop between `start-step` and `finish-step`. With `augment`, its text streams as it comes while
 * the first `confidenceTokens` tokens are measured; an unsure verdict withdraws what was streamed of this step
 * (the AI SDK's `reset-step`, when the turn asks for it) and stops the call, so that a search-grounded answer replaces it.
 */
function stepView(scope: TurnScope, augment: boolean, stop: () => void): StepView {
  const { emit, settings, turn } = scope
  emit({ type: 'start-step' })
  const shown = uiStepView(emit, scope.partId, { joinReads: true })
  const stepEnd = () => emit({ type: 'finish-step' })
  if (!augment) return { ...shown, stepEnd }
  const gauge = createConfidenceGauge({ threshold: settings.confidenceThreshold, tokens: settings.confidenceTokens })
  let measuring = true

  const decide = (verdict: ConfidenceVerdict, why?: string) => {
    measuring = false
    const { measure } = verdict
    const unsure = why === undefined && verdict.unsure
    const reason =
      why ??
      (unsure
        ? measure.method === 'logprobs'
          ? 'confidence below the threshold'
          : `no log-probabilities; the answer hedges ("${measure.hedge}")`
        : measure.method === 'logprobs'
          ? 'confidence at or above the threshold'
          : 'no log-probabilities and no hedging in the answer')
    if (unsure) {
      shown.streamEnd()
      // For a client that reads `reset-step`, the draft already on screen goes; the decision, the search and the
      // grounded answer take its place. Other clients keep it, followed by them.
      if (turn.unsureDraft === 'replace') emit({ type: 'reset-step' })
    }
    emit({
      type: 'data-search-decision',
      data: {
        decision: unsure ? 'search' : 'answer',
        confidence: measure.confidence,
        threshold: settings.confidenceThreshold,
        method: measure.method,
        tokens: measure.method === 'logprobs' ? measure.tokens : verdict.tokens,
        reason,
      },
    })
    if (unsure) stop()
  }

  return {
    ...shown,
    stepEnd,
    // Once confidence is measured, the text of one upstream read leaves as one delta.
    joinReads: () => !measuring,
    text(delta, logprobs) {
      shown.text(delta)
      const verdict = measuring ? gauge.add(delta, logprobs) : undefined
      if (verdict) decide(verdict)
    },
    toolInputStart(call) {
      if (measuring) decide(gauge.settle(), 'the model called a tool')
      shown.toolInputStart(call)
    },
    streamEnd(completed) {
      if (completed && measuring) decide(gauge.settle())
      shown.streamEnd()
    },
  }
}

/** Searches the web for `query`, shows it as a web_search call with sources, and answers from the results. */
async function groundedAnswer(scope: TurnScope, history: ModelMessage[], query: string): Promise<FinishReason> {
  const { services, turn, emit } = scope
  const toolCallId = `call_search_${turn.messageId}`
  emit({ type: 'tool-input-start', toolCallId, toolName: 'web_search' })
  emit({ type: 'tool-input-available', toolCallId, toolName: 'web_search', input: { query } })
  let results: { title: string; url: string; snippet: string }[] = []
  try {
    const answer = await services.webSearch.search(query, { count: 5, caller: scope.caller })
    results = answer.results.map(({ title, url, snippet }) => ({ title, url, snippet }))
    emit({ type: 'tool-output-available', toolCallId, output: { results } })
    for (const [i, r] of results.entries()) emit({ type: 'source-url', sourceId: `source-${i + 1}`, url: r.url, title: r.title })
  } catch (err) {
    emit({ type: 'tool-output-error', toolCallId, errorText: `Web search failed: ${(err as Error).message}` })
  }
  emit({ type: 'finish-step' })
  emit({ type: 'start-step' })
  const messages: ModelMessage[] = results.length ? [history[0]!, { role: 'system', content: groundingPrompt(results) }, ...history.slice(1)] : history
  const end = await runModelLoop({
    ...callOf(scope),
    messages,
    request: { temperature: turn.temperature, maxOutputTokens: turn.maxOutputTokens },
    view: () => uiStepView(emit, scope.partId, { joinReads: true }),
  })
  return finishReasonOf(end.finishReason)
}

/** The tools offered in this turn (the server's the turn allows, the MCP servers', and the client's) and how a call of each runs. */
function offeredTools(scope: TurnScope, extra: ExtraToolSet): LoopTools<never> {
  const { services, turn, settings } = scope
  const tools = serverTools({ ...services, imageModel: settings.imageModel, imageMaxBytes: settings.imageMaxBytes })
  const offered = turn.serverTools ? new Set(turn.serverTools) : undefined
  const active = new Map([...tools].filter(([name]) => (!offered || offered.has(name)) && (name !== 'run_agent' || turn.mayRunAgents === true)))
  const clientTools = new Map((turn.clientTools ?? []).map((t) => [t.name, t]))
  const definitions: ModelTool[] = [
    ...[...active.values()].map((t) => t.definition),
    ...extra.definitions,
    ...[...clientTools.values()]
      .filter((t) => !tools.has(t.name as ServerToolName) && !extra.has(t.name))
      .map((t) => ({
        type: 'function' as const,
        function: { name: t.name, description: t.description ?? '', parameters: t.parameters ?? { type: 'object', properties: {} } },
      })),
  ]
  return {
    definitions,
    callId: (index) => `call_${turn.messageId}_${index}`,
    async run(call) {
      if (extra.has(call.name)) return { answer: await runExtraTool(scope, call, extra) }
      const answer = await runTool(scope, call, active.get(call.name as ServerToolName), clientTools.has(call.name))
      // The client answers its own tools: the turn ends with this step and resumes with the client's results.
      return clientTools.has(call.name) && !tools.has(call.name as ServerToolName) ? {} : { answer }
    },
  }
}

/** Runs a server tool, showing its input and output; answers what the model is told. */
async function runTool(scope: TurnScope, call: ToolCall, tool: ServerTool | undefined, clientTool: boolean): Promise<string> {
  const { emit, signal } = scope
  let input: Record<string, unknown>
  try {
    const parsed = call.arguments ? JSON.parse(call.arguments) : {}
    if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) throw new Error('arguments must be a JSON object')
    input = parsed
  } catch (err) {
    const errorText = `Invalid tool input: ${(err as Error).message}`
    emit({ type: 'tool-input-error', toolCallId: call.id, toolName: call.name, input: call.arguments, errorText })
    return `Error: ${errorText}`
  }
  emit({ type: 'tool-input-available', toolCallId: call.id, toolName: call.name, input })
  if (!tool) {
    if (clientTool) return ''
    const errorText = `Unknown tool ${call.name}`
    emit({ type: 'tool-output-error', toolCallId: call.id, errorText })
    return `Error: ${errorText}`
  }
  try {
    const output = await tool.execute(input, { ...scope.caller, emit, signal })
    emit({ type: 'tool-output-available', toolCallId: call.id, output })
    return JSON.stringify(output)
  } catch (err) {
    if (signal.aborted) throw signal.reason
    const errorText = (err as Error).message
    emit({ type: 'tool-output-error', toolCallId: call.id, errorText })
    return `Error: ${errorText}`
  }
}

/**
 * Runs a tool of an MCP server: the call and its result stream as tool parts like any server tool's; a failed call
 * (the server erred, timed out, or the call was refused) is a tool-output-error part, and the turn goes on.
 */
async function runExtraTool(scope: TurnScope, call: ToolCall, extra: ExtraToolSet): Promise<string> {
  const { emit, signal } = scope
  const input = toolInput(call)
  if (typeof input === 'string') {
    emit({ type: 'tool-input-error', toolCallId: call.id, toolName: call.name, input: call.arguments, errorText: input })
    return `Error: ${input}`
  }
  emit({ type: 'tool-input-available', toolCallId: call.id, toolName: call.name, input })
  const result = await extra.call(call.name, input, signal)
  if (result.isError) emit({ type: 'tool-output-error', toolCallId: call.id, errorText: String(result.output.content ?? result.text) })
  else emit({ type: 'tool-output-available', toolCallId: call.id, output: result.output })
  return result.text
}

/** A call's arguments as an object, or why they are not one. */
function toolInput(call: ToolCall): Record<string, unknown> | string {
  try {
    const parsed = call.arguments ? JSON.parse(call.arguments) : {}
    if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) return 'Invalid tool input: arguments must be a JSON object'
    return parsed as Record<string, unknown>
  } catch (err) {
    return `Invalid tool input: ${(err as Error).message}`
  }
}

async function imageCommand(scope: TurnScope, prompt: string): Promise<FinishReason> {
  const { services, settings, emit } = scope
  emit({ type: 'start-step' })
  await generateImage({ ...services, imageModel: settings.imageModel, imageMaxBytes: settings.imageMaxBytes }, prompt, {
    ...scope.caller,
    emit,
    signal: scope.signal,
  })
  const text = textPart(emit, 'text', () => scope.partId('text'))
  text.delta(`Generated an image for: ${prompt}`)
  text.end()
  emit({ type: 'finish-step' })
  return 'stop'
}

export function lastUserText(history: readonly UiMessage[]): string {
  for (let i = history.length - 1; i >= 0; i--) if (history[i]!.role === 'user') return messageText(history[i]!).trim()
  return ''
}

/** The history with the `!search` prefix taken off the last message, so the model sees the question. */
function withoutCommand(history: readonly UiMessage[], question: string): UiMessage[] {
  const copy = [...history]
  for (let i = copy.length - 1; i >= 0; i--)
    if (copy[i]!.role === 'user') {
      copy[i] = { ...copy[i]!, parts: [{ type: 'text', text: question }] }
      break
    }
  return copy
}
