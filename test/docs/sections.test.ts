import { describe, expect, test } from 'bun:test'
import { plainText, snippetOf, splitSections } from '../../plugins/docs/sections.ts'

describe('splitSections', () => {
  test('cuts at ATX headings of any level, keeping the opening as a section without heading', () => {
    const page = 'Opening words.\n\n## Setup\n\nInstall it.\n\n### Details ###\nMore.\n# Last'
    expect(splitSections(page)).toEqual([
      { heading: undefined, markdown: 'Opening words.' },
      { heading: 'Setup', markdown: 'Install it.' },
      { heading: 'Details', markdown: 'More.' },
      { heading: 'Last', markdown: '' },
    ])
  })

  test('a # line inside fenced code is code, not a heading', () => {
    const page = '## Shell\n\n```sh\n# a comment\necho hi\n```\n\n~~~\n## not a heading\n~~~\nafter'
    const sections = splitSections(page)
    expect(sections.map((s) => s.heading)).toEqual(['Shell'])
    expect(sections[0]!.markdown).toContain('# a comment')
    expect(sections[0]!.markdown).toContain('## not a heading')
  })

  test('headings lose their inline Markdown; #hashtag without a space is text', () => {
    const sections = splitSections('## The `POST /api/search` **route**\n#hashtag')
    expect(sections).toEqual([{ heading: 'The POST /api/search route', markdown: '#hashtag' }])
  })

  test('a page with no text has no sections', () => {
    expect(splitSections('\n\n')).toEqual([])
  })
})

describe('plainText', () => {
  test('drops fences, table rules, emphasis, link targets and MDX tags; keeps code, placeholders and cell text', () => {
    const markdown = [
      'See [the errors](/docs/errors) and <Note type="x">this</Note>. Authorization: Bearer <token>',
      '',
      '| field | meaning |',
      '|---|---|',
      '| `query` | **words** to find |',
      '```json',
      '{"query": "x"}',
      '```',
    ].join('\n')
    expect(plainText(markdown)).toBe('See the errors and this . Authorization: Bearer <token> field meaning query words to find {"query": "x"}')
  })
})

describe('snippetOf', () => {
  const text = Array.from({ length: 80 }, (_, i) => `word${i}`).join(' ')

  test('short text comes back whole', () => {
    expect(snippetOf('a short section', 'anything')).toBe('a short section')
  })

  test('centres on the first query word found, in whole words, marked where cut', () => {
    const snippet = snippetOf(text, 'word40', 60)
    expect(snippet).toStartWith('…')
    expect(snippet).toEndWith('…')
    expect(snippet).toContain('word40')
    expect(
      snippet
        .slice(1, -1)
        .split(' ')
        .every((w) => /^word\d+$/.test(w)),
    ).toBe(true)
    expect(snippet.length).toBeLessThanOrEqual(62)
  })

  test('matches at word starts only, case-insensitively', () => {
    const sample = `separate ${'x '.repeat(150)}Rates apply here ${'y '.repeat(150)}`
    expect(snippetOf(sample, 'rate', 60)).toContain('Rates apply')
  })

  test('without a literal match the opening is shown', () => {
    expect(snippetOf(text, 'nothing-like-it', 30)).toStartWith('word0 word1')
  })
})
