/**
 * The develop tools called directly, as the loop calls them, on a real workspace and a real sandbox: the viewer's
 * windows, search and find_file with their totals, code index hits as plain source, edits answered with their
 * lines, insert and undo_edit, syntax refusals (Python parsed only inside the sandbox), and the shell session.
 */
import { afterAll, describe, expect, test } from 'bun:test'
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { memoryLogger } from '../../src/log.ts'
import type { SandboxCommandRequest, SandboxResult } from '../../src/sandbox/index.ts'
import type { CodeSearchResult } from '../../plugins/code-search/index.ts'
import { newDevelopSession, runDevelopTool, type DevelopToolContext } from '../../plugins/agents/develop/develop-tools.ts'
import { createWorkspaces } from '../../plugins/agents/workspaces/workspaces.ts'
import { makeSandbox, TEST_LIMITS } from '../sandbox/support.ts'

const root = mkdtempSync(join(tmpdir(), 'develop-tools-test-'))
const workspaces = createWorkspaces({ root: join(root, 'ws'), limits: { maxFiles: 500, maxBytes: 4_000_000 }, retentionSeconds: 60, logger: memoryLogger() })
const { sandbox } = makeSandbox({ hiddenPaths: [root] })
/** A sandbox whose commands time out after 2 s. */
const quick = makeSandbox({ hiddenPaths: [root], defaults: { ...TEST_LIMITS, timeoutMs: 2000 } }).sandbox
let n = 0

afterAll(async () => {
  await sandbox.close()
  await quick.close()
  await workspaces.close()
  rmSync(root, { recursive: true, force: true })
})

/** A workspace holding `files`, and its tools as the loop calls them; every sandbox command is recorded. */
async function workspace(files: Record<string, string>, options: Partial<DevelopToolContext> = {}) {
  const taskId = `task_tools_${++n}`
  const { tree } = await workspaces.create(
    taskId,
    Object.entries(files).map(([path, text]) => ({ path, bytes: new TextEncoder().encode(text) })),
  )
  const commands: string[] = []
  const context: DevelopToolContext = {
    taskId,
    orgId: 'org_tools',
    workspaces,
    runCommand: (request: SandboxCommandRequest) => {
      commands.push(request.command)
      return sandbox.runCommand(request)
    },
    commandLimits: sandbox.limits,
    signal: new AbortController().signal,
    maxAnswerChars: 12_000,
    session: newDevelopSession(),
    ...options,
  }
  const tool = async (name: string, args: Record<string, unknown>) => (await runDevelopTool(context, name, args)).answer
  const file = (path: string) => readFileSync(join(tree, path), 'utf8')
  return { context, tool, tree, file, commands }
}

const numberedLines = (count: number, text = (i: number) => `line ${i}`) => Array.from({ length: count }, (_, i) => `${text(i + 1)}\n`).join('')

