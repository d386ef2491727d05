/**
 * One chat turn: the answer to the latest message, written as UI message stream chunks.
 * Commands first (`!search`, `!image`); otherwise the model in a bounded tool loop. The first answer
 * streams at once while its leading tokens are measured for confidence; an unsure one is withdrawn
 * (`reset-step`) and replaced by one grounded on a web search.
 */
import type { UsageMeter } from '../../src/usage/meter.ts'
import { commandHelp, parseCommand } from './commands.ts'
import { createConfidenceGauge, type ConfidenceVerdict } from './confidence.ts'
import { createMessageBuilder } from '../../src/llm/message-builder.ts'
import { meterModelCall, textPart as sharedTextPart } from '../../src/llm/model-call.ts'
import { StreamError, upstreamFailure, type ModelMessage, type ModelProvider, type ModelTool } from '../../src/llm/provider.ts'
import { messageText, toModelMessages } from '../../src/llm/ui-messages.ts'
import type { Emit, UiMessage } from '../../src/llm/ui-stream.ts'
import type { ClientTool } from './schemas.ts'
import { generateImage, serverTools, type ServerToolDependencies, type ServerToolName } from './tools.ts'

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
  /** `keep` leaves an unsure streamed draft in place instead of withdrawing it (clients without `reset-step`). */
  unsureDraft?: 'replace' | 'keep'
  /** Server tools offered to the model; default all available. */
  serverTools?: readonly ServerToolName[]
  clientTools?: readonly ClientTool[]
  /** Instructions placed before the history. */
  system?: string
  /** The caller holds `agents:run`: only then is run_agent offered. */
  mayRunAgents?: boolean
}

const SYSTEM_PROMPT =
  'You are the assistant of a real-time AI development platform. Answer clearly and concisely; use the tools when they help.'

const groundingPrompt = (results: { title: string; url: string; snippet: string }[]) =>
  'Answer the question using these web search results. Cite the results you use as [n], with n the result number.\n\n' +
  results.map((r, i) => `[${i + 1}] ${r.title}\n${r.url}\n${r.snippet}`).join('\n\n')

type FinishReason = 'stop' | 'length' | 'content-filter' | 'tool-calls' | 'error' | 'other'
const finishReasonOf = (reason: string | undefined): FinishReason =>
  reason === 'stop' ? 'stop' : reason === 'length' ? 'length' : reason === 'content_filter' ? 'content-filter' : reason === 'tool_calls' ? 'tool-calls' : 'other'

interface ToolCall {
  id: string
  name: string
  arguments: string
}

