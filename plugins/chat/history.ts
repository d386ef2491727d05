/** Conversation history: merging what a client sends with what is stored. */
import { messageText, newMessageId } from '../../src/llm/ui-messages.ts'
import type { UiMessage, UiPart } from '../../src/llm/ui-stream.ts'
import type { IncomingMessage } from './schemas.ts'

/** A plain `{ role, content }` becomes a UI message with one text part. */
export function toUiMessage(message: IncomingMessage): UiMessage {
  const parts = (message.parts as UiPart[] | undefined) ?? [{ type: 'text', text: message.content ?? '' }]
  return { id: message.id ?? newMessageId(), role: message.role, parts, ...(message.metadata !== undefined ? { metadata: message.metadata } : {}) }
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

/** A chat's title: the start of its first user message. */
export function titleFor(history: readonly UiMessage[]): string {
  const first = history.find((m) => m.role === 'user')
  const text = first ? messageText(first).replace(/\s+/g, ' ').trim() : ''
  return text.length > 80 ? `${text.slice(0, 77)}...` : text || 'New chat'
}
