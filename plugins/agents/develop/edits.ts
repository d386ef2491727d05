/**
 * The tools that change files: edit_file (exact text), insert (after a line), write_file, delete_file, and
 * undo_edit, which takes back the last of those changes to a file. Every change answers with the changed lines and
 * a few around them, numbered. A change that makes a TypeScript, JavaScript, JSON or Python file stop parsing is
 * refused with the parser's message, and the file left as it was, unless the model passes `force: true`; a file
 * that did not parse before the change is not held to it.
 */
import { TaskError } from '../tasks/index.ts'
import { asText, pathSegments } from '../workspaces/index.ts'
import { booleanArg, integerArg, refused, stringArg, type DevelopToolContext, type ToolOutcome } from './context.ts'
import { EditHistory, UNDO_LEVELS } from './history.ts'
import { parseProblem, pythonProblem, syntaxKind } from './syntax.ts'
import { count, describeChange, linesOf, plural } from './text.ts'

/** The file's text; null when there is no such file. Refused when it is not text. */
async function currentText(context: DevelopToolContext, path: string): Promise<string | null> {
  let bytes: Uint8Array
  try {
    bytes = await context.workspaces.read(context.taskId, path)
  } catch (err) {
    if (err instanceof TaskError && err.code === 'file_not_found') return null
    throw err
  }
  const text = asText(bytes)
  if (text === undefined) throw new TaskError('not_text', `${path} is not a text file`)
  return text
}

const breaking = (tool: string, path: string, problem: string) =>
  refused(
    `this ${tool} would make ${path} stop parsing, so nothing was changed. The parser says:\n${problem}\n` +
      'Correct the text and call again, or pass force: true to make the change anyway.',
  )

/**
 * Writes `after` over `before` (null: a new file) unless it breaks the file's syntax, records it for undo_edit,
 * and answers with what changed.
 */
async function change(context: DevelopToolContext, tool: string, path: string, before: string | null, after: string, force: boolean): Promise<ToolOutcome> {
  const { workspaces, taskId } = context
  const notes: string[] = []
  const kind = syntaxKind(path)
  if (kind === 'script' || kind === 'json') {
    const problem = parseProblem(path, after)
    if (problem && force) notes.push(`Note: ${path} does not parse now:\n${problem}`)
    else if (problem && (before === null || parseProblem(path, before) === undefined)) return breaking(tool, path, problem)
    else if (problem) notes.push(`Note: ${path} still does not parse (it did not before this ${tool} either):\n${problem}`)
  }
  await workspaces.write(taskId, path, after)
  if (kind === 'python' && !force) {
    const check = await pythonProblem(context, path)
    if (check.problem) {
      // Was the file fine before? Put it back and ask again: only a file this change broke is refused.
      let wasFine = true
      if (before === null) await workspaces.delete(taskId, path)
      else {
        await workspaces.write(taskId, path, before)
        wasFine = !(await pythonProblem(context, path)).problem
      }
      if (wasFine) return breaking(tool, path, check.problem)
      await workspaces.write(taskId, path, after)
      notes.push(`Note: ${path} still does not parse (it did not before this ${tool} either):\n${check.problem}`)
    } else if (check.unchecked) notes.push(`Note: the Python syntax was not checked: ${check.unchecked}.`)
  }
  const key = pathSegments(path).join('/')
  if (!context.session.edits.record(key, tool, before, after))
    notes.push(`Note: ${path} was too large to keep a copy of: this change cannot be undone with undo_edit.`)
  const done = before === null ? `Created ${path}` : `${tool === 'write_file' ? 'Wrote' : tool === 'insert' ? 'Inserted into' : 'Edited'} ${path}`
  const answer =
    before === null
      ? `${done} (${plural(linesOf(after).length, 'line')}, ${count(Buffer.byteLength(after))} bytes).`
      : describeChange(path, before, after, done)
  return {
    answer: [answer, ...notes].join('\n\n'),
    summary: `${tool === 'edit_file' ? 'edited' : tool === 'insert' ? 'inserted into' : before === null ? 'created' : 'wrote'} ${path}`,
  }
}

/** Lines copied from read_file with their numbers (`  12\t…`): the usual reason old_text is not found. */
const numberedCopy = (text: string) =>
  text
    .split('\n')
    .filter(Boolean)
    .every((line) => /^\s*\d+\t/.test(line))

