/**
 * docs/benchmarks.mdx says only what its tables show: the latest run's subsection is what bench/markdown.ts
 * generates from its table (the sentences about the targets included), the prose around it quotes no figure that
 * table does not hold, and no other prose speaks for "this run" or claims its targets met.
 */
import { describe, expect, test } from 'bun:test'
import { readFileSync } from 'node:fs'
import { BENCHMARKS_PAGE, GENERATED_HEADING, generatedPart, parseTable, targetSummary } from '../../bench/lib/page.ts'

const page = readFileSync(BENCHMARKS_PAGE, 'utf8')
const generated = generatedPart(page)
const latestSection = page.slice(page.indexOf('## The latest `npm run bench`'), generated.start)
const outside = page.slice(0, generated.start) + page.slice(generated.end)

/** Numbers as written (`6,950`, `1.19`, `0.87`), with and without thousands separators. */
const numbersIn = (text: string) => [...text.matchAll(/\d[\d,]*(?:\.\d+)?/g)].map((m) => m[0].replace(/,$/, ''))
const withoutSeparators = (n: string) => n.replaceAll(',', '')

/** Text that is prose: tables, code blocks, inline code and link targets left out. */
function prose(markdown: string): string {
  return markdown
    .replace(/^```[\s\S]*?^```/gm, '')
    .split('\n')
    .filter((line) => !line.startsWith('|'))
    .join('\n')
    .replace(/`[^`]*`/g, '')
    .replace(/\]\([^)]*\)/g, ']')
}

const [runLine = '', table = '', ...summary] = generated.text
  .slice(GENERATED_HEADING.length)
  .trim()
  .split(/\n\n(?=[^-\n])/)

describe('the latest run on docs/benchmarks.mdx', () => {
  test('is a run line, a table and the sentences bench/markdown.ts computes from that table', () => {
    expect(runLine).toMatch(/^Run \d{4}-\d\d-\d\d \d\d:\d\d UTC on .+; load average \d+\.\d\d at the start\.$/)
    expect(parseTable(table).length).toBeGreaterThan(10)
    expect(summary.join('\n\n').trim()).toBe(targetSummary(parseTable(table)))
  })

  test("each figure the section's prose quotes is in its table or its run line", () => {
    const shown = new Set([...numbersIn(table), ...numbersIn(runLine)].flatMap((n) => [n, withoutSeparators(n)]))
    const quoted = numbersIn(prose(latestSection))
    expect(quoted.filter((n) => !shown.has(n) && !shown.has(withoutSeparators(n)))).toEqual([])
  })

  test('no prose outside the generated part speaks for this run or claims targets met', () => {
    const claims = prose(outside)
      .split(/(?<=[.;:])\s+/)
      .filter((sentence) => /\bthis run\b|\bthe latest run\b|at the top of this page|\bmet (all|every)\b|\ball \w+ targets\b/i.test(sentence))
    expect(claims).toEqual([])
  })
})

describe('the sentences about the targets', () => {
  const head = '| bench | figure | baseline | value | ratio | target | |\n|---|---|---|---|---|---|---|\n'
  const met = '| chat | tokens per second | 683,492 tokens/s | 685,205 tokens/s | 1.00 | ratio ≥ 0.60 | met |'
  const missed = '| chat | server CPU per token | 55.78 µs | 66.16 µs | 1.19 | ratio ≤ 1.15 | NOT MET |'
  const untargeted = '| chat | time to first token | 3.85 ms | 4.53 ms |  |  |  |'

  test('say all targets were met only when every verdict is met', () => {
    expect(targetSummary(parseTable(head + [met, untargeted].join('\n')))).toBe('This run met all 1 targets.')
    const text = targetSummary(parseTable(head + [met, missed, untargeted].join('\n')))
    expect(text).not.toContain('all')
    expect(text).toStartWith('This run met 1 of its 2 targets; not met:')
  })

  test('name each target not met with the figures of its row', () => {
    const text = targetSummary(parseTable(head + missed))
    expect(text).toContain('- chat: server CPU per token: ratio 1.19 (66.16 µs against 55.78 µs); target ratio ≤ 1.15.')
  })

  test('read the verdict from the last column when the table shows each value over its rounds', () => {
    const withSpread = '| bench | figure | baseline | value | ratio | value over rounds | target | |\n|---|---|---|---|---|---|---|---|\n'
    const rows = [
      '| chat | tokens per second | 683,492 tokens/s | 685,205 tokens/s | 1.00 | 547,537..824,542 (9) | ratio ≥ 0.60 | met |',
      '| chat | server CPU per token | 55.78 µs | 66.16 µs | 1.19 | 60.00..70.00 (5) | ratio ≤ 1.15 | NOT MET |',
    ]
    expect(targetSummary(parseTable(withSpread + rows[0]))).toBe('This run met all 1 targets.')
    expect(targetSummary(parseTable(withSpread + rows.join('\n')))).toStartWith('This run met 1 of its 2 targets; not met:')
  })
})
