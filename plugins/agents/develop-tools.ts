/**
 * The tools the `develop` loop offers the model, as OpenAI function definitions, and what each does in the
 * task's workspace. A refused call (a path outside the workspace, an edit whose text is not found or not
 * unique) answers the model with the reason; it is not a failure of the task.
 */
import type { ModelTool } from '../../src/llm/provider.ts'
import type { SandboxCommandRequest, SandboxResult } from '../../src/sandbox/index.ts'
import type { CodeIndex } from '../code-search/index.ts'
import { TaskError } from './service.ts'
import { asText, type Workspaces } from './workspaces.ts'

export const DEVELOP_TOOL_NAMES = ['list_files', 'read_file', 'search_code', 'edit_file', 'write_file', 'delete_file', 'run_command', 'finish'] as const
export type DevelopToolName = (typeof DEVELOP_TOOL_NAMES)[number]

const fn = (name: DevelopToolName, description: string, properties: Record<string, unknown>, required: string[]): ModelTool => ({
  type: 'function',
  function: { name, description, parameters: { type: 'object', properties, required, additionalProperties: false } },
})
const str = (description: string) => ({ type: 'string', description })
const int = (description: string) => ({ type: 'integer', minimum: 1, description })

export const DEVELOP_TOOLS: ModelTool[] = [
  fn('list_files', 'List the files of the workspace (or of one directory in it), with their sizes.', { directory: str('Directory relative to the workspace root; default the root') }, []),
  fn(
    'read_file',
    'Read a text file of the workspace, whole or a range of lines (numbered from 1).',
    { path: str('Path relative to the workspace root'), start_line: int('First line to read'), end_line: int('Last line to read') },
    ['path'],
  ),
  fn(
    'search_code',
    "Search the workspace's current files for a text (case-insensitive, literal), and the organisation's code index when the workspace came from an import.",
    { query: str('Text to look for') },
    ['query'],
  ),
  fn(
    'edit_file',
    'Replace one exact occurrence of old_text in a file with new_text. Refused when old_text is not found or found more than once: add surrounding lines to make it unique.',
    { path: str('Path relative to the workspace root'), old_text: str('Exact text to replace, whitespace included'), new_text: str('Replacement text') },
    ['path', 'old_text', 'new_text'],
  ),
  fn('write_file', 'Create or overwrite a file with the given content.', { path: str('Path relative to the workspace root'), content: str('The whole new content') }, ['path', 'content']),
  fn('delete_file', 'Delete a file.', { path: str('Path relative to the workspace root') }, ['path']),
  fn(
    'run_command',
    'Run a shell command line in the workspace (sandboxed: no network, time and memory limits; bun, node, git and the usual shell tools are there). Answers the exit status and output.',
    { command: str('The command line, for example `bun test`') },
    ['command'],
  ),
  fn('finish', 'End the task with a summary of what was changed and why.', { summary: str('What was done, for the reviewer') }, ['summary']),
]

export interface DevelopToolContext {
  taskId: string
  orgId: string
  workspaces: Workspaces
  runCommand: (request: SandboxCommandRequest) => Promise<SandboxResult>
  codeIndex?: Pick<CodeIndex, 'search'>
  /** The imported repository, for the code index. */
  repositoryId?: string
  signal: AbortSignal
  /** Longest tool answer handed to the model, in characters. */
  maxAnswerChars: number
}

export interface ToolOutcome {
  /** What the model is told. */
  answer: string
  /** A short line for the task's log. */
  summary: string
  /** Set by run_command. */
  command?: { command: string; result: SandboxResult }
  /** Set by finish. */
  finished?: { summary: string }
  /** The call was refused (bad path, edit not found or not unique, bad arguments). */
  refused?: boolean
}

/** Keeps the head and the tail of a long text: an error is usually at the end of a command's output. */
export function clip(text: string, max: number): string {
  if (text.length <= max) return text
  const head = Math.floor(max * 0.3)
  return `${text.slice(0, head)}\n[… ${text.length - max} characters left out …]\n${text.slice(text.length - (max - head))}`
}

const stringArg = (args: Record<string, unknown>, name: string, required = true): string => {
  const value = args[name]
  if (typeof value === 'string') return value
  if (!required && value === undefined) return ''
  throw new TaskError('invalid_tool_input', `${name} must be a string`)
}

const refused = (message: string): ToolOutcome => ({ answer: `Refused: ${message}`, summary: `refused: ${message}`, refused: true })

async function readText(context: DevelopToolContext, path: string): Promise<string> {
  const text = asText(await context.workspaces.read(context.taskId, path))
  if (text === undefined) throw new TaskError('not_text', `${path} is not a text file`)
  return text
}

async function searchWorkspace(context: DevelopToolContext, query: string): Promise<string[]> {
  const needle = query.toLowerCase()
  const hits: string[] = []
  for (const entry of await context.workspaces.list(context.taskId)) {
    if (entry.type !== 'file' || entry.bytes > 1024 * 1024) continue
    const text = asText(await context.workspaces.read(context.taskId, entry.path))
    if (text === undefined) continue
    const lines = text.split('\n')
    for (let i = 0; i < lines.length && hits.length < 50; i++)
      if (lines[i]!.toLowerCase().includes(needle)) hits.push(`${entry.path}:${i + 1}: ${lines[i]!.trim().slice(0, 200)}`)
    if (hits.length >= 50) break
  }
  return hits
}

