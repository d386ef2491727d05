/**
 * The model loop: ask the model, stream what it says, collect its tool calls, run them, append their answers
 * to the conversation and ask again, until it answers without a tool call, a tool or a budget ends the loop, or
 * the signal aborts. Every caller passes what is its own: the tools and how a call runs, the budgets, how a step
 * is shown as it streams, and where the tokens are counted.
 */
import type { Caller } from '../auth/caller.ts'
import type { UsageMeter } from '../usage/meter.ts'
import type { ModelMessage, ModelProvider, ModelRequest, ModelTool } from './provider.ts'

export interface ToolCall {
  id: string
  name: string
  /** JSON text as the model wrote it, maybe empty or malformed. */
  arguments: string
}

export interface Usage {
  inputTokens: number
  outputTokens: number
}

/** What the loop has spent so far; live while it runs. */
export interface LoopProgress {
  modelCalls: number
  /** Tool calls run (a refused call is not run). */
  toolCalls: number
  /** Tokens of every model call, in and out, as counted for metering. */
  tokens: number
}

/**
 * How one step (a model call and the tool calls it made) is shown as it happens. Every hook is optional: a
 * step nobody watches is only collected.
 */
export interface StepView {
  /** A text delta; `logprobs` only when text passes event by event (see `joinReads`). */
  text?(delta: string, logprobs: number[] | undefined): void
  /** Whether the text events of one upstream read may pass as one delta. Asked at each text event; default no. */
  joinReads?(): boolean
  reasoning?(delta: string): void
  /** The first event of a tool call: its id and name are known, its arguments not yet. */
  toolInputStart?(call: ToolCall): void
  toolInputDelta?(call: ToolCall, delta: string): void
  /** The model call's stream ended; `completed` when it ran to its end rather than failing or being stopped. */
  streamEnd?(completed: boolean): void
  /** The step is over, each of its tool calls answered (or left unrun by a stop); never after `stop()` or a failure. */
  stepEnd?(): void
}

export interface ToolAnswer<Stop extends string> {
  /** The tool message for the model. None when the answer comes from elsewhere (a client's tool): the loop ends after the step, `pending`. */
  answer?: string
  /** Ends the loop now; the step's later calls are answered `Not run: <why>`. */
  stop?: { reason: Stop; why: string }
}

export interface LoopTools<Stop extends string> {
  definitions: ModelTool[]
  /** Runs one call; `progress` already counts it. A throw ends the loop with it. */
  run(call: ToolCall, progress: Readonly<LoopProgress>): Promise<ToolAnswer<Stop>>
  /** Refuses a call before it runs (a repeat guard): its answer is given, the loop stops. */
  refuse?(call: ToolCall): Required<ToolAnswer<Stop>> | undefined
  /** After a step whose every call ran and was answered: the conversation is well formed to go on from. */
  checkpoint?(messages: ModelMessage[]): Promise<void>
  /** The id of a call the provider sent without one. Default `call_<step>_<index>`. */
  callId?(index: number): string
}

export interface LoopLimits {
  /** Model calls; the loop ends `steps` before one more. Default no limit. */
  maxModelCalls?: number
  /** Tool calls run; a call past it is answered `Not run` and the loop ends `steps`. Default no limit. */
  maxToolCalls?: number
  /** Tokens of every call together, checked after each step. Default no limit. */
  maxTokens?: number
  /** Aborts the loop's model calls, and the loop then ends `time` rather than failing; checked before each step. */
  deadline?: AbortSignal
}

type CallSettings = Pick<ModelRequest, 'temperature' | 'maxOutputTokens' | 'logprobs'>

