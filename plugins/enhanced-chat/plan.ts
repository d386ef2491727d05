/** Reading what the model writes: its plan, and the code blocks in its answers. */

/**
 * The steps of a plan answered as JSON (`{"steps": [...]}` or a bare array, possibly fenced) or, failing
 * that, as a numbered or bulleted list. At most `limit` steps; never empty.
 */
export function parsePlan(text: string, limit: number): string[] {
  const cap = (steps: string[]) =>
    steps
      .map((s) => s.replace(/\s+/g, ' ').trim().slice(0, 300))
      .filter(Boolean)
      .slice(0, limit)
  const json = /\{[\s\S]*\}|\[[\s\S]*\]/.exec(text)?.[0]
  if (json)
    try {
      const parsed = JSON.parse(json) as unknown
      const list = Array.isArray(parsed) ? parsed : (parsed as { steps?: unknown }).steps
      if (Array.isArray(list)) {
        const steps = cap(
          list.map((s) => (typeof s === 'string' ? s : typeof s === 'object' && s ? String((s as { title?: unknown }).title ?? JSON.stringify(s)) : String(s))),
        )
        if (steps.length) return steps
      }
    } catch {
      // Not JSON after all: read it as a list.
    }
  const listed = cap(
    text
      .split('\n')
      .map((line) => /^\s*(?:\d+[.)]|[-*•])\s+(.+)$/.exec(line)?.[1] ?? '')
      .filter(Boolean),
  )
  if (listed.length) return listed
  return cap([text.trim() || 'Answer the request'])
}

export type CodeLanguage = 'typescript' | 'javascript' | 'python'

const FENCE_LANGUAGES: Record<string, CodeLanguage> = {
  ts: 'typescript',
  typescript: 'typescript',
  tsx: 'typescript',
  js: 'javascript',
  javascript: 'javascript',
  jsx: 'javascript',
  mjs: 'javascript',
  py: 'python',
  python: 'python',
  python3: 'python',
}

/** The last fenced TypeScript, JavaScript or Python block of an answer (the model's final version), if any. */
export function extractCode(text: string): { language: CodeLanguage; code: string } | undefined {
  const fence = /```([A-Za-z]*)[^\n]*\n([\s\S]*?)```/g
  let found: { language: CodeLanguage; code: string } | undefined
  for (let m = fence.exec(text); m; m = fence.exec(text)) {
    const language = FENCE_LANGUAGES[m[1]!.toLowerCase()]
    if (language && m[2]!.trim()) found = { language, code: m[2]! }
  }
  return found
}

/** The end of a long output, where errors usually are, within `limit` characters. */
export function trimOutput(output: string, limit = 2000): string {
  if (output.length <= limit) return output
  return `…(${output.length - limit} characters cut)\n${output.slice(-limit)}`
}
