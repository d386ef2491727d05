/**
 * Whether a file still parses after an edit. TypeScript and JavaScript are parsed by Bun's transpiler in this
 * process, JSON by JSON.parse: both only parse, nothing is run. Python is parsed by `python3` inside the task's
 * sandbox, in the workspace: the host never runs an interpreter on what the sandbox or the model wrote.
 */
import { checkSyntaxWith, loaderForFile } from '../../../src/sandbox/languages.ts'
import type { SandboxResult } from '../../../src/sandbox/index.ts'
import type { DevelopToolContext } from './context.ts'

export type SyntaxKind = 'script' | 'json' | 'python'

export function syntaxKind(path: string): SyntaxKind | undefined {
  const lower = path.toLowerCase()
  if (loaderForFile(lower)) return 'script'
  if (lower.endsWith('.json')) return 'json'
  if (lower.endsWith('.py') || lower.endsWith('.pyi')) return 'python'
  return undefined
}

/** The parser's message for a TypeScript, JavaScript or JSON text, or undefined when it parses (or is another kind). */
export function parseProblem(path: string, text: string): string | undefined {
  const kind = syntaxKind(path)
  if (kind === 'json') {
    try {
      JSON.parse(text)
      return undefined
    } catch (err) {
      return `${path}: ${(err as Error).message}`
    }
  }
  if (kind !== 'script') return undefined
  const check = checkSyntaxWith(loaderForFile(path.toLowerCase())!, text, path)
  return check.ok ? undefined : check.message
}

/** Longest a Python parse may take in the sandbox. */
const PYTHON_CHECK_TIMEOUT_MS = 20_000

const quote = (text: string) => `'${text.replaceAll("'", `'"'"'`)}'`

/**
 * Parses the workspace file `path` with Python's own parser, in the sandbox. `problem`: the parser's message (from
 * the offending file's line to the error); `unchecked`: why no verdict could be had (no python3, a limit).
 */
export async function pythonProblem(context: DevelopToolContext, path: string): Promise<{ problem?: string; unchecked?: string }> {
  const command = `python3 -c "import ast,sys; ast.parse(open(sys.argv[1],'rb').read(), sys.argv[1])" ${quote(path)}`
  let result: SandboxResult
  try {
    result = await context.runCommand({
      directory: context.workspaces.get(context.taskId).tree,
      command,
      timeoutMs: Math.min(PYTHON_CHECK_TIMEOUT_MS, context.commandLimits?.timeoutMs ?? PYTHON_CHECK_TIMEOUT_MS),
      maxFileBytes: context.workspaces.limits.maxBytes,
      signal: context.signal,
    })
  } catch (err) {
    context.signal.throwIfAborted()
    return { unchecked: `the sandbox could not run python3 (${(err as Error).message})` }
  }
  if (result.verdict === 'passed') return {}
  const output = result.output.trimEnd()
  if (result.exitCode === 127 || /python3: (command )?not found/.test(output)) return { unchecked: 'python3 is not installed in the sandbox' }
  if (result.exitCode !== 1 || !/^(SyntaxError|IndentationError|TabError|ValueError)\b/m.test(output))
    return { unchecked: `the check ended ${result.verdict}${result.exitCode === null ? '' : ` (exit ${result.exitCode})`}` }
  // From the frame naming the file (its line, the caret) to the error itself; Python's own frames are left out.
  const lines = output.split('\n')
  const frame = lines.findLastIndex((line) => line.startsWith(`  File ${JSON.stringify(path)}`) || line.startsWith(`  File "${path}"`))
  return { problem: (frame >= 0 ? lines.slice(frame) : lines.slice(-6)).join('\n').slice(0, 4000) }
}