export async function runDevelopTool(context: DevelopToolContext, name: string, args: Record<string, unknown>): Promise<ToolOutcome> {
  const { workspaces, taskId } = context
  try {
    switch (name) {
      case 'list_files': {
        const directory = stringArg(args, 'directory', false)
        const entries = await workspaces.list(taskId, directory)
        const lines = entries.map((e) => `${e.path}${e.type === 'symlink' ? ' (symbolic link)' : ''} ${e.bytes} B`)
        return { answer: clip(lines.join('\n') || '(no files)', context.maxAnswerChars), summary: `listed ${entries.length} files${directory ? ` in ${directory}` : ''}` }
      }
      case 'read_file': {
        const path = stringArg(args, 'path')
        const lines = (await readText(context, path)).split('\n')
        const start = Math.max(1, Number(args.start_line ?? 1) || 1)
        const end = Math.min(lines.length, Number(args.end_line ?? lines.length) || lines.length)
        const body = lines.slice(start - 1, end).join('\n')
        return { answer: clip(`${path} lines ${start}-${end} of ${lines.length}:\n${body}`, context.maxAnswerChars), summary: `read ${path} (lines ${start}-${end})` }
      }
      case 'search_code': {
        const query = stringArg(args, 'query')
        if (!query.trim()) return refused('query is empty')
        const local = await searchWorkspace(context, query)
        const indexed =
          context.codeIndex && context.repositoryId
            ? await context.codeIndex.search({ orgId: context.orgId }, { query: query.slice(0, 500), repositoryIds: [context.repositoryId], limit: 5, expand: false })
            : []
        const parts = [`In the workspace (${local.length} line${local.length === 1 ? '' : 's'}):`, ...local]
        if (indexed.length)
          parts.push('', 'In the code index (the imported commit):', ...indexed.map((h) => `${h.path}:${h.startLine}-${h.endLine}\n${h.snippet.replace(/<\/?mark>/g, '')}`))
        return { answer: clip(parts.join('\n'), context.maxAnswerChars), summary: `searched "${query.slice(0, 80)}": ${local.length} in the workspace, ${indexed.length} indexed` }
      }
      case 'edit_file': {
        const path = stringArg(args, 'path')
        const oldText = stringArg(args, 'old_text')
        const newText = stringArg(args, 'new_text')
        if (oldText === '') return refused('old_text is empty; use write_file to create a file')
        const text = await readText(context, path)
        const count = text.split(oldText).length - 1
        if (count === 0) return refused(`old_text was not found in ${path}`)
        if (count > 1) return refused(`old_text occurs ${count} times in ${path}; include more surrounding text so it is unique`)
        const at = text.indexOf(oldText)
        await workspaces.write(taskId, path, text.slice(0, at) + newText + text.slice(at + oldText.length))
        return { answer: `Edited ${path}.`, summary: `edited ${path}` }
      }
      case 'write_file': {
        const path = stringArg(args, 'path')
        const content = stringArg(args, 'content')
        await workspaces.write(taskId, path, content)
        return { answer: `Wrote ${path} (${Buffer.byteLength(content)} bytes).`, summary: `wrote ${path}` }
      }
      case 'delete_file': {
        const path = stringArg(args, 'path')
        await workspaces.delete(taskId, path)
        return { answer: `Deleted ${path}.`, summary: `deleted ${path}` }
      }
      case 'run_command': {
        const command = stringArg(args, 'command')
        if (!command.trim()) return refused('command is empty')
        const { value: result, problem } = await workspaces.whileWithinLimits(taskId, context.signal, (signal) =>
          context.runCommand({ directory: workspaces.get(taskId).tree, command, maxFileBytes: workspaces.limits.maxBytes, signal }),
        )
        if (problem) throw new TaskError('workspace_limit', `\`${command.slice(0, 200)}\` made the workspace hold ${problem}; it was stopped`)
        const status = result.exitCode === null ? result.verdict : `exit ${result.exitCode}`
        return {
          answer: clip(`${status}\n${result.output}${result.truncated ? '\n[output cut at the sandbox limit]' : ''}`, context.maxAnswerChars),
          summary: `$ ${command.slice(0, 200)} → ${result.verdict}${result.exitCode === null ? '' : ` (exit ${result.exitCode})`}`,
          command: { command, result },
        }
      }
      case 'finish': {
        const summary = stringArg(args, 'summary')
        return { answer: 'Finished.', summary: 'finished', finished: { summary } }
      }
      default:
        return refused(`there is no tool ${name}; the tools are ${DEVELOP_TOOL_NAMES.join(', ')}`)
    }
  } catch (err) {
    // What the model asked for cannot be done and nothing happened: it is told why. A command that filled the
    // workspace past its limits already wrote the files, so that ends the task.
    const fatal = err instanceof TaskError && (err.code === 'workspace_not_found' || (err.code === 'workspace_limit' && name === 'run_command'))
    if (err instanceof TaskError && !fatal) return refused(err.message)
    throw err
  }
}
