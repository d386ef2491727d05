import { describe, expect, test } from 'bun:test'
import { chunkFile, unindexableReason } from '../../plugins/code-search/indexing/chunker.ts'
import { languageOfPath } from '../../plugins/code-search/indexing/languages.ts'

const linesOf = (content: string, start: number, end: number) =>
  content
    .split('\n')
    .slice(start - 1, end)
    .join('\n')

/** Every chunk's content is exactly its line range of the file. */
function expectFaithful(content: string, chunks: ReturnType<typeof chunkFile>) {
  for (const chunk of chunks) expect(chunk.content).toBe(linesOf(content, chunk.startLine, chunk.endLine))
}

const body = (name: string, lines: number) => Array.from({ length: lines }, (_, i) => `  const ${name}${i} = ${i} * 2`).join('\n')

describe('chunking along code structure', () => {
  test('TypeScript: each function of a dozen lines or more is its own chunk, with the comment above it', () => {
    const content = [
      "import { x } from './x.ts'",
      '',
      '/** Parses the configuration file. */',
      'export function parseConfig(text: string) {',
      body('a', 14),
      '}',
      '',
      '// Loads it from disk.',
      'export async function loadConfig(path: string) {',
      body('b', 14),
      '}',
      '',
      'export class ConfigStore {',
      body('c', 14),
      '}',
    ].join('\n')
    const chunks = chunkFile('src/config.ts', content, 'TypeScript')
    expectFaithful(content, chunks)
    const starts = chunks.map((c) => content.split('\n')[c.startLine - 1])
    expect(starts).toEqual(["import { x } from './x.ts'", '// Loads it from disk.', 'export class ConfigStore {'])
    expect(chunks.find((c) => c.content.includes('loadConfig('))!.symbols).toEqual(['loadConfig'])
    expect(chunks.find((c) => c.content.includes('class ConfigStore'))!.symbols).toEqual(['ConfigStore'])
    // The import line, too short alone, is packed with the first function.
    expect(chunks[0]!.startLine).toBe(1)
    expect(chunks[0]!.symbols).toEqual(['parseConfig'])
  })

  test('small neighbours are packed together; symbols of both are kept', () => {
    const content = ['def small_one():', '    return 1', '', 'def small_two():', '    return 2', ''].join('\n')
    const chunks = chunkFile('util.py', content)
    expect(chunks).toHaveLength(1)
    expect(chunks[0]).toMatchObject({ startLine: 1, endLine: 5, symbols: ['small_one', 'small_two'] })
  })

  test('Python: methods of a long class are cut at their def, decorators included', () => {
    const method = (name: string) =>
      ['    @staticmethod', `    def ${name}(value):`, ...Array.from({ length: 14 }, (_, i) => `        value += ${i}`), '        return value', ''].join('\n')
    const content = ['class Numbers:', '    """Arithmetic helpers."""', '', method('double'), method('triple')].join('\n')
    const chunks = chunkFile('numbers.py', content)
    expectFaithful(content, chunks)
    const triple = chunks.find((c) => c.symbols.includes('triple'))!
    expect(triple.content.startsWith('    @staticmethod\n    def triple(value):')).toBe(true)
  })

  test('Go, Rust and Java declarations start chunks', () => {
    const go = ['package x', '', 'func First() int {', body('a', 13), '}', '', 'func (s *Server) Second() {', body('b', 13), '}'].join('\n')
    expect(chunkFile('x.go', go).flatMap((c) => c.symbols)).toEqual(['First', 'Second'])
    const rust = [
      'pub struct Lexer {',
      body('a', 12),
      '}',
      '',
      'impl Lexer {',
      '    pub fn next_token(&mut self) -> Token {',
      body('b', 13),
      '    }',
      '}',
    ].join('\n')
    expect(chunkFile('lexer.rs', rust).flatMap((c) => c.symbols)).toContain('next_token')
    const java = [
      'public class Handler {',
      '    public boolean verify(String payload) {',
      body('a', 13),
      '    }',
      '',
      '    private int count(String s) {',
      body('b', 13),
      '    }',
      '}',
    ].join('\n')
    const symbols = chunkFile('Handler.java', java).flatMap((c) => c.symbols)
    expect(symbols).toContain('verify')
    expect(symbols).toContain('count')
  })

  test('control flow is not mistaken for a declaration', () => {
    const content = ['export function run() {', '  if (ready) {', '    go()', '  }', '  for (const x of xs) {', '    use(x)', '  }', '}'].join('\n')
    expect(chunkFile('run.ts', content).flatMap((c) => c.symbols)).toEqual(['run'])
  })
})

