/**
 * The generated part of docs/benchmarks.mdx, "The latest `npm run bench`": the run line (the machine), the table
 * and the sentences about its targets, all from one results file of `npm run bench`. The sentences are computed
 * from the table's own cells, so a figure they quote is one the table shows and "all met" is what its verdicts say.
 */
import { join } from 'node:path'
import { markdownTable, type Row } from './report.ts'

export const BENCHMARKS_PAGE = join(import.meta.dir, '..', '..', 'docs', 'benchmarks.mdx')

/**
 * The generated text is this subsection of the page, from its heading to the next `## ` heading; its prose is in
 * the section above it.
 */
export const GENERATED_HEADING = "### This run's figures"

export interface BenchRun {
  at: string
  rows: Row[]
  machine: { os: string; cpus: number; cpuModel: string; totalMemoryBytes: number; loadAverageAtStart: number[]; bun: string; node: string }
}

export function runLine({ at, machine: m }: BenchRun): string {
  return (
    `Run ${at.slice(0, 16).replace('T', ' ')} UTC on ${m.os}, ${m.cpus} × ${m.cpuModel}, ${Math.round(m.totalMemoryBytes / 2 ** 30)} GiB, ` +
    `Bun ${m.bun}, Node.js ${m.node}; load average ${m.loadAverageAtStart[0]!.toFixed(2)} at the start.`
  )
}

/** One row of a Markdown table, by column name; `\|` inside a cell stays part of it. */
export type TableRow = Record<string, string>

/** The rows of the first Markdown table in `text`. */
export function parseTable(text: string): TableRow[] {
  const lines = text.split('\n').filter((line) => line.startsWith('|'))
  const cells = (line: string) =>
    line
      .slice(1, line.endsWith('|') ? -1 : undefined)
      .split(/(?<!\\)\|/)
      .map((cell) => cell.trim())
  const [head, , ...body] = lines
  if (!head) return []
  const names = cells(head).map((name, i) => name || `column ${i + 1}`)
  return body.map((line) => Object.fromEntries(cells(line).map((cell, i) => [names[i]!, cell])))
}

/** A row's verdict: its last column, the one without a name. */
const verdictOf = (row: TableRow) => Object.entries(row).findLast(([name]) => name.startsWith('column '))?.[1]

/** The sentences about the targets, from the table's cells: how many were met, and each one that was not. */
export function targetSummary(table: TableRow[]): string {
  const targeted = table.filter((row) => row.target)
  const missed = targeted.filter((row) => verdictOf(row) !== 'met')
  if (targeted.length === 0) return 'No figure of this run has a target.'
  if (missed.length === 0) return `This run met all ${targeted.length} targets.`
  const lines = missed.map((row) => {
    const measured = row.ratio ? `ratio ${row.ratio} (${row.value} against ${row.baseline})` : row.value
    const verdict = verdictOf(row)
    return `- ${row.bench}: ${row.figure}: ${measured}; target ${row.target}${verdict === 'met' || verdict === 'NOT MET' ? '' : ` (${verdict})`}.`
  })
  return `This run met ${targeted.length - missed.length} of its ${targeted.length} targets; not met:\n\n${lines.join('\n')}`
}

/** The generated subsection, its heading included. */
export function latestRunSection(run: BenchRun): string {
  const table = markdownTable(run.rows)
  return `${[GENERATED_HEADING, runLine(run), table, targetSummary(parseTable(table))].join('\n\n')}\n`
}

/** Where the generated subsection is in `page`; throws when it has none. */
export function generatedPart(page: string): { start: number; end: number; text: string } {
  const start = page.indexOf(`\n${GENERATED_HEADING}\n`) + 1
  if (start === 0) throw new Error(`docs/benchmarks.mdx has no "${GENERATED_HEADING}" subsection`)
  const next = page.indexOf('\n## ', start)
  const end = next === -1 ? page.length : next + 1
  return { start, end, text: page.slice(start, end) }
}

/** `page` with its generated part replaced by the text for `run`. */
export function withLatestRun(page: string, run: BenchRun): string {
  const { start, end } = generatedPart(page)
  return page.slice(0, start) + latestRunSection(run) + page.slice(end)
}