describe('read_file: a viewer with line numbers and a window', () => {
  test('a window of 100 lines by default names its range, the length and the next start; the last window says it is the end', async () => {
    const { tool } = await workspace({ 'big.ts': numberedLines(250) })
    const first = (await tool('read_file', { path: 'big.ts' })).split('\n')
    expect(first[0]).toBe('big.ts lines 1-100 of 250; next: start=101')
    expect(first[1]).toBe('  1\tline 1')
    expect(first.at(-1)).toBe('100\tline 100')
    expect(first).toHaveLength(101)
    const rest = (await tool('read_file', { path: 'big.ts', start: 101, lines: 500 })).split('\n')
    expect(rest[0]).toBe('big.ts lines 101-250 of 250 (the end of the file)')
    expect(rest.at(-1)).toBe('250\tline 250')
    expect(await tool('read_file', { path: 'big.ts', start: 10, lines: 2 })).toBe('big.ts lines 10-11 of 250; next: start=12\n10\tline 10\n11\tline 11')
  })

  test('large files are counted with thousands separators, and the next start is taken back as the answer wrote it', async () => {
    const { tool } = await workspace({ 'src/a.ts': numberedLines(5565) })
    const window = await tool('read_file', { path: 'src/a.ts', start: 1761 })
    expect(window.split('\n')[0]).toBe('src/a.ts lines 1,761-1,860 of 5,565; next: start=1,861')
    expect(window.split('\n')[1]).toBe('1761\tline 1761')
    expect((await tool('read_file', { path: 'src/a.ts', start: '1,861', lines: 1 })).split('\n')[1]).toBe('1861\tline 1861')
  })

  test('reading past the end is refused with the length; a small file is read whole; an empty one says so', async () => {
    const { tool } = await workspace({ 'big.ts': numberedLines(250), 'small.txt': 'a\n  b\n', 'empty.txt': '' })
    expect(await tool('read_file', { path: 'big.ts', start: 300 })).toBe('Refused: big.ts has 250 lines; start=300 is past its end (start may be 1 to 250)')
    expect(await tool('read_file', { path: 'small.txt' })).toBe('small.txt lines 1-2 of 2 (the whole file)\n1\ta\n2\t  b')
    expect(await tool('read_file', { path: 'empty.txt' })).toBe('empty.txt is empty (0 lines).')
    expect(await tool('read_file', { path: 'big.ts', start: 0 })).toStartWith('Refused: start must be a whole number of at least 1')
  })

  test('a read cut by the answer size says where it was cut and which start to ask for next', async () => {
    const { tool } = await workspace({ 'wide.txt': numberedLines(400, (i) => `${'x'.repeat(60)} ${i}`) }, { maxAnswerChars: 3000 })
    const answer = await tool('read_file', { path: 'wide.txt', lines: 400 })
    expect(answer.length).toBeLessThanOrEqual(3000)
    const lines = answer.split('\n')
    const next = Number(/next: start=(\d+)$/.exec(lines[0]!)![1])
    expect(lines[0]).toBe(
      `wide.txt lines 1-${next - 1} of 400 (cut at the answer's size of 3,000 characters: lines ${next}-400 not shown); next: start=${next}`,
    )
    expect(lines.at(-1)).toEndWith(` ${next - 1}`)
    expect((await tool('read_file', { path: 'wide.txt', start: next, lines: 1 })).split('\n')[1]).toEndWith(` ${next}`)
  })
})