export async function editFile(context: DevelopToolContext, args: Record<string, unknown>): Promise<ToolOutcome> {
  const path = stringArg(args, 'path')
  const oldText = stringArg(args, 'old_text')
  const newText = stringArg(args, 'new_text')
  if (oldText === '') return refused('old_text is empty; use write_file to create a file, or insert to add lines')
  const text = await currentText(context, path)
  if (text === null) throw new TaskError('file_not_found', `No file ${JSON.stringify(path)} in the workspace`)
  const occurrences = text.split(oldText).length - 1
  if (occurrences === 0)
    return refused(
      `old_text was not found in ${path}${numberedCopy(oldText) ? '; leave out the line numbers and the tab after them that read_file shows' : ''}`,
    )
  if (occurrences > 1) return refused(`old_text occurs ${occurrences} times in ${path}; include more surrounding text so it is unique`)
  const at = text.indexOf(oldText)
  return change(context, 'edit_file', path, text, text.slice(0, at) + newText + text.slice(at + oldText.length), booleanArg(args, 'force'))
}

export async function insertLines(context: DevelopToolContext, args: Record<string, unknown>): Promise<ToolOutcome> {
  const path = stringArg(args, 'path')
  const afterLine = integerArg(args, 'after_line', 0)
  const text = stringArg(args, 'text')
  if (afterLine === undefined) throw new TaskError('invalid_tool_input', 'after_line must be a whole number of at least 0')
  if (text === '') return refused('text is empty')
  const before = await currentText(context, path)
  if (before === null) throw new TaskError('file_not_found', `No file ${JSON.stringify(path)} in the workspace; use write_file to create it`)
  const total = linesOf(before).length
  if (afterLine > total) return refused(`${path} has ${plural(total, 'line')}; after_line must be between 0 (the top) and ${count(total)} (the end)`)
  // The offset where line afterLine + 1 starts; a last line without its newline gets one first.
  let at = 0
  let newlineFirst = false
  for (let i = 0; i < afterLine; i++) {
    const newline = before.indexOf('\n', at)
    if (newline < 0) {
      at = before.length
      newlineFirst = true
      break
    }
    at = newline + 1
  }
  const block = text.endsWith('\n') ? text : `${text}\n`
  return change(context, 'insert', path, before, `${before.slice(0, at)}${newlineFirst ? '\n' : ''}${block}${before.slice(at)}`, booleanArg(args, 'force'))
}

export async function writeFile(context: DevelopToolContext, args: Record<string, unknown>): Promise<ToolOutcome> {
  const path = stringArg(args, 'path')
  const content = stringArg(args, 'content')
  let before: string | null
  try {
    before = await currentText(context, path)
  } catch (err) {
    // A binary file is replaced whole, and cannot be brought back.
    if (!(err instanceof TaskError && err.code === 'not_text')) throw err
    before = null
  }
  if (before === content) return { answer: `${path} already holds exactly this content; nothing changed.`, summary: `wrote ${path} (unchanged)` }
  return change(context, 'write_file', path, before, content, booleanArg(args, 'force'))
}

export async function deleteFile(context: DevelopToolContext, args: Record<string, unknown>): Promise<ToolOutcome> {
  const path = stringArg(args, 'path')
  // A link, a binary or an unreadable file is deleted all the same, but cannot be brought back.
  const before = await currentText(context, path).catch(() => null)
  await context.workspaces.delete(context.taskId, path)
  const kept = before !== null && context.session.edits.record(pathSegments(path).join('/'), 'delete_file', before, null)
  return { answer: `Deleted ${path}.${kept ? ' undo_edit brings it back.' : ''}`, summary: `deleted ${path}` }
}

export async function undoEdit(context: DevelopToolContext, args: Record<string, unknown>): Promise<ToolOutcome> {
  const { workspaces, taskId, session } = context
  const key = pathSegments(stringArg(args, 'path')).join('/')
  const path = key
  const record = session.edits.take(key)
  if (!record)
    return refused(
      `there is no change of ${path} to undo: undo_edit takes back what edit_file, insert, write_file and delete_file did to a file in this task, its last ${UNDO_LEVELS} changes (not what commands did)`,
    )
  const current = await currentText(context, path).catch((err: unknown) => {
    if (err instanceof TaskError && err.code === 'not_text') return undefined
    throw err
  })
  const notes: string[] = []
  if (current === undefined || !EditHistory.unchangedSince(record, current))
    notes.push(`Note: ${path} had changed since that ${record.tool} (a command changed it); those later changes are undone too.`)
  let answer: string
  if (record.before === null) {
    if (current !== null) await workspaces.delete(taskId, path)
    answer = `Undid the ${record.tool} that created ${path}: the file is deleted again.`
  } else {
    await workspaces.write(taskId, path, record.before)
    answer =
      current === null || current === undefined
        ? `Undid the ${record.tool} of ${path}: the file is back (${plural(linesOf(record.before).length, 'line')}).`
        : describeChange(path, current, record.before, `Undid the last ${record.tool} of ${path}`)
  }
  const left = session.edits.levels(key)
  notes.push(left ? `${plural(left, 'earlier change')} of ${path} can still be undone.` : `No earlier change of ${path} is left to undo.`)
  return { answer: [answer, ...notes].join('\n\n'), summary: `undid the last ${record.tool} of ${path}` }
}
