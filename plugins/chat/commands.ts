/** Commands typed into a chat message: `!search <query>` and `!image <prompt>`, at the very start only. */

export type ChatCommand =
  | { name: 'search'; argument: string }
  | { name: 'image'; argument: string }
  | { name: 'unknown'; given: string }
  | { name: 'missing-argument'; command: 'search' | 'image' }

export const KNOWN_COMMANDS = [
  { usage: '!search <query>', description: 'searches the web and answers from the results, with sources' },
  { usage: '!image <prompt>', description: 'generates an image' },
] as const

/** undefined for ordinary text, which includes a message that merely mentions `!search` later on. */
export function parseCommand(text: string | undefined): ChatCommand | undefined {
  if (!text) return undefined
  const match = /^\s*!([A-Za-z][\w-]*)(?:\s+([\s\S]*))?$/.exec(text)
  if (!match) return undefined
  const name = match[1]!.toLowerCase()
  const argument = (match[2] ?? '').trim()
  if (name !== 'search' && name !== 'image') return { name: 'unknown', given: match[1]! }
  if (!argument) return { name: 'missing-argument', command: name }
  return { name, argument }
}

export function commandHelp(): string {
  return `Known commands: ${KNOWN_COMMANDS.map((c) => `${c.usage} (${c.description})`).join('; ')}`
}
