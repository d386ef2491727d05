/**
 * The tools the `develop` loop offers the model, as OpenAI function definitions, and what each does in the
 * task's workspace (the work itself is in the files beside this one). The descriptions are written so a model can
 * pick a tool by its description alone, as SWE-agent's and OpenHands' are. A refused call (a path outside the
 * workspace, an edit whose text is not found or not unique, a change that would break a file's syntax) answers the
 * model with the reason; it is not a failure of the task.
 */
import type { ModelTool } from '../../../src/llm/provider.ts'
import { TaskError } from '../tasks/index.ts'
import { integerArg, refused, stringArg, type DevelopToolContext, type ToolOutcome } from './context.ts'
import { deleteFile, editFile, insertLines, undoEdit, writeFile } from './edits.ts'
import { UNDO_LEVELS } from './history.ts'
import { findFile, MAX_FOUND_FILES, MAX_SHOWN_MATCHES, searchCode } from './search.ts'
import { carryOver, describeRun, newMarker, readShellTail, sessionDirectory, shellScript } from './shell.ts'
import { clip, count } from './text.ts'
import { viewFile, WINDOW_LINES } from './viewer.ts'
import { asText } from '../workspaces/index.ts'

export { clip } from './text.ts'
export { newDevelopSession, type DevelopSession, type DevelopToolContext, type ToolOutcome } from './context.ts'

export const DEVELOP_TOOL_NAMES = [
  'list_files',
  'find_file',
  'search_code',
  'read_file',
  'edit_file',
  'insert',
  'undo_edit',
  'write_file',
  'delete_file',
  'run_command',
  'finish',
] as const
export type DevelopToolName = (typeof DEVELOP_TOOL_NAMES)[number]

const fn = (name: DevelopToolName, description: string, properties: Record<string, unknown>, required: string[]): ModelTool => ({
  type: 'function',
  function: { name, description, parameters: { type: 'object', properties, required, additionalProperties: false } },
})
const str = (description: string) => ({ type: 'string', description })
const int = (minimum: number, description: string) => ({ type: 'integer', minimum, description })
const path = str('Path of the file, relative to the workspace root (for example src/index.ts)')
const force = {
  type: 'boolean',
  description: "Make the change even though the file would not parse afterwards. Default false: such a change is refused with the parser's message",
}
const within = str(
  'Only look here: a directory (src), a file (src/app.ts), or a glob over paths (src/**/*.ts; one without a slash, like *.py, matches file names anywhere). Default: the whole workspace',
)

export const DEVELOP_TOOLS: ModelTool[] = [
  fn(
    'list_files',
    'List every file under a directory of the workspace (default: the whole workspace), one path per line with its size in bytes; symbolic links are marked. ' +
      'To find files by name use find_file; to find text inside files use search_code.',
    { directory: str('Directory relative to the workspace root; default the root') },
    [],
  ),
  fn(
    'find_file',
    'Find files by name. name is a part of the file name (case-insensitive: "config" finds src/appConfig.ts) or a glob ("*.test.ts", "src/**/util*.py"); ' +
      `without a slash it is matched against file names, with one against whole paths. Answers how many files match, then their paths and sizes (the first ${MAX_FOUND_FILES}).`,
    { name: str('A part of the name, or a glob'), path: within },
    ['name'],
  ),
  fn(
    'search_code',
    'Search the text of the workspace\'s files for a literal string (case-insensitive; not a regular expression). Answers the totals ("37 matches in 5 files"), then, grouped by file, ' +
      `the matching lines with their line numbers and indentation as in the file (up to ${MAX_SHOWN_MATCHES}; the answer says how many more there are and how to narrow the search). ` +
      'When the workspace comes from an imported repository, its code index is searched too and its closest chunks (by meaning, not literally) are shown as numbered lines of the file. ' +
      'Use it to find where something is defined or used before reading or editing.',
    { query: str('The text to look for, as it appears in the code (a name, a string, a line)'), path: within },
    ['query'],
  ),
  fn(
    'read_file',
    `Read a text file with line numbers, one window at a time: ${WINDOW_LINES} lines from start (default line 1), or as many as lines says. ` +
      'The first line of the answer names the lines shown, the file\'s length, and where the next window starts ("src/a.ts lines 101-200 of 512; next: start=201"). ' +
      "A start past the end is refused with the file's length. Each line is shown as its number, a tab, then the line exactly as in the file: the number and the tab are not part of the file, so leave them out of edit_file's old_text.",
    { path, start: int(1, 'First line to show, from 1. Default 1'), lines: int(1, `How many lines to show. Default ${WINDOW_LINES}`) },
    ['path'],
  ),
  fn(
    'edit_file',
    'Change part of a file: replace the one exact occurrence of old_text with new_text. old_text must match the file exactly, whitespace and indentation included (copy it from read_file, without the line numbers). ' +
      "Refused when old_text is not found, or is found more than once (add neighbouring lines to make it unique), and when the change would make a TypeScript, JavaScript, JSON or Python file stop parsing (the parser's message is given; force: true makes it anyway). " +
      'Answers the changed lines and a few lines around them, numbered, as the file now reads.',
    { path, old_text: str('The exact text to replace'), new_text: str('The text to put in its place (empty to delete old_text)'), force },
    ['path', 'old_text', 'new_text'],
  ),
  fn(
    'insert',
    "Add lines to a file without replacing anything: text goes in after line after_line (0 puts it at the top; the file's line count appends it at the end). " +
      "Checked like edit_file (a change that would break the file's syntax is refused unless force: true), and answers the same way.",
    { path, after_line: int(0, 'The line after which text goes; 0 for the top'), text: str('The lines to insert'), force },
    ['path', 'after_line', 'text'],
  ),
  fn(
    'undo_edit',
    `Take back the last change made to a file by edit_file, insert, write_file or delete_file: the file goes back to what it held before that call (a file the change created is deleted). Up to ${UNDO_LEVELS} changes per file can be taken back, most recent first. ` +
      'Changes made by run_command are not tracked.',
    { path },
    ['path'],
  ),
  fn(
    'write_file',
    'Create a file, or replace the whole content of one. To change part of an existing file use edit_file or insert instead. ' +
      "Refused when the content would not parse as TypeScript, JavaScript, JSON or Python (by the file's extension), unless force: true.",
    { path, content: str('The whole content of the file'), force },
    ['path', 'content'],
  ),
  fn('delete_file', 'Delete a file or a symbolic link (never what a link points to). undo_edit brings a deleted text file back.', { path }, ['path']),
  fn(
    'run_command',
    'Run a shell command line (/bin/sh) in the sandbox, to run tests, builds, scripts or git. The sandbox has no network (nothing can be installed) and limits on time, memory, processes and output; bun, node, git and the usual shell tools are there. ' +
      'It is one session: the working directory (after cd) and exported variables carry over to the next run_command. The first command starts in the workspace root, /tmp/sandbox. ' +
      'Answers how it ended and the time taken against the limit ("exit 1 · 2.3 s (limit 120 s)", "timeout after 120 s: killed"), then stdout and stderr together; a long output is cut in the middle and the answer says how much was left out.',
    { command: str('The command line, for example `bun test` or `cd src && ls`') },
    ['command'],
  ),
  fn(
    'finish',
    'End the task once the change is made and the checks pass, with a summary for the reviewer of what was changed and why.',
    { summary: str('What was done and why, for the reviewer') },
    ['summary'],
  ),
]

