/**
 * Finding things in the workspace: search_code (a literal text, case-insensitive, in the files' current text, and
 * the organisation's code index for an imported repository) and find_file (by name, a part of it or a glob). Each
 * answer opens with its totals (`37 matches in 5 files`) and, when it cannot show everything, says how much is left
 * and how to narrow the question: nothing is cut silently. Code index hits are shown as the workspace's own lines,
 * numbered, never as the index's HTML snippet.
 */
import { basename } from 'node:path'
import type { CodeSearchResult } from '../../code-search/index.ts'
import { TaskError } from '../tasks/index.ts'
import { asText, pathSegments, WorkspacePathError, type WorkspaceEntry } from '../workspaces/index.ts'
import { refused, stringArg, type DevelopToolContext, type ToolOutcome } from './context.ts'
import { count, linesLabel, linesOf, numbered, numberedLine, plural } from './text.ts'

/** Larger files are not searched (and the answer says how many were not). */
export const MAX_SEARCHED_BYTES = 1024 * 1024
/** Matching lines shown in all, and per file. */
export const MAX_SHOWN_MATCHES = 50
export const MAX_SHOWN_PER_FILE = 10
/** A matching line is shown up to this many characters. */
const MAX_MATCH_CHARS = 300
/** Paths find_file lists. */
export const MAX_FOUND_FILES = 100
/** Code index hits, and the lines shown of each. */
const INDEX_HITS = 5
const MAX_INDEX_HIT_LINES = 30

const isGlob = (text: string) => /[*?[\]{}]/.test(text)

