/** Model calls shown as UI message chunks: text parts opened on first use, a step's view, and a plain streamed call. */
import type { Caller } from '../auth/caller.ts'
import type { UsageMeter } from '../usage/meter.ts'
import type { Emit } from './ui-stream.ts'
import { runModelLoop, type StepView, type ToolCall } from './model-loop.ts'
import type { ModelMessage, ModelProvider } from './provider.ts'

/** A text or reasoning part, started by its first delta and ended once. */
export function textPart(emit: Emit, kind: 'text' | 'reasoning', nextId: () => string) {
  // Built once: a delta is nearly every chunk of a stream.
  const start = `${kind}-start` as const
  const deltaType = `${kind}-delta` as const
  const endType = `${kind}-end` as const
  let id: string | undefined
  return {
    delta(delta: string) {
      if (!delta) return
      if (!id) emit({ type: start, id: (id = nextId()) })
      emit({ type: deltaType, id, delta })
    },
    end() {
      if (id) emit({ type: endType, id })
      id = undefined
    },
  }
}

export interface ModelCallContext {
  provider: ModelProvider
  meter?: Pick<UsageMeter, 'record'>
  caller: Caller
  model: string
  emit: Emit
  signal: AbortSignal
  nextPartId: (kind: string) => string
}

/**
 * A step shown as UI message chunks: text and reasoning as parts opened on first use, a tool call's input as it
 * streams (its start closes the text before it). With `silent` the text is only collected (reasoning still
 * shows); with `joinReads` the text of one upstream read leaves as one delta.
 */
export function uiStepView(emit: Emit, nextPartId: (kind: string) => string, options: { silent?: boolean; joinReads?: boolean } = {}) {
  const text = textPart(emit, 'text', () => nextPartId('text'))
  const reasoning = textPart(emit, 'reasoning', () => nextPartId('reasoning'))
  const joinReads = options.joinReads === true
  return {
    text: options.silent ? () => {} : (delta: string) => text.delta(delta),
    joinReads: () => joinReads,
    reasoning: (delta: string) => reasoning.delta(delta),
    toolInputStart(call: ToolCall) {
      text.end()
      emit({ type: 'tool-input-start', toolCallId: call.id, toolName: call.name })
    },
    toolInputDelta: (call: ToolCall, delta: string) => emit({ type: 'tool-input-delta', toolCallId: call.id, inputTextDelta: delta }),
    streamEnd() {
      text.end()
      reasoning.end()
    },
  } satisfies StepView
}

/**
 * One model call without tools, its text and reasoning streamed (or, with `silent`, only collected).
 * Resolves to the whole text; throws the abort reason when the turn's signal aborts.
 */
export async function streamModelText(
  context: ModelCallContext,
  messages: ModelMessage[],
  options: { silent?: boolean; temperature?: number } = {},
): Promise<string> {
  const answer = await runModelLoop({
    provider: context.provider,
    model: context.model,
    messages,
    signal: context.signal,
    request: { temperature: options.temperature },
    view: () => uiStepView(context.emit, context.nextPartId, options),
    metering: { meter: context.meter, caller: context.caller },
  })
  return answer.text
}
