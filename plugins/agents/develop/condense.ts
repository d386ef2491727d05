/**
 * An earlier conversation made to fit a budget before a follow-up goes on from it. The system message, the first
 * instruction and the most recent exchanges stay as they were; older tool answers and long texts are cut to their
 * head and tail; if that is still too much, the oldest exchanges (an assistant's tool calls with their answers,
 * never one without the other) give way to a note saying how many were left out.
 */
import type { ModelMessage } from '../../../src/llm/provider.ts'
import { cutMiddle } from './text.ts'

/** Characters of an earlier conversation a follow-up carries (about 50,000 tokens). */
export const CONDENSED_CONVERSATION_CHARS = 200_000
/** The latest messages kept whole. */
const RECENT_MESSAGES = 12
/** An older tool answer or text longer than this keeps its head and tail only. */
const OLDER_MESSAGE_CHARS = 600

const sizeOf = (messages: readonly ModelMessage[]) => messages.reduce((sum, m) => sum + JSON.stringify(m).length, 0)

/** Splits the messages after the first instruction into exchanges: an assistant message and the tool answers that follow it. */
function exchanges(messages: readonly ModelMessage[]): ModelMessage[][] {
  const groups: ModelMessage[][] = []
  for (const message of messages) {
    if (message.role === 'tool' && groups.length > 0) groups.at(-1)!.push(message)
    else groups.push([message])
  }
  return groups
}

function shortened(message: ModelMessage): ModelMessage {
  if (typeof message.content !== 'string' || message.content.length <= OLDER_MESSAGE_CHARS) return message
  return { ...message, content: cutMiddle(message.content, OLDER_MESSAGE_CHARS).text } as ModelMessage
}

export function condenseConversation(messages: readonly ModelMessage[], budgetChars = CONDENSED_CONVERSATION_CHARS): ModelMessage[] {
  if (sizeOf(messages) <= budgetChars) return [...messages]
  const head = messages.slice(0, 2)
  const groups = exchanges(messages.slice(2))
  // The recent exchanges, by whole exchanges, covering at least RECENT_MESSAGES messages.
  let recentFrom = groups.length
  for (let kept = 0; recentFrom > 0 && kept < RECENT_MESSAGES; ) kept += groups[--recentFrom]!.length
  const older = groups.slice(0, recentFrom).map((group) => group.map(shortened))
  const recent = groups.slice(recentFrom)
  let dropped = 0
  const assemble = () => {
    const note: ModelMessage[] =
      dropped > 0 ? [{ role: 'user', content: `[${dropped} earlier steps of this conversation are left out to fit its budget]` }] : []
    return [...head, ...note, ...older.slice(dropped).flat(), ...recent.flat()]
  }
  let condensed = assemble()
  while (sizeOf(condensed) > budgetChars && dropped < older.length) {
    dropped++
    condensed = assemble()
  }
  return condensed
}

/**
 * The conversation with every tool call answered: a task that failed in the middle of a turn (or whose process
 * died) left calls with no answer, which a model provider refuses; each gets one saying it was not answered.
 */
export function answerEveryCall(messages: readonly ModelMessage[]): ModelMessage[] {
  const whole: ModelMessage[] = []
  let i = 0
  while (i < messages.length) {
    const message = messages[i++]!
    whole.push(message)
    if (message.role !== 'assistant' || !message.tool_calls?.length) continue
    // Its answers follow it; the missing ones are added after those that are there.
    const answered = new Set<string>()
    while (i < messages.length && messages[i]!.role === 'tool') {
      const answer = messages[i++]!
      if (answer.role === 'tool') answered.add(answer.tool_call_id)
      whole.push(answer)
    }
    for (const call of message.tool_calls)
      if (!answered.has(call.id)) whole.push({ role: 'tool', tool_call_id: call.id, content: 'Not answered: the task ended before this call finished.' })
  }
  return whole
}
