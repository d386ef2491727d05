/**
 * Search questions from real code: each documented function's doc comment gives the question (its first
 * sentence) and the function's file the answer. The indexed copy of every file has all its comments and
 * docstrings blanked (newlines kept, so line numbers stay those of the original), so a search cannot find a
 * function by the very words of its question.
 */
import { join, relative } from 'node:path'

export interface DocQuery {
  query: string
  path: string
  /** 1-based line of the declaration the comment documents. */
  line: number
}

export interface EvaluationRepository {
  name: string
  language: 'JavaScript' | 'TypeScript' | 'Python'
  files: { path: string; content: string }[]
  queries: DocQuery[]
}

const blank = (text: string) => text.replace(/[^\n]/g, ' ')

/** JavaScript/TypeScript without comments: a small scanner that knows strings and template literals. */
export function stripCComments(source: string): string {
  let out = ''
  let i = 0
  while (i < source.length) {
    const c = source[i]!
    const next = source[i + 1]
    if (c === '/' && next === '*') {
      const end = source.indexOf('*/', i + 2)
      const stop = end === -1 ? source.length : end + 2
      out += blank(source.slice(i, stop))
      i = stop
    } else if (c === '/' && next === '/') {
      const end = source.indexOf('\n', i)
      const stop = end === -1 ? source.length : end
      out += blank(source.slice(i, stop))
      i = stop
    } else if (c === '"' || c === "'" || c === '`') {
      let j = i + 1
      while (j < source.length && source[j] !== c && !(c !== '`' && source[j] === '\n')) j += source[j] === '\\' ? 2 : 1
      out += source.slice(i, j + 1)
      i = j + 1
    } else {
      out += c
      i++
    }
  }
  return out
}

