/**
 * Conversation history: merging what a client sends with what is stored, and turning UI messages
 * into the provider's chat messages.
 */
import type { IncomingMessage, UiMessage, UiPart } from './model.ts'
import type { ModelMessage } from './provider.ts'

export function newMessageId(): string {
  return `msg_${Bun.randomUUIDv7('hex').replaceAll('-', '')}`
}

/** A plain `{ role, content }` becomes a UI message with one text part. */
export function toUiMessage(message: IncomingMessage): UiMessage {
  const parts = (message.parts as UiPart[] | undefined) ?? [{ type: 'text', text: message.content ?? '' }]
  return { id: message.id ?? newMessageId(), role: message.role, parts, ...(message.metadata !== undefined ? { metadata: message.metadata } : {}) }
}

export function messageText(message: Pick<UiMessage, 'parts'>): string {
  return message.parts
    .filter((p) => p.type === 'text' && typeof p.text === 'string')
    .map((p) => p.text as string)
    .join('')
}

/**
 * The history a request continues. Messages with ids (AI SDK clients): when the first one is already
 * stored, the request's list replaces the stored one from there (a full resend, or a regeneration that
 * dropped the last answer); otherwise it is appended. Plain messages: the longest leading run that
 * matches the stored history by role and text is skipped, the rest replaces what follows it, so a
 * client may send the whole conversation or only the new message.
 */
export function mergeHistory(stored: readonly UiMessage[], incoming: readonly IncomingMessage[]): UiMessage[] {
  const withIds = incoming.every((m) => m.id !== undefined)
  if (withIds) {
    const at = stored.findIndex((m) => m.id === incoming[0]!.id)
    const kept = at >= 0 ? stored.slice(0, at) : [...stored]
    const ids = new Set(kept.map((m) => m.id))
    // An id repeated from the kept history would break the per-chat uniqueness; it is a new message then.
    return [...kept, ...incoming.map((m) => (ids.has(m.id!) ? { ...toUiMessage(m), id: newMessageId() } : toUiMessage(m)))]
  }
  let same = 0
  while (
    same < stored.length &&
    same < incoming.length &&
    stored[same]!.role === incoming[same]!.role &&
    messageText(stored[same]!) === (incoming[same]!.content ?? messageText(toUiMessage(incoming[same]!)))
  )
    same++
  const kept = same === 0 ? [...stored] : stored.slice(0, same)
  return [...kept, ...incoming.slice(same).map(toUiMessage)]
}

/** Index of the first message that differs, by id: everything before it is already stored. */
export function firstChange(stored: readonly UiMessage[], history: readonly UiMessage[]): number {
  let i = 0
  while (i < stored.length && i < history.length && stored[i]!.id === history[i]!.id && stored[i] === history[i]) i++
  return i
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

/** A chat's title: the start of its first user message. */
export function titleFor(history: readonly UiMessage[]): string {
  const first = history.find((m) => m.role === 'user')
  const text = first ? messageText(first).replace(/\s+/g, ' ').trim() : ''
  return text.length > 80 ? `${text.slice(0, 77)}...` : text || 'New chat'
}