describe('search_code and find_file: totals, grouped lines, and what was not shown', () => {
  const files = {
    'src/config.ts': 'export function parseConfig(text: string) {\n    return JSON.parse(text)\n}\n\tconst again = parseConfig("{}")\n',
    'src/app.ts': "import { parseConfig } from './config'\n",
    'lib/tool.py': 'def parse_config():\n    return PARSECONFIG\n',
    'README.md': 'Nothing here\n',
  }

  test('a literal, case-insensitive search answers its totals and each matching line, numbered, indentation kept, grouped by file', async () => {
    const { tool } = await workspace(files)
    const answer = await tool('search_code', { query: 'parseConfig' })
    expect(answer).toBe(
      [
        '4 matches in 3 files for "parseConfig" in the workspace (literal text, case-insensitive):',
        'lib/tool.py: 1 match',
        '2\t    return PARSECONFIG',
        'src/app.ts: 1 match',
        "1\timport { parseConfig } from './config'",
        'src/config.ts: 2 matches',
        '1\texport function parseConfig(text: string) {',
        '4\t\tconst again = parseConfig("{}")',
      ].join('\n'),
    )
    expect(await tool('search_code', { query: 'nowhere to be found' })).toBe(
      'No match for "nowhere to be found" in the workspace: 4 files searched (literal text, case-insensitive).',
    )
  })

  test('path narrows the search to a directory, a file or a glob', async () => {
    const { tool } = await workspace(files)
    expect((await tool('search_code', { query: 'parseconfig', path: 'src' })).split('\n')[0]).toBe(
      '3 matches in 2 files for "parseconfig" in src/ (literal text, case-insensitive):',
    )
    expect((await tool('search_code', { query: 'parseconfig', path: '*.py' })).split('\n')[0]).toBe(
      '1 match in 1 file for "parseconfig" in the files matching *.py (literal text, case-insensitive):',
    )
    expect((await tool('search_code', { query: 'parseconfig', path: 'src/**/app.ts' })).split('\n')[0]).toStartWith('1 match in 1 file')
    expect((await tool('search_code', { query: 'parseconfig', path: 'src/config.ts' })).split('\n')[0]).toStartWith(
      '2 matches in 1 file for "parseconfig" in src/config.ts',
    )
    expect(await tool('search_code', { query: 'x', path: 'missing' })).toBe('Refused: No file or directory "missing" in the workspace')
    expect(await tool('search_code', { query: 'x', path: '../../etc' })).toStartWith('Refused:')
  })

  test('too many matches: the totals stay exact and the answer says how many are not shown and how to narrow the query', async () => {
    const many: Record<string, string> = {}
    for (let f = 0; f < 8; f++) many[`m/f${f}.ts`] = numberedLines(12, (i) => `  const hit${i} = 'needle'`)
    const { tool } = await workspace(many)
    const answer = await tool('search_code', { query: 'NEEDLE' })
    const lines = answer.split('\n')
    expect(lines[0]).toBe('96 matches in 8 files for "NEEDLE" in the workspace (literal text, case-insensitive):')
    expect(lines.filter((l) => /^\s*\d+\t/.test(l))).toHaveLength(50)
    expect(answer).toContain("m/f0.ts: 12 matches\n 1\t  const hit1 = 'needle'")
    expect(answer).toContain('  [2 more matches in this file]')
    expect(lines.at(-1)).toBe(
      '[46 more matches (3 more files) not shown: narrow the query (a longer text), or give path (a directory, a file, or a glob such as src/**/*.ts)]',
    )
  })

  test('find_file finds by a part of the name or by a glob, with totals, and says how many it does not list', async () => {
    const many: Record<string, string> = { ...files }
    for (let i = 0; i < 120; i++) many[`gen/part${i}.test.ts`] = ''
    const { tool } = await workspace(many)
    expect(await tool('find_file', { name: 'CONFIG' })).toBe('1 file named like "CONFIG" in the workspace:\nsrc/config.ts 107 B')
    expect(await tool('find_file', { name: '*.py' })).toBe('1 file matching *.py in the workspace:\nlib/tool.py 43 B')
    expect(await tool('find_file', { name: 'src/a' })).toBe('1 file named like "src/a" in the workspace:\nsrc/app.ts 39 B')
    const listed = (await tool('find_file', { name: '*.test.ts' })).split('\n')
    expect(listed[0]).toBe('120 files matching *.test.ts in the workspace:')
    expect(listed).toHaveLength(102)
    expect(listed.at(-1)).toBe('[20 more files not shown: narrow the name (a longer part, or a glob such as src/**/*.test.ts), or give path]')
    expect(await tool('find_file', { name: 'nothing', path: 'src' })).toBe('No file named like "nothing" in src/ (2 files looked at).')
  })

  test("code index hits are the workspace file's own lines, numbered, never HTML; a file that is gone shows the snippet decoded", async () => {
    const source = 'def answer():\n    """The answer."""\n    return 1 >> 0\n'
    const hits: CodeSearchResult[] = [
      {
        repositoryId: 'repo_1',
        repositoryName: 'acme/calc',
        path: 'calc.py',
        language: 'python',
        startLine: 1,
        endLine: 3,
        score: 1,
        snippet: 'def <mark>answer</mark>():\n    &quot;&quot;&quot;The answer.&quot;&quot;&quot;\n    return 1 &gt;&gt; 0',
      },
      {
        repositoryId: 'repo_1',
        repositoryName: 'acme/calc',
        path: 'gone.py',
        language: 'python',
        startLine: 4,
        endLine: 5,
        score: 0.5,
        snippet: '&gt;&gt;&gt; <mark>answer</mark>() &amp;&amp; x &lt; 2',
      },
    ]
    const asked: unknown[] = []
    const { tool } = await workspace(
      { 'calc.py': source },
      {
        repositoryId: 'repo_1',
        codeIndex: {
          search: async (_scope, query) => {
            asked.push(query)
            return hits
          },
        },
      },
    )
    const answer = await tool('search_code', { query: 'what is the answer' })
    expect(asked).toEqual([{ query: 'what is the answer', repositoryIds: ['repo_1'], limit: 5, expand: false }])
    expect(answer).toContain('calc.py lines 1-3 of 3:\n1\tdef answer():\n2\t    """The answer."""\n3\t    return 1 >> 0')
    expect(answer).toContain('>>> answer() && x < 2')
    for (const html of ['&quot;', '&gt;', '&lt;', '&amp;', '<mark>', '</mark>']) expect(answer).not.toContain(html)
  })
})