export interface ModelLoop<Stop extends string> {
  provider: ModelProvider
  model: string
  /** The conversation so far; the model's tool calls and their answers are appended to it. */
  messages: ModelMessage[]
  /** Aborting fails the loop with the signal's reason. */
  signal: AbortSignal
  /** Per model call, or the same for every one. */
  request?: CallSettings | ((step: number) => CallSettings)
  tools?: LoopTools<Stop>
  limits?: LoopLimits
  /** The view of step `step` (from 0), made as the step begins; `stop()` ends the model call and the loop, `interrupted`. */
  view?: (step: number, stop: () => void) => StepView
  /** Where each call's tokens are counted: the provider's report, or about four characters a token. */
  metering?: {
    meter?: Pick<UsageMeter, 'record'>
    caller: Caller
    /** A call that brought nothing back (refused before any token) is not counted. Default: it is, its input estimated. */
    skipEmpty?: boolean
  }
}

/** Why the loop ended: the model answered without a tool call, a budget, a view's `stop()`, a tool answered elsewhere, or a tool's own reason. */
export type LoopStop<Stop extends string = never> = 'answered' | 'steps' | 'tokens' | 'time' | 'interrupted' | 'pending' | Stop

export interface LoopEnd<Stop extends string> extends LoopProgress {
  stop: LoopStop<Stop>
  /** The last model call's text. */
  text: string
  /** The last model call's finish reason, as the provider named it. */
  finishReason?: string
}

const STEPS_SPENT = 'the steps budget is spent; the task stops here.'

export async function runModelLoop<Stop extends string = never>(loop: ModelLoop<Stop>): Promise<LoopEnd<Stop>> {
  const { signal, tools, limits = {} } = loop
  const deadline = limits.deadline
  const callSignal = deadline ? AbortSignal.any([signal, deadline]) : signal
  const progress: LoopProgress = { modelCalls: 0, toolCalls: 0, tokens: 0 }
  let last: { text: string; finishReason?: string } = { text: '' }
  const end = (stop: LoopStop<Stop>): LoopEnd<Stop> => ({ stop, ...progress, text: last.text, finishReason: last.finishReason })

  for (;;) {
    if (deadline?.aborted) return end('time')
    if (progress.modelCalls >= (limits.maxModelCalls ?? Infinity)) return end('steps')
    const step = progress.modelCalls++
    let stopped = false
    const view = loop.view?.(step, () => (stopped = true)) ?? {}
    let reply: ModelReply
    try {
      reply = await callModel(loop, step, view, callSignal, () => stopped)
      callSignal.throwIfAborted()
    } catch (err) {
      if (deadline?.aborted && !signal.aborted) return end('time')
      throw err
    }
    progress.tokens += reply.tokens
    last = reply
    if (stopped) return end('interrupted')
    if (reply.calls.length === 0 || !tools) {
      view.stepEnd?.()
      return end('answered')
    }
    loop.messages.push({
      role: 'assistant',
      content: reply.text || null,
      tool_calls: reply.calls.map((c) => ({ id: c.id, type: 'function' as const, function: { name: c.name, arguments: c.arguments || '{}' } })),
    })
    const ended = await answerCalls(loop.messages, tools, reply.calls, progress, limits)
    view.stepEnd?.()
    if (ended) return end(ended)
    if (progress.tokens >= (limits.maxTokens ?? Infinity)) return end('tokens')
  }
}

/** Runs a step's tool calls in order, appending each answer; what ended the loop, if anything did. */
async function answerCalls<Stop extends string>(
  messages: ModelMessage[],
  tools: LoopTools<Stop>,
  calls: readonly ToolCall[],
  progress: LoopProgress,
  limits: LoopLimits,
): Promise<Stop | 'steps' | 'pending' | undefined> {
  const answer = (call: ToolCall, content: string) => messages.push({ role: 'tool', tool_call_id: call.id, content })
  // Every call the model made gets an answer, even one left unrun: the conversation stays well formed.
  const notRun = (from: number, why: string) => {
    for (const call of calls.slice(from)) answer(call, `Not run: ${why}`)
  }
  let pending = false
  for (const [i, call] of calls.entries()) {
    if (progress.toolCalls >= (limits.maxToolCalls ?? Infinity)) {
      notRun(i, STEPS_SPENT)
      return 'steps'
    }
    const refused = tools.refuse?.(call)
    if (refused) {
      answer(call, refused.answer)
      notRun(i + 1, refused.stop.why)
      return refused.stop.reason
    }
    progress.toolCalls++
    const result = await tools.run(call, progress)
    if (result.answer === undefined) pending = true
    else answer(call, result.answer)
    if (i === calls.length - 1) await tools.checkpoint?.(messages)
    if (result.stop) {
      notRun(i + 1, result.stop.why)
      return result.stop.reason
    }
  }
  return pending ? 'pending' : undefined
}

