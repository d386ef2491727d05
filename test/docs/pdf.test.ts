/** Pages as PDF downloads: served, parsed back with PDF.js, kept once drawn, and the text work behind them. */
import { afterAll, describe, expect, test } from 'bun:test'
import { join } from 'node:path'
import { getDocumentProxy } from 'unpdf'
import { decodeEntities, printable, wrapCode, wrapRuns } from '../../plugins/docs/pdf-text.ts'
import { buildDocsSite } from '../../plugins/docs/site-plugin.ts'
import { loadDocsSite, type DocsPage, type DocsSite } from '../../plugins/docs/site.ts'
import { makeApp } from '../helpers.ts'
import { docsFixtureApp } from './support.ts'

const ROOT = join(import.meta.dir, '..', '..')
// A4 and the renderer's side margin, in points.
const PAGE_WIDTH = 595.28
const MARGIN = 56
// PDF.js measures text with its own copy of the standard fonts' metrics, up to a few points wider on a full line.
const RIGHT_EDGE = PAGE_WIDTH - MARGIN + 6

interface TextItem {
  str: string
  width: number
  transform: number[]
}

/** Every page's text items, as PDF.js reads them. */
async function readPdf(bytes: Uint8Array): Promise<{ pages: TextItem[][]; text: string; title: unknown }> {
  const document = await getDocumentProxy(bytes.slice(), { verbosity: 0 })
  const pages: TextItem[][] = []
  for (let n = 1; n <= document.numPages; n++) {
    const content = await (await document.getPage(n)).getTextContent()
    pages.push(content.items.filter((item): item is TextItem & typeof item => 'str' in item) as TextItem[])
  }
  const { info } = await document.getMetadata()
  await document.cleanup()
  return { pages, text: pages.map((items) => items.map((item) => item.str).join(' ')).join('\n'), title: (info as { Title?: unknown }).Title }
}

/** Text with all white space removed, so words cut across lines still compare. */
const squeeze = (text: string) => text.replace(/\s+/g, '')