describe('edit_file, insert and undo_edit', () => {
  const code = 'export function add(a: number, b: number) {\n  return a - b\n}\n\nexport const one = 1\nexport const two = 2\n'

  test('an edit answers with the changed lines and three lines around them, numbered, as the file now reads', async () => {
    const { tool, file } = await workspace({ 'src/add.ts': code })
    const answer = await tool('edit_file', { path: 'src/add.ts', old_text: '  return a - b\n', new_text: '  const sum = a + b\n  return sum\n' })
    expect(answer).toBe(
      [
        'Edited src/add.ts: lines 2-3 now hold what was 1 line. Lines 1-6 of 7 as the file now reads:',
        '1\texport function add(a: number, b: number) {',
        '2\t  const sum = a + b',
        '3\t  return sum',
        '4\t}',
        '5\t',
        '6\texport const one = 1',
      ].join('\n'),
    )
    expect(file('src/add.ts')).toContain('return sum')
    // Text copied with read_file's numbers is not in the file: the refusal says why.
    expect(await tool('edit_file', { path: 'src/add.ts', old_text: '5\texport const one = 1', new_text: 'x' })).toBe(
      'Refused: old_text was not found in src/add.ts; leave out the line numbers and the tab after them that read_file shows',
    )
  })

  test('insert puts lines after a line, at the top with 0 and at the end with the line count; past the end is refused with the length', async () => {
    const { tool, file } = await workspace({ 'list.txt': 'b\nc' })
    expect(await tool('insert', { path: 'list.txt', after_line: 0, text: 'a' })).toBe(
      'Inserted into list.txt: added 1 line after line 0. Lines 1-3 of 3 as the file now reads:\n1\ta\n2\tb\n3\tc',
    )
    await tool('insert', { path: 'list.txt', after_line: 3, text: 'd\ne\n' })
    expect(file('list.txt')).toBe('a\nb\nc\nd\ne\n')
    await tool('insert', { path: 'list.txt', after_line: 2, text: 'b2' })
    expect(file('list.txt')).toBe('a\nb\nb2\nc\nd\ne\n')
    expect(await tool('insert', { path: 'list.txt', after_line: 9, text: 'z' })).toBe(
      'Refused: list.txt has 6 lines; after_line must be between 0 (the top) and 6 (the end)',
    )
    expect(await tool('insert', { path: 'nothing.txt', after_line: 0, text: 'z' })).toStartWith(
      'Refused: No file "nothing.txt" in the workspace; use write_file',
    )
  })

  test('undo_edit takes back the last changes of a file one by one, brings back a deleted file, removes a created one, and says when a command changed the file since', async () => {
    const { tool, file, tree } = await workspace({ 'a.txt': 'one\n', 'keep.txt': 'keep\n' })
    await tool('edit_file', { path: 'a.txt', old_text: 'one', new_text: 'two' })
    await tool('insert', { path: 'a.txt', after_line: 1, text: 'three' })
    expect(file('a.txt')).toBe('two\nthree\n')
    expect(await tool('undo_edit', { path: 'a.txt' })).toBe(
      'Undid the last insert of a.txt: removed 1 line (line 2 before). Line 1 of 1 as the file now reads:\n1\ttwo\n\n1 earlier change of a.txt can still be undone.',
    )
    expect(await tool('undo_edit', { path: './a.txt' })).toContain('No earlier change of a.txt is left to undo.')
    expect(file('a.txt')).toBe('one\n')
    expect(await tool('undo_edit', { path: 'a.txt' })).toStartWith('Refused: there is no change of a.txt to undo')

    await tool('write_file', { path: 'new/b.txt', content: 'made\n' })
    expect(await tool('undo_edit', { path: 'new/b.txt' })).toStartWith('Undid the write_file that created new/b.txt: the file is deleted again.')
    expect(existsSync(join(tree, 'new/b.txt'))).toBe(false)

    expect(await tool('delete_file', { path: 'keep.txt' })).toBe('Deleted keep.txt. undo_edit brings it back.')
    expect(await tool('undo_edit', { path: 'keep.txt' })).toStartWith('Undid the delete_file of keep.txt: the file is back (1 line).')
    expect(file('keep.txt')).toBe('keep\n')

    await tool('edit_file', { path: 'keep.txt', old_text: 'keep', new_text: 'kept' })
    await tool('run_command', { command: 'echo more >> keep.txt' })
    expect(await tool('undo_edit', { path: 'keep.txt' })).toContain(
      'Note: keep.txt had changed since that edit_file (a command changed it); those later changes are undone too.',
    )
    expect(file('keep.txt')).toBe('keep\n')
  })

  test("an edit that would make TypeScript or JSON stop parsing is refused with the parser's message and changes nothing, unless forced", async () => {
    const { tool, file } = await workspace({ 'src/add.ts': code, 'package.json': '{"name": "calc"}\n', 'broken.ts': 'export const = 1\n' })
    const refusal = await tool('edit_file', { path: 'src/add.ts', old_text: '  return a - b\n}', new_text: '  return a - b\n' })
    expect(refusal).toStartWith('Refused: this edit_file would make src/add.ts stop parsing, so nothing was changed. The parser says:\nsrc/add.ts:')
    expect(refusal).toContain('pass force: true')
    expect(file('src/add.ts')).toBe(code)
    expect(await tool('write_file', { path: 'package.json', content: '{"name": "calc",}\n' })).toStartWith(
      'Refused: this write_file would make package.json stop parsing',
    )
    expect(file('package.json')).toBe('{"name": "calc"}\n')
    expect(await tool('write_file', { path: 'src/new.tsx', content: 'export const A = () => <div>\n' })).toStartWith(
      'Refused: this write_file would make src/new.tsx stop parsing',
    )
    expect(await tool('write_file', { path: 'src/ok.tsx', content: 'export const A = () => <div />\n' })).toStartWith('Created src/ok.tsx')

    const forced = await tool('edit_file', { path: 'src/add.ts', old_text: '  return a - b\n}', new_text: '  return a - b\n', force: true })
    expect(forced).toStartWith('Edited src/add.ts')
    expect(forced).toContain('Note: src/add.ts does not parse now:')
    // A file that did not parse before is not held to it.
    const stillBroken = await tool('edit_file', { path: 'broken.ts', old_text: '= 1', new_text: '= 2' })
    expect(stillBroken).toStartWith('Edited broken.ts')
    expect(stillBroken).toContain('still does not parse (it did not before this edit_file either)')
  })

  test('Python is parsed by python3 inside the sandbox: a breaking edit is refused with its SyntaxError and the file restored; a quoted path cannot inject a command', async () => {
    const py = 'def add(a, b):\n    return a + b\n'
    const { tool, file, tree, commands } = await workspace({ 'calc.py': py })
    const refusal = await tool('edit_file', { path: 'calc.py', old_text: 'def add(a, b):', new_text: 'def add(a, b:' })
    expect(refusal).toStartWith('Refused: this edit_file would make calc.py stop parsing, so nothing was changed. The parser says:\n  File "calc.py", line 1')
    expect(refusal).toContain('SyntaxError')
    expect(file('calc.py')).toBe(py)
    // Each check went through the task's sandbox, and no other way.
    expect(commands.length).toBeGreaterThanOrEqual(2)
    expect(commands.every((c) => c.startsWith('python3 -c "import ast,sys; ast.parse('))).toBe(true)

    expect(await tool('edit_file', { path: 'calc.py', old_text: 'a + b', new_text: 'b + a' })).toStartWith('Edited calc.py')
    const hostile = "q'$(touch pwned)'.py"
    expect(await tool('write_file', { path: hostile, content: 'def (:\n' })).toStartWith(`Refused: this write_file would make ${hostile} stop parsing`)
    expect(existsSync(join(tree, hostile))).toBe(false)
    expect(existsSync(join(tree, 'pwned'))).toBe(false)
    expect(await tool('write_file', { path: 'ok.py', content: 'x = 1\n' })).toStartWith('Created ok.py')
  })
  test("the Python verdict is the sandbox's own: its SyntaxError refuses the change, and a sandbox without python3 says the syntax was not checked", async () => {
    let answer: SandboxResult = {
      verdict: 'failed',
      exitCode: 1,
      output: 'Traceback (most recent call last):\n  File "x.py", line 1\nSyntaxError: as the sandbox saw it\n',
      truncated: false,
      durationMs: 5,
    }
    const { tool, tree } = await workspace({}, { runCommand: async () => answer })
    expect(await tool('write_file', { path: 'x.py', content: 'x = 1\n' })).toBe(
      'Refused: this write_file would make x.py stop parsing, so nothing was changed. The parser says:\n  File "x.py", line 1\nSyntaxError: as the sandbox saw it\nCorrect the text and call again, or pass force: true to make the change anyway.',
    )
    expect(existsSync(join(tree, 'x.py'))).toBe(false)
    answer = { verdict: 'failed', exitCode: 127, output: 'sh: 1: python3: not found\n', truncated: false, durationMs: 5 }
    expect(await tool('write_file', { path: 'x.py', content: 'x = 1\n' })).toBe(
      'Created x.py (1 line, 6 bytes).\n\nNote: the Python syntax was not checked: python3 is not installed in the sandbox.',
    )
  })
})