/** Python without `#` comments and docstrings (a string literal that is a statement of its own). */
export function stripPythonComments(source: string): string {
  const lines = source.split('\n')
  const out: string[] = []
  // A multi-line string opened inside a statement (x = '''...) is code, kept up to its closing quotes.
  let codeString: string | undefined
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!
    if (codeString) {
      if (line.includes(codeString)) codeString = undefined
      out.push(line)
      continue
    }
    const docstring = /^\s*[rRuU]?("""|''')/.exec(line)
    if (docstring) {
      const quote = docstring[1]!
      const rest = line.slice(docstring[0].length)
      let end = i
      if (!rest.includes(quote)) while (end + 1 < lines.length && !lines[++end]!.includes(quote));
      for (let k = i; k <= end; k++) out.push('')
      i = end
      continue
    }
    for (const quote of ['"""', "'''"]) if (line.split(quote).length % 2 === 0) codeString = quote
    // A # outside quotes starts a comment; lines with quotes keep theirs rather than risk cutting a string.
    const hash = line.indexOf('#')
    out.push(hash >= 0 && !/["']/.test(line.slice(0, hash)) ? line.slice(0, hash).trimEnd() : line)
  }
  return out.join('\n')
}

/**
 * The stripped text without the lines that held only a comment (as code without comments reads), and where
 * each original line went.
 */
function withoutCommentLines(original: string, stripped: string): { content: string; lineOf: (line: number) => number } {
  const before = original.split('\n')
  const kept: string[] = []
  const newLine: number[] = []
  stripped.split('\n').forEach((line, i) => {
    newLine[i + 1] = kept.length + 1
    if (line.trim() !== '' || before[i]!.trim() === '') kept.push(line.trimEnd())
  })
  return { content: kept.join('\n'), lineOf: (line) => newLine[line] ?? line }
}

/** The first sentence of a comment's prose, or undefined when it is too short to be a question. */
function firstSentence(text: string): string | undefined {
  const prose = text
    .split('\n')
    .map((l) => l.trim())
    .join(' ')
    .replace(/\{@\w+\s+([^}]*)\}/g, '$1')
    .split(/(?:^|\s)@\w+/)[0]!
  const sentence = (/^(.*?[.!?])(\s|$)/.exec(prose)?.[1] ?? prose).replace(/[`*_]/g, '').trim()
  const words = sentence.split(/\s+/).filter((w) => /[a-z]/i.test(w))
  return words.length >= 3 && words.length <= 40 ? sentence.replace(/\.$/, '') : undefined
}

const JS_DECLARATION =
  /^\s*(?:export\s+)?(?:default\s+)?(?:async\s+)?(?:function\*?\s+\w+|(?:abstract\s+)?class\s+\w+|(?:const|let|var)\s+\w+\s*=\s*(?:async\s*)?(?:function|\([^)]*\)\s*=>|\w+\s*=>)|(?:(?:public|private|protected|static|async|get|set|readonly)\s+)*[\w$]+\s*(?:<[^>]*>)?\([^)]*\)?\s*[:{]?)/

function jsQueries(path: string, source: string): DocQuery[] {
  const queries: DocQuery[] = []
  for (const match of source.matchAll(/\/\*\*([\s\S]*?)\*\//g)) {
    const after = source.slice(match.index + match[0].length)
    const lineOffset = source.slice(0, match.index + match[0].length).split('\n').length
    const nextLines = after.split('\n')
    // The declaration sits on the comment's last line or the line after it.
    const at = nextLines[0]!.trim() === '' ? 1 : 0
    const declaration = nextLines[at] ?? ''
    if (!JS_DECLARATION.test(declaration) || /^\s*(if|for|while|switch|return)\b/.test(declaration)) continue
    const sentence = firstSentence(match[1]!.replace(/^\s*\*/gm, ''))
    if (sentence) queries.push({ query: sentence, path, line: lineOffset + at })
  }
  return queries
}

function pythonQueries(path: string, source: string): DocQuery[] {
  const lines = source.split('\n')
  const queries: DocQuery[] = []
  for (let i = 0; i < lines.length; i++) {
    if (!/^\s*(?:async\s+)?def\s+\w+/.test(lines[i]!)) continue
    // The signature may run over several lines; the docstring is the first statement after it.
    let j = i
    while (j < lines.length && !/\)\s*(->[^:]*)?:\s*(#.*)?$/.test(lines[j]!)) j++
    const opening = /^\s*[rRuU]?("""|''')(.*)$/.exec(lines[j + 1] ?? '')
    if (!opening) continue
    const quote = opening[1]!
    let text = opening[2]!
    for (let k = j + 2; !text.includes(quote) && k < lines.length && k < j + 30; k++) text += `\n${lines[k]}`
    const sentence = firstSentence(text.split(quote)[0]!.split(/\n\s*\n/)[0]!)
    if (sentence) queries.push({ query: sentence, path, line: i + 1 })
  }
  return queries
}

/** Reads a repository from disk; `queryLimit` questions are spread evenly over all the documented functions. */
export async function loadEvaluationRepository(
  name: string,
  root: string,
  language: EvaluationRepository['language'],
  options: {
    maxFiles: number
    queryLimit: number
    extraFiles?: string[]
    askNotAbout?: (path: string) => boolean
    /** Files left out of the repository altogether. */
    skip?: (path: string) => boolean
  },
): Promise<EvaluationRepository | undefined> {
  const pattern = language === 'Python' ? '**/*.py' : language === 'TypeScript' ? '**/*.ts' : '**/*.{js,mjs,cjs}'
  let paths: string[]
  try {
    paths = [...new Bun.Glob(pattern).scanSync({ cwd: root, followSymlinks: false })].filter((p) => !p.endsWith('.d.ts') && !options.skip?.(p)).sort()
  } catch {
    return undefined
  }
  const files: EvaluationRepository['files'] = []
  const all: DocQuery[] = []
  for (const path of paths.slice(0, options.maxFiles)) {
    const file = Bun.file(join(root, path))
    if (file.size > 512 * 1024) continue
    const source = await file.text()
    const repoPath = relative(root, join(root, path))
    const { content, lineOf } = withoutCommentLines(source, language === 'Python' ? stripPythonComments(source) : stripCComments(source))
    if (!options.askNotAbout?.(repoPath))
      for (const query of language === 'Python' ? pythonQueries(repoPath, source) : jsQueries(repoPath, source))
        all.push({ ...query, line: lineOf(query.line) })
    files.push({ path: repoPath, content })
  }
  if (files.length === 0 || all.length === 0) return undefined
  // The package's own README, changelog, licence and type declarations: answers to nothing, found by many words.
  for (const extra of options.extraFiles ?? []) {
    const file = Bun.file(join(root, extra))
    if ((await file.exists()) && file.size <= 512 * 1024) files.push({ path: extra.replace(/^(\.\.\/)+/, ''), content: await file.text() })
  }
  // A question asked twice (overloads, copied comments) has no single answer.
  const counts = new Map<string, number>()
  for (const q of all) counts.set(q.query.toLowerCase(), (counts.get(q.query.toLowerCase()) ?? 0) + 1)
  const unique = all.filter((q) => counts.get(q.query.toLowerCase()) === 1)
  const step = Math.max(1, unique.length / options.queryLimit)
  const queries: DocQuery[] = []
  for (let at = 0; at < unique.length && queries.length < options.queryLimit; at += step) queries.push(unique[Math.floor(at)]!)
  return { name, language, files, queries }
}