describe('the service serves each page as a PDF', async () => {
  const t = await makeApp({ PUBLIC_BASE_URL: 'https://api.example.com' })
  afterAll(() => t.close())
  const onDisk = loadDocsSite(ROOT)

  test('/docs/errors.pdf is a PDF download with the page title, description and body', async () => {
    const res = await t.request('/docs/errors.pdf')
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toBe('application/pdf')
    expect(res.headers.get('content-disposition')).toBe('attachment; filename="errors.pdf"')
    const bytes = new Uint8Array(await res.arrayBuffer())
    expect(new TextDecoder().decode(bytes.slice(0, 5))).toBe('%PDF-')
    const pdf = await readPdf(bytes)
    expect(pdf.title).toBe('Errors')
    expect(pdf.pages[0]!.map((item) => item.str)).toContain('Errors')
    expect(pdf.text).toContain('One problem+json body for every failure, with a stable code')
    expect(squeeze(pdf.text)).toContain(squeeze('is stable and safe to branch on'))
    // A table row, and a link printed with its URL.
    expect(squeeze(pdf.text)).toContain(squeeze('invalid_json 400 Malformed JSON body'))
    expect(squeeze(pdf.text)).toContain(squeeze('RFC 9457 (https://www.rfc-editor.org/rfc/rfc9457)'))
    // Every page carries the page URL and its number in the footer.
    for (const [i, items] of pdf.pages.entries()) expect(items.map((item) => item.str).join(' ')).toContain(`Page ${i + 1} of ${pdf.pages.length}`)
    expect(pdf.text).toContain('https://api.example.com/docs/errors')
  })

  test('every page of the navigation gives a PDF that parses and starts with its title', async () => {
    for (const page of onDisk.pages) {
      const slug = page.path.replace(/^docs\//, '')
      const res = await t.request(`/docs/${slug}.pdf`)
      expect(res.status, slug).toBe(200)
      const pdf = await readPdf(new Uint8Array(await res.arrayBuffer()))
      expect(squeeze(pdf.pages[0]!.map((item) => item.str).join(' ')), slug).toStartWith(squeeze(page.title))
      // No text runs past the right margin.
      const right = Math.max(...pdf.pages.flat().map((item) => item.transform[4]! + item.width))
      expect(right, slug).toBeLessThanOrEqual(RIGHT_EDGE)
    }
    // Every page drawn and parsed again (33 pages): seconds alone, over 30 s on a loaded two-core machine.
  }, 120_000)

  test('unknown pages and paths that try to leave the documentation are 404', async () => {
    for (const path of [
      '/docs/no-such-page.pdf',
      '/docs/..%2fdocs.json.pdf',
      '/docs/%2e%2e/%2e%2e/package.json.pdf',
      '/docs/errors/..%2f..%2fREADME.pdf',
      '/docs/.pdf',
    ]) {
      const res = await t.request(path)
      expect(res.status, path).toBe(404)
      expect(res.headers.get('content-type')).toBe('application/problem+json')
      expect((await res.json()).code).toBe('not_found')
    }
  })
})

function fixtureSite(markdown: string, path = 'docs/sample'): DocsSite {
  const page: DocsPage = { path, group: 'Guides', title: 'Sample → page', description: 'For ≥ tests', markdown }
  return { config: { name: 'Fixture Docs', navigation: { groups: [{ group: 'Guides', pages: [path] }] } }, pages: [page] }
}

describe('drawing pages', () => {
  test('characters the standard fonts lack are replaced with readable text, never an error', async () => {
    const markdown = 'Arrows → ← ⇒, bounds ≥ ≤ ≠, size 3 × 4, done ✓, emoji 😀, 中文, Ő, zero\u200bwidth, bell\u0007.\n\n`code → here`\n'
    const res = await docsFixtureApp(fixtureSite(markdown)).get('/docs/sample.pdf')
    expect(res.status).toBe(200)
    const pdf = await readPdf(new Uint8Array(await res.arrayBuffer()))
    expect(pdf.text).toContain('Sample -> page')
    expect(pdf.text).toContain('For >= tests')
    expect(pdf.text).toContain('Arrows -> <- =>, bounds >= <= !=, size 3 × 4, done [x], emoji ?, ??, O, zerowidth, bell.')
    expect(pdf.text).toContain('code -> here')
  })

  test('long code lines wrap inside the page, every character kept', async () => {
    const line = Array.from({ length: 40 }, (_, i) => `token${i}`).join('_')
    const res = await docsFixtureApp(fixtureSite(`Before.\n\n\`\`\`\n${line}\nshort\n\`\`\`\n\nAfter.\n`)).get('/docs/sample.pdf')
    const pdf = await readPdf(new Uint8Array(await res.arrayBuffer()))
    const items = pdf.pages.flat()
    expect(squeeze(items.map((item) => item.str).join(''))).toContain(line)
    // Cut over several lines, none past the margin.
    expect(items.filter((item) => item.str.includes('token')).length).toBeGreaterThan(1)
    expect(Math.max(...items.map((item) => item.transform[4]! + item.width))).toBeLessThanOrEqual(RIGHT_EDGE)
  })

  test('lists, quotes, tables, headings and links are drawn; a long page runs onto more pages', async () => {
    const rows = Array.from({ length: 80 }, (_, i) => `| \`row_${i}\` | value ${i} |`).join('\n')
    const markdown = [
      '## Steps',
      '',
      '1. First **bold** step',
      '2. Second *step* with [a link](/docs/other) and [a fragment](#steps)',
      '   - nested item',
      '',
      '> A quoted remark.',
      '',
      '<Note title="Heads up">',
      '  Inside a **component**.',
      '</Note>',
      '',
      '| name | value |',
      '|---|---|',
      rows,
      '',
      'The end &amp; more.',
    ].join('\n')
    const res = await docsFixtureApp(fixtureSite(markdown)).get('/docs/sample.pdf')
    const pdf = await readPdf(new Uint8Array(await res.arrayBuffer()))
    const text = squeeze(pdf.text)
    for (const expected of [
      'Steps',
      '1. First bold step',
      '2. Second step with a link (http://docs.test/docs/other)',
      'nested item',
      'A quoted remark.',
      'Heads up',
      'Inside a component.',
      'row_79 value 79',
      'The end & more.',
    ])
      expect(text).toContain(squeeze(expected))
    expect(text).not.toContain('afragment(')
    expect(pdf.pages.length).toBeGreaterThan(1)
    // The table's header is repeated on the page it continues on.
    expect(pdf.pages[1]!.map((item) => item.str)).toContain('name')
  })

  test('a page is drawn once and the same PDF is answered afterwards', async () => {
    const built = buildDocsSite(fixtureSite('Hello.\n'), { publicBaseUrl: 'http://docs.test', mcpUrl: 'http://docs.test/mcp' })
    const page = built.pages.get('/docs/sample')!
    const first = await page.pdf()
    expect(await page.pdf()).toBe(first)
  })
})

describe('text for the standard fonts', () => {
  const winAnsi = new Set([...Array.from({ length: 95 }, (_, i) => 32 + i), 0xd7, 0xe9, 0x2026, 0x2014, 0x2022])

  test('kept, replaced, reduced to the base letter, or "?"', () => {
    expect(printable('a × é … — •', winAnsi)).toBe('a × é … — •')
    expect(printable('→ ≥ ≤ ≠ ✓ ✗ ─│', winAnsi)).toBe('-> >= <= != [x] x -|')
    expect(printable('Ő ñ', winAnsi)).toBe('O n')
    expect(printable('😀 中', winAnsi)).toBe('? ?')
    expect(printable('line\nbreak\ttab\u200b\u0000', winAnsi)).toBe('line break    tab')
  })

  test('any string comes out drawable', () => {
    const sample = `${Array.from({ length: 2000 }, (_, i) => String.fromCodePoint((i * 7919) % 0x2ffff)).join('')}\ud800`
    for (const char of printable(sample, winAnsi)) expect(winAnsi.has(char.codePointAt(0)!)).toBe(true)
  })

  test('entities as MDX pages write them are decoded', () => {
    expect(decodeEntities('&lt;token&gt; &#123;x&#125; &#x7d; &amp;amp; &nope;')).toBe('<token> {x} } &amp; &nope;')
  })

  test('lines break at spaces, never between styles inside a word, and never run past the width', () => {
    const measure = (text: string) => [...text].length * 5
    const lines = wrapRuns(
      [
        { text: 'the budget (', style: 'regular' },
        { text: 'RATE_LIMIT', style: 'code' },
        { text: ') applies to ', style: 'regular' },
        { text: 'x'.repeat(45), style: 'code' },
      ],
      100,
      measure,
    )
    expect(lines.map((line) => line.runs.map((run) => run.text).join(''))).toEqual([
      'the budget',
      '(RATE_LIMIT) applies',
      'to',
      'x'.repeat(20),
      'x'.repeat(20),
      'x'.repeat(5),
    ])
    for (const line of lines) expect(line.width).toBeLessThanOrEqual(100)
  })

  test('a hard break ends the line; code lines are cut at the column count', () => {
    const lines = wrapRuns(
      [
        { text: 'one', style: 's', break: true },
        { text: 'two', style: 's' },
      ],
      100,
      (text) => text.length,
    )
    expect(lines.map((line) => line.runs[0]!.text)).toEqual(['one', 'two'])
    expect(wrapCode('abcdefg\n\n\tx', 3)).toEqual(['abc', 'def', 'g', '', '   ', ' x'])
  })
})
