import type { UiChunk, UiMessage, UiPart } from './ui-stream.ts'

/**
 * Builds the assistant message from the chunks it is streamed as, the way the AI SDK client
 * assembles it, so the stored copy redraws exactly like the live one.
 */
export function createMessageBuilder(messageId: string) {
  const parts: UiPart[] = []
  const open = new Map<string, UiPart>()
  const tools = new Map<string, UiPart>()
  let finishReason: string | undefined
  let error: string | undefined

  return {
    add(chunk: UiChunk) {
      switch (chunk.type) {
        case 'start-step':
          parts.push({ type: 'step-start' })
          break
        case 'reset-step': {
          // As the AI SDK client does: drop the parts since the step began (or all, outside a step).
          const from = parts.findLastIndex((p) => p.type === 'step-start') + 1
          for (const dropped of parts.splice(from)) {
            for (const [id, part] of open) if (part === dropped) open.delete(id)
            for (const [id, part] of tools) if (part === dropped) tools.delete(id)
          }
          break
        }
        case 'text-start':
        case 'reasoning-start': {
          const part: UiPart = { type: chunk.type === 'text-start' ? 'text' : 'reasoning', text: '' }
          open.set(chunk.id, part)
          parts.push(part)
          break
        }
        case 'text-delta':
        case 'reasoning-delta': {
          const part = open.get(chunk.id)
          if (part) part.text = (part.text as string) + chunk.delta
          break
        }
        case 'text-end':
        case 'reasoning-end':
          open.delete(chunk.id)
          break
        case 'tool-input-available':
        case 'tool-input-error': {
          const part: UiPart = { type: `tool-${chunk.toolName}`, toolCallId: chunk.toolCallId, state: 'input-available', input: chunk.input }
          if (chunk.type === 'tool-input-error') Object.assign(part, { state: 'output-error', errorText: chunk.errorText })
          tools.set(chunk.toolCallId, part)
          parts.push(part)
          break
        }
        case 'tool-output-available': {
          const part = tools.get(chunk.toolCallId)
          if (part) Object.assign(part, { state: 'output-available', output: chunk.output })
          break
        }
        case 'tool-output-error': {
          const part = tools.get(chunk.toolCallId)
          if (part) Object.assign(part, { state: 'output-error', errorText: chunk.errorText })
          break
        }
        case 'source-url':
          parts.push({ type: 'source-url', sourceId: chunk.sourceId, url: chunk.url, ...(chunk.title ? { title: chunk.title } : {}) })
          break
        case 'file':
          parts.push({ type: 'file', mediaType: chunk.mediaType, url: chunk.url })
          break
        case 'finish':
          finishReason = chunk.finishReason
          break
        case 'error':
          error = chunk.errorText
          break
        default:
          if (chunk.type.startsWith('data-') && !('transient' in chunk && chunk.transient)) {
            const data = chunk as { type: string; id?: string; data: unknown }
            parts.push({ type: data.type, ...(data.id ? { id: data.id } : {}), data: data.data })
          }
      }
    },
    /** The message so far; `status` says whether it ended normally. */
    message(status: 'complete' | 'interrupted'): UiMessage {
      return {
        id: messageId,
        role: 'assistant',
        parts,
        metadata: { status: error ? 'error' : status, ...(finishReason ? { finishReason } : {}), ...(error ? { error } : {}) },
      }
    },
  }
}

export type MessageBuilder = ReturnType<typeof createMessageBuilder>