describe('line windows', () => {
  test('a long function becomes overlapping windows of at most 60 lines, the first named after it', () => {
    const content = ['export function huge() {', body('x', 150), '}'].join('\n')
    const chunks = chunkFile('huge.ts', content)
    expectFaithful(content, chunks)
    expect(chunks.length).toBeGreaterThan(2)
    for (const chunk of chunks) expect(chunk.endLine - chunk.startLine + 1).toBeLessThanOrEqual(60)
    expect(chunks[0]!.symbols).toEqual(['huge'])
    expect(chunks[1]!.symbols).toEqual([])
    for (let i = 1; i < chunks.length; i++) expect(chunks[i]!.startLine).toBe(chunks[i - 1]!.endLine - 9)
    expect(chunks.at(-1)!.endLine).toBe(152)
  })

  test('a file in an unknown language is cut into windows; the character limit also applies', () => {
    const content = Array.from({ length: 50 }, (_, i) => `${i} ${'word '.repeat(40)}`).join('\n')
    const chunks = chunkFile('notes.txt', content)
    expectFaithful(content, chunks)
    for (const chunk of chunks) expect(chunk.content.length).toBeLessThanOrEqual(4000)
    expect(chunks.length).toBeGreaterThan(1)
  })

  test('blank edges are trimmed and an empty file gives nothing', () => {
    expect(chunkFile('a.md', '\n\n# Title\n\ntext\n\n\n')).toEqual([{ startLine: 3, endLine: 5, content: '# Title\n\ntext', symbols: ['Title'] }])
    expect(chunkFile('empty.ts', '')).toEqual([])
    expect(chunkFile('blank.ts', '\n   \n')).toEqual([])
  })

  test('Windows line endings give the same lines', () => {
    const chunks = chunkFile('a.py', 'def a():\r\n    return 1\r\n')
    expect(chunks).toEqual([{ startLine: 1, endLine: 2, content: 'def a():\n    return 1', symbols: ['a'] }])
  })
})

describe('files that are not indexed', () => {
  test.each([
    ['package-lock.json', 'lock file', '{}'],
    ['app/bun.lock', 'lock file', '{}'],
    ['logo.png', 'binary', 'PNG\0\0data'],
    ['dist/app.min.js', 'minified or generated', `var a=1;${'b(1);'.repeat(1000)}`],
    ['big.txt', 'too large', 'x\n'.repeat(600_000)],
  ])('%s is skipped: %s', (path, reason, content) => {
    expect(unindexableReason(path, content)).toBe(reason)
    expect(chunkFile(path, content)).toEqual([])
  })

  test('an ordinary file is indexable', () => {
    expect(unindexableReason('src/a.ts', 'export const a = 1\n')).toBeUndefined()
  })
})

test('languages by extension', () => {
  expect(languageOfPath('src/app.tsx')).toBe('TypeScript')
  expect(languageOfPath('lib/x.PY')).toBe('Python')
  expect(languageOfPath('Dockerfile')).toBe('Dockerfile')
  expect(languageOfPath('LICENSE')).toBeUndefined()
  expect(languageOfPath('.gitignore')).toBeUndefined()
})