/** Runs the turn, streaming through `emit`; resolves to the assistant message as streamed. */
export async function runTurn(services: TurnServices, turn: Turn, outerEmit: Emit, signal: AbortSignal): Promise<UiMessage> {
  const builder = createMessageBuilder(turn.messageId)
  const emit: Emit = (chunk) => {
    builder.add(chunk)
    outerEmit(chunk)
  }
  const settings = services.settings
  const model = turn.model ?? settings.model
  const caller = { orgId: turn.orgId, userId: turn.userId }
  let partCounter = 0
  const partId = (kind: string) => `${kind}-${turn.messageId}-${++partCounter}`

  const callContext = { meter: services.meter, caller, model }
  const textPart = (kind: 'text' | 'reasoning') => sharedTextPart(emit, kind, () => partId(kind))

  const tools = serverTools({ ...services, imageModel: settings.imageModel, imageMaxBytes: settings.imageMaxBytes })
  const offered = turn.serverTools ? new Set(turn.serverTools) : undefined
  const activeServerTools = [...tools].filter(([name]) => (!offered || offered.has(name)) && (name !== 'run_agent' || turn.mayRunAgents === true))
  const clientTools = new Map((turn.clientTools ?? []).map((t) => [t.name, t]))
  const toolDefinitions: ModelTool[] = [
    ...activeServerTools.map(([, t]) => t.definition),
    ...[...clientTools.values()]
      .filter((t) => !tools.has(t.name as ServerToolName))
      .map((t) => ({
        type: 'function' as const,
        function: { name: t.name, description: t.description ?? '', parameters: t.parameters ?? { type: 'object', properties: {} } },
      })),
  ]

  /**
   * One model call. With `augment`, its text streams as it comes while the first `confidenceTokens`
   * tokens are measured; an unsure verdict withdraws what was streamed of this step (the AI SDK's
   * `reset-step`) and stops the call, so that a search-grounded answer replaces it.
   */
  async function modelStep(messages: ModelMessage[], options: { augment: boolean; tools: boolean }) {
    const step = new AbortController()
    const onAbort = () => step.abort(signal.reason)
    signal.addEventListener('abort', onAbort, { once: true })
    const text = textPart('text')
    const reasoning = textPart('reasoning')
    const calls = new Map<number, ToolCall>()
    const gauge = options.augment ? createConfidenceGauge({ threshold: settings.confidenceThreshold, tokens: settings.confidenceTokens }) : undefined
    let measuring = gauge !== undefined
    let finishReason: string | undefined
    let usage: { inputTokens: number; outputTokens: number } | undefined
    let output = ''
    let search: { query: string } | undefined

    const decide = (verdict: ConfidenceVerdict, why?: string) => {
      measuring = false
      const { measure } = verdict
      const unsure = why === undefined && verdict.unsure
      const decision = unsure ? 'search' : 'answer'
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
        text.end()
        reasoning.end()
        // The draft already on screen goes; the decision, the search and the grounded answer take its place.
        if (turn.unsureDraft !== 'keep') emit({ type: 'reset-step' })
      }
      emit({
        type: 'data-search-decision',
        data: {
          decision,
          confidence: measure.confidence,
          threshold: settings.confidenceThreshold,
          method: measure.method,
          tokens: measure.method === 'logprobs' ? measure.tokens : verdict.tokens,
          reason,
        },
      })
      if (unsure) {
        search = { query: lastUserText(turn.history) }
        step.abort()
      }
    }

    try {
      const request = {
        model,
        messages,
        tools: options.tools && toolDefinitions.length ? toolDefinitions : undefined,
        temperature: turn.temperature,
        maxOutputTokens: turn.maxOutputTokens,
        logprobs: options.augment,
      }
      stream: for await (const batch of services.provider.stream(request, step.signal)) {
        for (let at = 0; at < batch.length; at++) {
          const event = batch[at]!
          switch (event.type) {
            case 'text': {
              let delta = event.delta
              // Once confidence is measured, the text of one upstream read leaves as one delta: the client sees it
              // at the same moment, in one event rather than one per token.
              if (!measuring) for (let next = batch[at + 1]; next?.type === 'text'; next = batch[at + 1]) (delta += next.delta), at++
              output += delta
              text.delta(delta)
              const verdict = measuring ? gauge!.add(delta, event.logprobs) : undefined
              if (verdict) decide(verdict)
              break
            }
            case 'reasoning':
              reasoning.delta(event.delta)
              break
            case 'tool-call': {
              if (measuring) decide(gauge!.settle(), 'the model called a tool')
              let call = calls.get(event.index)
              if (!call) {
                call = { id: event.id ?? `call_${turn.messageId}_${event.index}`, name: event.name ?? '', arguments: '' }
                calls.set(event.index, call)
                text.end()
                emit({ type: 'tool-input-start', toolCallId: call.id, toolName: call.name })
              }
              if (event.argumentsDelta) {
                call.arguments += event.argumentsDelta
                emit({ type: 'tool-input-delta', toolCallId: call.id, inputTextDelta: event.argumentsDelta })
              }
              break
            }
            case 'usage':
              usage = { inputTokens: event.inputTokens, outputTokens: event.outputTokens }
              break
            case 'finish':
              finishReason = event.reason
              break
          }
          if (search) break stream
        }
      }
      if (measuring) decide(gauge!.settle())
    } finally {
      signal.removeEventListener('abort', onAbort)
      text.end()
      reasoning.end()
      meterModelCall(callContext, messages, output, usage)
    }
    if (signal.aborted) throw signal.reason
    return { text: output, calls: [...calls.values()], finishReason, search }
  }

  /** Searches the web for `query`, shows it as a web_search call with sources, and answers from the results. */
  async function groundedAnswer(history: ModelMessage[], query: string): Promise<FinishReason> {
    const toolCallId = `call_search_${turn.messageId}`
    emit({ type: 'tool-input-start', toolCallId, toolName: 'web_search' })
    emit({ type: 'tool-input-available', toolCallId, toolName: 'web_search', input: { query } })
    let results: { title: string; url: string; snippet: string }[] = []
    try {
      const answer = await services.webSearch.search(query, { count: 5, caller })
      results = answer.results.map(({ title, url, snippet }) => ({ title, url, snippet }))
      emit({ type: 'tool-output-available', toolCallId, output: { results } })
      results.forEach((r, i) => emit({ type: 'source-url', sourceId: `source-${i + 1}`, url: r.url, title: r.title }))
    } catch (err) {
      emit({ type: 'tool-output-error', toolCallId, errorText: `Web search failed: ${(err as Error).message}` })
    }
    emit({ type: 'finish-step' })
    emit({ type: 'start-step' })
    const messages: ModelMessage[] = results.length
      ? [history[0]!, { role: 'system', content: groundingPrompt(results) }, ...history.slice(1)]
      : history
    const step = await modelStep(messages, { augment: false, tools: false })
    return finishReasonOf(step.finishReason)
  }

  async function runTool(call: ToolCall): Promise<string> {
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
    const tool = activeServerTools.find(([name]) => name === call.name)?.[1]
    if (!tool) {
      if (clientTools.has(call.name)) return ''
      const errorText = `Unknown tool ${call.name}`
      emit({ type: 'tool-output-error', toolCallId: call.id, errorText })
      return `Error: ${errorText}`
    }
    try {
      const output = await tool.execute(input, { ...caller, emit, signal })
      emit({ type: 'tool-output-available', toolCallId: call.id, output })
      return JSON.stringify(output)
    } catch (err) {
      if (signal.aborted) throw signal.reason
      const errorText = (err as Error).message
      emit({ type: 'tool-output-error', toolCallId: call.id, errorText })
      return `Error: ${errorText}`
    }
  }

  async function modelLoop(): Promise<FinishReason> {
    const messages: ModelMessage[] = [{ role: 'system', content: turn.system ?? SYSTEM_PROMPT }, ...toModelMessages(turn.history)]
    const maxSteps = Math.min(turn.maxSteps ?? settings.maxSteps, settings.maxSteps)
    // Holding text back only pays when a search could follow.
    const augment = (turn.searchAugmentation ?? settings.searchAugmentation) && services.webSearch.configured && lastUserText(turn.history) !== ''
    for (let stepIndex = 0; stepIndex < maxSteps; stepIndex++) {
      emit({ type: 'start-step' })
      const step = await modelStep(messages, { augment: augment && stepIndex === 0, tools: true })
      if (step.search) {
        const reason = await groundedAnswer(messages, step.search.query)
        emit({ type: 'finish-step' })
        return reason
      }
      if (step.calls.length === 0) {
        emit({ type: 'finish-step' })
        return finishReasonOf(step.finishReason)
      }
      messages.push({
        role: 'assistant',
        content: step.text || null,
        tool_calls: step.calls.map((c) => ({ id: c.id, type: 'function', function: { name: c.name, arguments: c.arguments || '{}' } })),
      })
      let waitsForClient = false
      for (const call of step.calls) {
        const result = await runTool(call)
        if (clientTools.has(call.name) && !tools.has(call.name as ServerToolName)) waitsForClient = true
        else messages.push({ role: 'tool', tool_call_id: call.id, content: result })
      }
      emit({ type: 'finish-step' })
      if (waitsForClient) return 'tool-calls'
    }
    return 'tool-calls'
  }

  async function imageCommand(prompt: string): Promise<FinishReason> {
    emit({ type: 'start-step' })
    await generateImage({ ...services, imageModel: settings.imageModel, imageMaxBytes: settings.imageMaxBytes }, prompt, { ...caller, emit, signal })
    const text = textPart('text')
    text.delta(`Generated an image for: ${prompt}`)
    text.end()
    emit({ type: 'finish-step' })
    return 'stop'
  }

  emit({ type: 'start', messageId: turn.messageId })
  try {
    const command = parseCommand(lastUserText(turn.history))
    let finishReason: FinishReason
    if (command?.name === 'unknown') throw new StreamError('unknown_command', `!${command.given} is not a command. ${commandHelp()}`)
    if (command?.name === 'missing-argument') throw new StreamError('unknown_command', `!${command.command} needs an argument. ${commandHelp()}`)
    if (command?.name === 'image') finishReason = await imageCommand(command.argument)
    else if (command?.name === 'search') {
      if (!services.webSearch.configured) throw new StreamError('upstream_error', 'Web search is not configured on this server')
      emit({ type: 'start-step' })
      const history: ModelMessage[] = [{ role: 'system', content: turn.system ?? SYSTEM_PROMPT }, ...toModelMessages(withoutCommand(turn.history, command.argument))]
      finishReason = await groundedAnswer(history, command.argument)
      emit({ type: 'finish-step' })
    } else finishReason = await modelLoop()
    emit({ type: 'finish', finishReason })
    return builder.message('complete')
  } catch (err) {
    const failure = signal.aborted && signal.reason instanceof StreamError ? signal.reason : upstreamFailure(err)
    if (failure.code === 'generation_cancelled') emit({ type: 'abort', reason: `${failure.code}: ${failure.message}` })
    else emit({ type: 'error', errorText: `${failure.code}: ${failure.message}` })
    return builder.message('interrupted')
  }
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