describe('run_command: a shell session with its limits stated', () => {
  test('the working directory and exported variables carry over between commands; the session bookkeeping never reaches the model', async () => {
    const { tool } = await workspace({ 'a.txt': 'a\n' })
    expect(await tool('run_command', { command: 'mkdir -p sub/dir && cd sub/dir && export GREETING="hello \'world\'"; export MULTI="one\ntwo"' })).toMatch(
      /^exit 0 · \d+\.\d s \(limit 8 s\) · in sub\/dir\n\(no output\)$/,
    )
    const answer = await tool('run_command', { command: 'pwd; echo "$GREETING"; printf "%s\\n" "$MULTI"; ls ../..' })
    expect(answer).toMatch(/^exit 0 · \d+\.\d s \(limit 8 s\) · in sub\/dir\n\/tmp\/sandbox\/sub\/dir\nhello 'world'\none\ntwo\na\.txt\nsub\n$/)
    expect(answer).not.toContain('__agent_shell_')
    expect(answer).not.toContain('export ')
    // A syntax error, or a command that exits the shell, leaves the session where it was.
    expect(await tool('run_command', { command: 'if then' })).toStartWith('exit 2 · ')
    expect(await tool('run_command', { command: 'cd /; exit 3' })).toMatch(/^exit 3 · .* · in sub\/dir\n/)
    expect(await tool('run_command', { command: 'pwd' })).toEndWith('\n/tmp/sandbox/sub/dir\n')
    expect(await tool('run_command', { command: 'cd ../..' })).toMatch(/^exit 0 · [^\n]*\(limit 8 s\)\n/)
  })

  test('a directory outside the workspace is not kept, and a removed directory sends the next command to the root', async () => {
    const { tool, tree } = await workspace({})
    expect(await tool('run_command', { command: 'cd /etc' })).toContain(
      '[shell: the command ended in /etc, outside the workspace; the next command starts in the workspace root]',
    )
    expect(await tool('run_command', { command: 'pwd' })).toEndWith('\n/tmp/sandbox\n')
    await tool('run_command', { command: 'mkdir gone && cd gone' })
    expect(await tool('run_command', { command: 'rmdir ../gone' })).toContain(
      '[shell: the working directory is gone; the next command starts in the workspace root]',
    )
    expect(await tool('run_command', { command: 'pwd' })).toMatch(/^exit 0 · [^\n]*\)\n\/tmp\/sandbox\n$/)
    await tool('run_command', { command: 'mkdir -p away && cd away' })
    rmSync(join(tree, 'away'), { recursive: true })
    expect(await tool('run_command', { command: 'pwd' })).toContain('[shell: away is gone; this command runs in the workspace root]\n/tmp/sandbox\n')
  })

  test('the exit status, the time against the limit, a timeout, and a cut output are each stated', async () => {
    const { tool } = await workspace({})
    expect(await tool('run_command', { command: 'echo failing; exit 4' })).toMatch(/^exit 4 · \d+\.\d s \(limit 8 s\)\nfailing\n$/)
    const long = await tool('run_command', { command: "head -c 50000 /dev/zero | tr '\\0' 'y'; echo; echo THE-END" })
    const [first, second] = long.split('\n')
    expect(first).toMatch(/^exit 0 · /)
    const cut = /^output cut: the first ([\d,]+) and last ([\d,]+) of 50,009 characters shown$/.exec(second!)
    expect(cut).not.toBeNull()
    expect(long.length).toBeLessThanOrEqual(12_000)
    expect(long).toContain('characters left out …]')
    expect(long).toEndWith('THE-END\n')

    const { tool: slow } = await workspace({}, { runCommand: (request) => quick.runCommand(request), commandLimits: quick.limits })
    expect(await slow('run_command', { command: 'echo started; sleep 30' })).toBe('timeout after 2 s: killed\nstarted\n')
  })
})
