/** Pieces shared by every kind of turn: text parts opened on first use, and a plain streamed model call. */
import type { Caller } from '../auth/caller.ts'
import type { UsageMeter } from '../usage/meter.ts'
import type { Emit } from './ui-stream.ts'
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

/** Counts usage from the provider's report, or about four characters a token when it sends none. */
export function meterModelCall(
  context: Pick<ModelCallContext, 'meter' | 'caller' | 'model'>,
  messages: readonly ModelMessage[],
  output: string,
  usage: { inputTokens: number; outputTokens: number } | undefined,
) {
  const counted = usage ?? { inputTokens: Math.ceil(JSON.stringify(messages).length / 4), outputTokens: Math.ceil(output.length / 4) }
  context.meter?.record({ ...context.caller, kind: 'chat_tokens_in', model: context.model, quantity: counted.inputTokens })
  context.meter?.record({ ...context.caller, kind: 'chat_tokens_out', model: context.model, quantity: counted.outputTokens })
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
  const text = textPart(context.emit, 'text', () => context.nextPartId('text'))
  const reasoning = textPart(context.emit, 'reasoning', () => context.nextPartId('reasoning'))
  let output = ''
  let usage: { inputTokens: number; outputTokens: number } | undefined
  try {
    for await (const batch of context.provider.stream({ model: context.model, messages, temperature: options.temperature }, context.signal))
      for (const event of batch) {
        if (event.type === 'text') {
          output += event.delta
          if (!options.silent) text.delta(event.delta)
        } else if (event.type === 'reasoning') reasoning.delta(event.delta)
        else if (event.type === 'usage') usage = { inputTokens: event.inputTokens, outputTokens: event.outputTokens }
      }
  } finally {
    text.end()
    reasoning.end()
    meterModelCall(context, messages, output, usage)
  }
  if (context.signal.aborted) throw context.signal.reason
  return output
}
