/**
 * What every develop tool gets (the task's workspace, its sandbox, the code index, and the session the tools keep
 * between calls) and what it answers (the model's text, a log line, and what the loop needs to know).
 */
import type { SandboxCommandRequest, SandboxResult } from '../../../src/sandbox/index.ts'
import type { CodeIndex } from '../../code-search/index.ts'
import { TaskError } from '../tasks/index.ts'
import type { Workspaces } from '../workspaces/index.ts'
import { EditHistory } from './history.ts'
import type { ShellState } from './shell.ts'

/** What the tools remember between the calls of one task. */
export interface DevelopSession {
  /** The edits made by the tools, per file, for undo_edit. */
  edits: EditHistory
  /** run_command's working directory and exported environment. */
  shell: ShellState
}

export const newDevelopSession = (): DevelopSession => ({ edits: new EditHistory(), shell: {} })

export interface DevelopToolContext {
  taskId: string
  orgId: string
  workspaces: Workspaces
  runCommand: (request: SandboxCommandRequest) => Promise<SandboxResult>
  /** The sandbox's limits of one command, stated in run_command's answers; unstated when unknown. */
  commandLimits?: { timeoutMs: number; maxOutputBytes: number }
  codeIndex?: Pick<CodeIndex, 'search'>
  /** The imported repository, for the code index. */
  repositoryId?: string
  signal: AbortSignal
  /** Longest tool answer handed to the model, in characters. */
  maxAnswerChars: number
  session: DevelopSession
}

export interface ToolOutcome {
  /** What the model is told. */
  answer: string
  /** A short line for the task's log. */
  summary: string
  /** Set by run_command; `result.output` is what the command printed (the shell's own bookkeeping taken out). */
  command?: { command: string; result: SandboxResult; fromRoot: boolean }
  /** Set by finish. */
  finished?: { summary: string }
  /** The call was refused (bad path, edit not found or not unique, a file that would stop parsing, bad arguments). */
  refused?: boolean
}

export const refused = (message: string): ToolOutcome => ({
  answer: `Refused: ${message}`,
  summary: `refused: ${message.split('\n')[0]!.slice(0, 300)}`,
  refused: true,
})

/** A string argument; a missing optional one is ''. */
export function stringArg(args: Record<string, unknown>, name: string, required = true): string {
  const value = args[name]
  if (typeof value === 'string') return value
  if (!required && (value === undefined || value === null)) return ''
  throw new TaskError('invalid_tool_input', `${name} must be a string`)
}

/**
 * A whole-number argument of at least `min`; a missing optional one is undefined. Numbers written as the answers
 * write them (`"1,861"`) are taken too.
 */
export function integerArg(args: Record<string, unknown>, name: string, min: number): number | undefined {
  const value = args[name]
  if (value === undefined || value === null) return undefined
  const n = typeof value === 'string' && /^\s*\d{1,3}(,?\d{3})*\s*$/.test(value) ? Number(value.replaceAll(',', '')) : value
  if (typeof n !== 'number' || !Number.isInteger(n) || n < min) throw new TaskError('invalid_tool_input', `${name} must be a whole number of at least ${min}`)
  return n
}

export const booleanArg = (args: Record<string, unknown>, name: string): boolean => args[name] === true || args[name] === 'true'
