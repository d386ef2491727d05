/** The menu's windsurf, devin-mcp, download-pdf and assistant entries, and the text they hand out. */
import { describe, expect, test } from 'bun:test'
import {
  devinMcpCommand,
  mcpServerKey,
  parseContextualConfig,
  resolveMenu,
  shellWord,
  windsurfMcpConfig,
  type MenuEntry,
} from '../../plugins/docs/contextual.ts'
import { pdfFileName } from '../../plugins/docs/site-plugin.ts'
import { samplePage as page } from './support.ts'

const entryOf = (id: string, context = page()): MenuEntry => resolveMenu(parseContextualConfig({ options: [id] }), context)[0]!
const copied = (id: string, context = page()) => {
  const entry = entryOf(id, context)
  if (entry.kind !== 'copy' || !('text' in entry.copy)) throw new Error(`${id} does not copy a text`)
  return entry.copy.text
}

/** What a POSIX shell makes of `line`: its words, as `sh` would pass them to a program. */
function shellWords(line: string): string[] {
  const run = Bun.spawnSync(['sh', '-c', `for word in ${line}; do printf '%s\\0' "$word"; done`])
  const out = run.stdout.toString()
  return out === '' ? [] : out.slice(0, -1).split('\0')
}

describe('server keys and shell words', () => {
  test('the key is the site name in lower case with runs of other characters as one dash', () => {
    expect(mcpServerKey('Real-time AI development platform')).toBe('real-time-ai-development-platform')
    expect(mcpServerKey('  Ünïcode Dócs!! ')).toBe('unicode-docs')
    expect(mcpServerKey('日本語')).toBe('docs')
    expect(mcpServerKey('x'.repeat(100))).toHaveLength(64)
    expect(mcpServerKey(`${'a'.repeat(63)} b`)).toBe('a'.repeat(63))
  })

  test('a plain URL stays bare; anything a shell would read is single-quoted', () => {
    expect(shellWord('https://api.example.com/mcp')).toBe('https://api.example.com/mcp')
    expect(shellWord('https://x.test/mcp?a=1&b=2')).toBe("'https://x.test/mcp?a=1&b=2'")
    expect(shellWord("it's")).toBe(`'it'\\''s'`)
    expect(shellWord('')).toBe("''")
  })
})

describe('windsurf', () => {
  test('copies the entry for mcp_config.json: the server under mcpServers with serverUrl', () => {
    const entry = entryOf('windsurf')
    expect(entry).toMatchObject({ kind: 'copy', title: 'Connect to Windsurf' })
    expect(entry.description).toContain('mcp_config.json')
    expect(JSON.parse(copied('windsurf'))).toEqual({ mcpServers: { 'example-api': { serverUrl: 'https://api.example.com/mcp' } } })
  })

  test('URLs with quotes, query strings, spaces and non-ASCII characters come back from the JSON unchanged', () => {
    for (const mcpUrl of ['https://x.test/mcp?a=1&b="two"', 'https://x.test/m c p/ü\\', 'http://127.0.0.1:3000/mcp#frag'])
      expect(JSON.parse(windsurfMcpConfig('Docs', mcpUrl)).mcpServers.docs.serverUrl).toBe(mcpUrl)
  })

  test('a site name with quotes and markup still gives a plain key', () => {
    const text = windsurfMcpConfig('Say "hi" & <go>', 'https://x.test/mcp?a=1&b=2')
    expect(JSON.parse(text)).toEqual({ mcpServers: { 'say-hi-go': { serverUrl: 'https://x.test/mcp?a=1&b=2' } } })
  })
})

describe('devin-mcp', () => {
  test('copies the Devin command that adds the server for every project', () => {
    expect(entryOf('devin-mcp')).toMatchObject({ kind: 'copy', title: 'Connect to Devin' })
    expect(copied('devin-mcp')).toBe('devin mcp add -s user example-api https://api.example.com/mcp')
  })

  test('a shell reads the name and the URL back as single words, whatever the URL holds', () => {
    for (const mcpUrl of ['https://x.test/mcp?a=1&b=2;rm -rf ~', "https://x.test/it's/$(whoami)`id`", 'https://x.test/a b\tc', 'https://x.test/ü/*'])
      expect(shellWords(devinMcpCommand('My Docs', mcpUrl))).toEqual(['devin', 'mcp', 'add', '-s', 'user', 'my-docs', mcpUrl])
  })

  test('add-mcp quotes its URL the same way', () => {
    expect(copied('add-mcp', page({ mcpUrl: 'https://x.test/mcp?a=1&b=2' }))).toBe("npx add-mcp 'https://x.test/mcp?a=1&b=2'")
  })
})

describe('download-pdf and assistant', () => {
  test('download-pdf downloads the page at /docs/<path>.pdf', () => {
    expect(entryOf('download-pdf')).toMatchObject({ kind: 'link', title: 'Download PDF', href: '/docs/search.pdf', download: true, newTab: false })
    expect(entryOf('download-pdf', page({ path: '/docs/guide/deep' }))).toMatchObject({ href: '/docs/guide/deep.pdf' })
  })

  test('the PDF file name is one safe path segment', () => {
    expect(pdfFileName('errors')).toBe('errors.pdf')
    expect(pdfFileName('guide/deep')).toBe('guide-deep.pdf')
    expect(pdfFileName('../"evil"\r\nname')).toBe('evil-name.pdf')
    expect(pdfFileName('///')).toBe('page.pdf')
  })

  test('assistant opens the documentation assistant', () => {
    expect(entryOf('assistant')).toEqual({
      kind: 'assistant',
      id: 'assistant',
      title: 'Ask assistant',
      description: 'Ask the documentation assistant about this page',
    })
  })
})