interface ModelReply {
  text: string
  calls: ToolCall[]
  finishReason?: string
  tokens: number
}

/** One streamed model call: its events shown through `view`, its text and tool calls collected, its tokens metered. */
async function callModel<Stop extends string>(
  loop: ModelLoop<Stop>,
  step: number,
  view: StepView,
  signal: AbortSignal,
  stopped: () => boolean,
): Promise<ModelReply> {
  const settings = typeof loop.request === 'function' ? loop.request(step) : loop.request
  const definitions = loop.tools?.definitions
  const request: ModelRequest = { model: loop.model, messages: loop.messages, ...settings, tools: definitions?.length ? definitions : undefined }
  const calls = new Map<number, ToolCall>()
  let text = ''
  let finishReason: string | undefined
  let usage: Usage | undefined
  let completed = false
  let tokens = 0
  try {
    stream: for await (const batch of loop.provider.stream(request, signal)) {
      for (let at = 0; at < batch.length; at++) {
        const event = batch[at]!
        switch (event.type) {
          case 'text': {
            let delta = event.delta
            let logprobs = event.logprobs
            // Text that arrived together leaves together: one delta rather than one per token.
            if (view.joinReads?.()) {
              for (let next = batch[at + 1]; next?.type === 'text'; next = batch[++at + 1]) delta += next.delta
              logprobs = undefined
            }
            text += delta
            if (delta) view.text?.(delta, logprobs)
            break
          }
          case 'reasoning':
            view.reasoning?.(event.delta)
            break
          case 'tool-call': {
            let call = calls.get(event.index)
            if (!call) {
              const id = event.id ?? loop.tools?.callId?.(event.index) ?? `call_${step}_${event.index}`
              call = { id, name: event.name ?? '', arguments: '' }
              calls.set(event.index, call)
              view.toolInputStart?.(call)
            } else if (event.name && !call.name) call.name = event.name
            if (event.argumentsDelta) {
              call.arguments += event.argumentsDelta
              view.toolInputDelta?.(call, event.argumentsDelta)
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
        if (stopped()) break stream
      }
    }
    completed = !stopped()
  } finally {
    view.streamEnd?.(completed)
    // Counted before the loop appends to the messages: they are the request's as sent.
    tokens = countTokens(loop, loop.messages, calls.size ? text + JSON.stringify([...calls.values()]) : text, usage)
  }
  return { text, calls: [...calls.values()], finishReason, tokens }
}

/** Counts a call's tokens (the provider's report, or about four characters a token) and meters them; answers their sum. */
function countTokens(loop: Pick<ModelLoop<string>, 'metering' | 'model'>, messages: readonly ModelMessage[], output: string, usage: Usage | undefined): number {
  const metering = loop.metering
  if (metering?.skipEmpty && !usage && !output) return 0
  const counted = usage ?? { inputTokens: Math.ceil(JSON.stringify(messages).length / 4), outputTokens: Math.ceil(output.length / 4) }
  if (metering?.meter) {
    const { meter, caller } = metering
    meter.record({ ...caller, kind: 'chat_tokens_in', model: loop.model, quantity: counted.inputTokens })
    meter.record({ ...caller, kind: 'chat_tokens_out', model: loop.model, quantity: counted.outputTokens })
  }
  return counted.inputTokens + counted.outputTokens
}