/** A glob without a slash matches a file's base name (as in .gitignore); one with a slash its whole path. */
function globMatcher(pattern: string): (path: string) => boolean {
  if (pattern.startsWith('/') || pattern.split('/').includes('..')) throw new WorkspacePathError(pattern, 'must be relative to the workspace, without ".."')
  const glob = new Bun.Glob(pattern.replace(/^\.\//, ''))
  return pattern.includes('/') ? (path) => glob.match(path) : (path) => glob.match(basename(path))
}

/** The entries a `path` argument picks (a directory, a file, or a glob), and how to name that place in an answer. */
async function pick(context: DevelopToolContext, path: string): Promise<{ entries: WorkspaceEntry[]; where: string }> {
  const all = await context.workspaces.list(context.taskId)
  const wanted = path.trim().replace(/\/+$/, '')
  if (wanted === '' || wanted === '.') return { entries: all, where: 'the workspace' }
  if (isGlob(wanted)) {
    const matches = globMatcher(wanted)
    return { entries: all.filter((e) => matches(e.path)), where: `the files matching ${wanted}` }
  }
  const prefix = pathSegments(wanted).join('/')
  const entries = all.filter((e) => e.path === prefix || e.path.startsWith(`${prefix}/`))
  if (entries.length === 0) throw new TaskError('file_not_found', `No file or directory ${JSON.stringify(wanted)} in the workspace`)
  return { entries, where: entries.length === 1 && entries[0]!.path === prefix ? prefix : `${prefix}/` }
}

interface FileMatches {
  path: string
  /** Line numbers (from 1) of every matching line. */
  numbers: number[]
  lines: string[]
}

/** Every line of `text` holding `needle` (lower case); a needle over several lines is found where it starts. */
function matchingLines(text: string, needle: string): number[] {
  const haystack = text.toLowerCase()
  const numbers: number[] = []
  let line = 1
  let scanned = 0
  for (let at = haystack.indexOf(needle); at >= 0; at = haystack.indexOf(needle, at + Math.max(1, needle.length))) {
    for (let i = haystack.indexOf('\n', scanned); i >= 0 && i < at; i = haystack.indexOf('\n', i + 1)) line++
    scanned = at
    if (numbers.at(-1) !== line) numbers.push(line)
  }
  return numbers
}

/** HTML entities of the index's snippets decoded and its <mark> tags removed: the text as the file has it. */
export function plainSnippet(snippet: string): string {
  const entities: Record<string, string> = { lt: '<', gt: '>', quot: '"', amp: '&', apos: "'", '#39': "'", '#x27': "'" }
  return snippet.replace(/<\/?mark>/g, '').replace(/&(lt|gt|quot|amp|apos|#39|#x27);/g, (_, name: string) => entities[name]!)
}

/** One code index hit: its lines as the workspace holds them now, numbered, or the snippet when the file is gone. */
async function showHit(context: DevelopToolContext, hit: CodeSearchResult): Promise<string> {
  const text = await context.workspaces
    .read(context.taskId, hit.path)
    .then(asText)
    .catch(() => undefined)
  const lines = text === undefined ? undefined : linesOf(text)
  if (!lines || hit.startLine > lines.length)
    return `${hit.path} ${linesLabel(hit.startLine, hit.endLine)} (not in the workspace now; the index's excerpt):\n${plainSnippet(hit.snippet)}`
  const last = Math.min(hit.endLine, lines.length, hit.startLine + MAX_INDEX_HIT_LINES - 1)
  const more =
    Math.min(hit.endLine, lines.length) > last
      ? [`[… ${linesLabel(last + 1, Math.min(hit.endLine, lines.length))} not shown; read_file start=${count(last + 1)}]`]
      : []
  return [`${hit.path} ${linesLabel(hit.startLine, last)} of ${count(lines.length)}:`, ...numbered(lines, hit.startLine, last), ...more].join('\n')
}

async function searchIndex(context: DevelopToolContext, query: string): Promise<string[]> {
  if (!context.codeIndex || !context.repositoryId) return []
  let hits: CodeSearchResult[]
  try {
    hits = await context.codeIndex.search(
      { orgId: context.orgId },
      { query: query.slice(0, 500), repositoryIds: [context.repositoryId], limit: INDEX_HITS, expand: false },
    )
  } catch (err) {
    return ['', `The code index could not be searched: ${(err as Error).message}`]
  }
  if (hits.length === 0) return ['', 'The code index of the imported repository has nothing close to this query.']
  const shown = await Promise.all(hits.map((hit) => showHit(context, hit)))
  return [
    '',
    `The code index of the imported repository (${plural(hits.length, 'chunk')} close in meaning, best first, shown as the workspace holds them now):`,
    ...shown.flatMap((s) => ['', s]),
  ]
}

export async function searchCode(context: DevelopToolContext, args: Record<string, unknown>): Promise<ToolOutcome> {
  const query = stringArg(args, 'query')
  if (!query.trim()) return refused('query is empty')
  const { entries, where } = await pick(context, stringArg(args, 'path', false))
  const needle = query.toLowerCase()
  const found: FileMatches[] = []
  let searched = 0
  let notSearched = 0
  for (const entry of entries) {
    if (entry.type !== 'file') continue
    if (entry.bytes > MAX_SEARCHED_BYTES) {
      notSearched++
      continue
    }
    // A command may have removed or replaced the file since the listing: it is counted as not searched.
    const text = await context.workspaces
      .read(context.taskId, entry.path)
      .then(asText)
      .catch((err: unknown) => {
        if (err instanceof TaskError) return undefined
        throw err
      })
    if (text === undefined) {
      notSearched++
      continue
    }
    searched++
    const numbers = matchingLines(text, needle)
    if (numbers.length) found.push({ path: entry.path, numbers, lines: text.split('\n') })
  }
  const total = found.reduce((sum, f) => sum + f.numbers.length, 0)
  const skipped = notSearched ? ` (${plural(notSearched, 'file')} not searched: binary, over ${count(MAX_SEARCHED_BYTES / 1024 / 1024)} MiB, or gone)` : ''
  const parts: string[] = []
  if (total === 0)
    parts.push(`No match for ${JSON.stringify(query)} in ${where}: ${plural(searched, 'file')} searched (literal text, case-insensitive)${skipped}.`)
  else {
    parts.push(
      `${plural(total, 'match', 'matches')} in ${plural(found.length, 'file')} for ${JSON.stringify(query)} in ${where} (literal text, case-insensitive)${skipped}:`,
    )
    let shown = 0
    let filesShown = 0
    for (const file of found) {
      if (shown >= MAX_SHOWN_MATCHES) break
      filesShown++
      const numbers = file.numbers.slice(0, Math.min(MAX_SHOWN_PER_FILE, MAX_SHOWN_MATCHES - shown))
      const width = String(numbers.at(-1)).length
      parts.push(`${file.path}: ${plural(file.numbers.length, 'match', 'matches')}`)
      for (const n of numbers) {
        const line = file.lines[n - 1]!
        parts.push(numberedLine(n, line.length > MAX_MATCH_CHARS ? `${line.slice(0, MAX_MATCH_CHARS)} [… line cut]` : line, width))
      }
      if (numbers.length < file.numbers.length) parts.push(`  [${plural(file.numbers.length - numbers.length, 'more match', 'more matches')} in this file]`)
      shown += numbers.length
    }
    const hidden = total - shown
    if (hidden > 0)
      parts.push(
        `[${plural(hidden, 'more match', 'more matches')}${filesShown < found.length ? ` (${plural(found.length - filesShown, 'more file')})` : ''} not shown: narrow the query (a longer text), or give path (a directory, a file, or a glob such as src/**/*.ts)]`,
      )
  }
  parts.push(...(await searchIndex(context, query)))
  return { answer: parts.join('\n'), summary: `searched "${query.slice(0, 80)}": ${plural(total, 'match', 'matches')} in ${plural(found.length, 'file')}` }
}

export async function findFile(context: DevelopToolContext, args: Record<string, unknown>): Promise<ToolOutcome> {
  const name = stringArg(args, 'name').trim()
  if (!name) return refused('name is empty')
  const { entries, where } = await pick(context, stringArg(args, 'path', false))
  let matches: (path: string) => boolean
  if (isGlob(name)) matches = globMatcher(name)
  else {
    const needle = name.toLowerCase()
    matches = name.includes('/') ? (path) => path.toLowerCase().includes(needle) : (path) => basename(path).toLowerCase().includes(needle)
  }
  const found = entries.filter((e) => matches(e.path))
  const how = isGlob(name) ? `matching ${name}` : `named like ${JSON.stringify(name)}`
  if (found.length === 0) return { answer: `No file ${how} in ${where} (${plural(entries.length, 'file')} looked at).`, summary: `found no file ${how}` }
  const shown = found.slice(0, MAX_FOUND_FILES).map((e) => `${e.path}${e.type === 'symlink' ? ' (symbolic link)' : ''} ${count(e.bytes)} B`)
  const rest = found.length - shown.length
  return {
    answer: [
      `${plural(found.length, 'file')} ${how} in ${where}:`,
      ...shown,
      ...(rest > 0 ? [`[${plural(rest, 'more file')} not shown: narrow the name (a longer part, or a glob such as src/**/*.test.ts), or give path]`] : []),
    ].join('\n'),
    summary: `found ${plural(found.length, 'file')} ${how}`,
  }
}