async function readText(context: DevelopToolContext, path: string): Promise<string> {
  const text = asText(await context.workspaces.read(context.taskId, path))
  if (text === undefined) throw new TaskError('not_text', `${path} is not a text file`)
  return text
}

async function runCommand(context: DevelopToolContext, args: Record<string, unknown>): Promise<ToolOutcome> {
  const { workspaces, taskId, session } = context
  const command = stringArg(args, 'command')
  if (!command.trim()) return refused('command is empty')
  const fromRoot = session.shell.cwd === undefined
  const marker = newMarker()
  const { value: raw, problem } = await workspaces.whileWithinLimits(taskId, context.signal, (signal) =>
    context.runCommand({
      directory: workspaces.get(taskId).tree,
      command: shellScript(session.shell, command, marker),
      maxFileBytes: workspaces.limits.maxBytes,
      signal,
    }),
  )
  if (problem) throw new TaskError('workspace_limit', `\`${command.slice(0, 200)}\` made the workspace hold ${problem}; it was stopped`)
  const tail = readShellTail(raw.output, marker)
  const notes = carryOver(session.shell, tail)
  const result = { ...raw, output: tail.output }
  return {
    answer: describeRun(result, {
      timeoutMs: context.commandLimits?.timeoutMs,
      maxOutputBytes: context.commandLimits?.maxOutputBytes,
      maxChars: context.maxAnswerChars,
      directory: sessionDirectory(session.shell),
      notes,
    }),
    summary: `$ ${command.slice(0, 200)} → ${result.verdict}${result.exitCode === null ? '' : ` (exit ${result.exitCode})`}`,
    command: { command, result, fromRoot },
  }
}

export async function runDevelopTool(context: DevelopToolContext, name: string, args: Record<string, unknown>): Promise<ToolOutcome> {
  const { workspaces, taskId } = context
  try {
    switch (name) {
      case 'list_files': {
        const directory = stringArg(args, 'directory', false)
        const entries = await workspaces.list(taskId, directory)
        const lines = entries.map((e) => `${e.path}${e.type === 'symlink' ? ' (symbolic link)' : ''} ${count(e.bytes)} B`)
        const head = `${count(entries.length)} file${entries.length === 1 ? '' : 's'}${directory ? ` under ${directory}` : ''}:`
        return {
          answer: clip([head, ...lines].join('\n'), context.maxAnswerChars),
          summary: `listed ${entries.length} files${directory ? ` in ${directory}` : ''}`,
        }
      }
      case 'find_file':
        return await findFile(context, args)
      case 'search_code':
        return await searchCode(context, args)
      case 'read_file': {
        const path = stringArg(args, 'path')
        const request = { start: integerArg(args, 'start', 1), lines: integerArg(args, 'lines', 1) }
        return viewFile(path, await readText(context, path), request, context.maxAnswerChars)
      }
      case 'edit_file':
        return await editFile(context, args)
      case 'insert':
        return await insertLines(context, args)
      case 'undo_edit':
        return await undoEdit(context, args)
      case 'write_file':
        return await writeFile(context, args)
      case 'delete_file':
        return await deleteFile(context, args)
      case 'run_command':
        return await runCommand(context, args)
      case 'finish':
        return { answer: 'Finished.', summary: 'finished', finished: { summary: stringArg(args, 'summary') } }
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
