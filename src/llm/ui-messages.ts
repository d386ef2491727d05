/** UI messages as the model provider takes them, and the ids and text of UI messages. */
import type { ModelMessage } from './provider.ts'
import type { UiMessage, UiPart } from './ui-stream.ts'

export function newMessageId(): string {
  return `msg_${Bun.randomUUIDv7('hex').replaceAll('-', '')}`
}

export function messageText(message: Pick<UiMessage, 'parts'>): string {
  return message.parts
    .filter((p) => p.type === 'text' && typeof p.text === 'string')
    .map((p) => p.text as string)
    .join('')
}

const isToolPart = (p: UiPart) => p.type.startsWith('tool-') || p.type === 'dynamic-tool'
const toolNameOf = (p: UiPart) => (p.type === 'dynamic-tool' ? String(p.toolName) : p.type.slice('tool-'.length))

function userContent(message: UiMessage): ModelMessage['content'] {
  const content: ({ type: 'text'; text: string } | { type: 'image_url'; image_url: { url: string } })[] = []
  for (const p of message.parts) {
    if (p.type === 'text' && typeof p.text === 'string') content.push({ type: 'text', text: p.text })
    else if (p.type === 'file' && typeof p.url === 'string' && String(p.mediaType ?? '').startsWith('image/'))
      content.push({ type: 'image_url', image_url: { url: p.url } })
  }
  if (content.every((c) => c.type === 'text')) return content.map((c) => (c as { text: string }).text).join('')
  return content as ModelMessage['content']
}

/**
 * UI messages to provider messages. An assistant message becomes one provider message per step
 * (text plus the tool calls of that step) followed by the results of those calls; tool calls that
 * never got a result are left out, since providers refuse a call without its answer.
 */
export function toModelMessages(history: readonly UiMessage[]): ModelMessage[] {
  const out: ModelMessage[] = []
  for (const message of history) {
    if (message.role === 'system') out.push({ role: 'system', content: messageText(message) })
    else if (message.role === 'user') out.push({ role: 'user', content: userContent(message) } as ModelMessage)
    else {
      let text = ''
      let calls: UiPart[] = []
      const flush = () => {
        const answered = calls.filter((c) => c.state === 'output-available' || c.state === 'output-error')
        if (!text && answered.length === 0) return
        out.push({
          role: 'assistant',
          content: text || null,
          ...(answered.length
            ? {
                tool_calls: answered.map((c) => ({
                  id: String(c.toolCallId),
                  type: 'function' as const,
                  function: { name: toolNameOf(c), arguments: JSON.stringify(c.input ?? {}) },
                })),
              }
            : {}),
        } as ModelMessage)
        for (const c of answered)
          out.push({
            role: 'tool',
            tool_call_id: String(c.toolCallId),
            content: c.state === 'output-available' ? JSON.stringify(c.output ?? null) : `Error: ${String(c.errorText ?? 'failed')}`,
          })
        text = ''
        calls = []
      }
      for (const p of message.parts) {
        if (p.type === 'step-start') flush()
        else if (p.type === 'text' && typeof p.text === 'string') text += p.text
        else if (isToolPart(p)) calls.push(p)
      }
      flush()
    }
  }
  return out
}
