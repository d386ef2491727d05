import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import { join } from 'node:path'
import { QUICK } from './mode.ts'

const benchDir = join(import.meta.dir, '..')
// Taken when the harness loads: another busy process on the machine shows here, before the benches add their own.
const loadAverageAtStart = os.loadavg()

/** One figure against its baseline from the same run; ratio is value / baseline. */
export interface Row {
  /** Filled in by bench/run.ts when several benches share one table. */
  bench?: string
  figure: string
  unit: string
  baseline: number | null
  value: number
  ratio: number | null
  /** Bounds on the ratio; shown beside it, never enforced. */
  target?: { atLeast?: number; atMost?: number }
  /** Bounds on the value itself, in its unit (the issues' absolute targets); shown, never enforced. */
  limit?: { atLeast?: number; atMost?: number }
  /** Caveats on how the figure was obtained; printed as footnotes. */
  notes?: string[]
  /** Something that makes the figure untrustworthy (refused requests, say); printed loudly. */
  warning?: string
  /** The value in each of the rounds it was measured over, summarised: how much one round can differ from another. */
  spread?: Spread
}

export interface Spread {
  min: number
  median: number
  max: number
  rounds: number
}

/** The spread of a figure over its rounds, or undefined when there is only one (nothing to compare). */
export function spreadOf(values: readonly number[]): Spread | undefined {
  const sorted = values.filter(Number.isFinite).sort((a, b) => a - b)
  if (sorted.length < 2) return undefined
  return { min: sorted[0]!, median: sorted[Math.floor(sorted.length / 2)]!, max: sorted.at(-1)!, rounds: sorted.length }
}

export const ratioOf = (value: number, baseline: number) => (baseline > 0 ? value / baseline : null)

export function printTable(rows: Row[]): void {
  const notes = [...new Set(rows.flatMap((r) => r.notes ?? []))]
  const withBench = rows.some((r) => r.bench)
  const withSpread = rows.some((r) => r.spread)
  const header = [...(withBench ? ['bench'] : []), 'figure', 'unit', 'baseline', 'value', 'ratio', ...(withSpread ? ['value over rounds'] : []), 'target', '']
  const body = rows.map((r) => [
    ...(withBench ? [r.bench ?? ''] : []),
    r.figure +
      (r.notes?.length
        ? ` [${r.notes
            .map((n) => notes.indexOf(n) + 1)
            .sort((a, b) => a - b)
            .join(',')}]`
        : ''),
    r.unit,
    r.baseline === null ? '-' : formatValue(r.baseline, r.unit),
    formatValue(r.value, r.unit),
    r.ratio === null ? '-' : r.ratio.toFixed(2),
    ...(withSpread ? [r.spread ? formatSpread(r.spread, r.unit) : ''] : []),
    formatTarget(r),
    r.warning ? '!! SEE BELOW' : verdict(r),
  ])
  const widths = header.map((_, i) => Math.max(...[header, ...body].map((cells) => cells[i]!.length)))
  const numeric = new Set(['baseline', 'value', 'ratio'])
  const line = (cells: string[]) =>
    cells
      .map((c, i) => (numeric.has(header[i]!) ? c.padStart(widths[i]!) : c.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd()
  console.log(line(header))
  console.log(widths.map((w) => '-'.repeat(w)).join('  '))
  for (const cells of body) console.log(line(cells))
  for (const [i, n] of notes.entries()) console.log(`[${i + 1}] ${n}`)
  for (const r of rows) if (r.warning) console.log(`!! ${r.bench ? `${r.bench}: ` : ''}${r.figure}: ${r.warning.toUpperCase()}`)
}

/** The same table as Markdown (no footnotes), for docs/benchmarks.mdx. */
export function markdownTable(rows: Row[]): string {
  // The page is MDX, where a bare `<` or `{` would start JSX or an expression.
  const cell = (text: string) => text.replace(/\|/g, '\\|').replaceAll('<', '&lt;').replaceAll('{', '&#123;').replaceAll('}', '&#125;')
  // How far a figure measured over several rounds moved: lowest..highest and the number of rounds.
  const lines = ['| bench | figure | baseline | value | ratio | value over rounds | target | |', '|---|---|---|---|---|---|---|---|']
  for (const r of rows) {
    const unit = r.unit === 'count' ? '' : ` ${r.unit}`
    lines.push(
      `| ${[
        r.bench ?? '',
        r.figure,
        r.baseline === null ? '' : formatValue(r.baseline, r.unit) + unit,
        formatValue(r.value, r.unit) + unit,
        r.ratio === null ? '' : r.ratio.toFixed(2),
        r.spread ? formatSpread(r.spread, r.unit) : '',
        formatTarget(r),
        r.warning ? 'see the warning in the run' : verdict(r),
      ]
        .map(cell)
        .join(' | ')} |`,
    )
  }
  return lines.join('\n')
}

function formatValue(n: number, unit: string): string {
  if (unit === 'ms') return Number.isInteger(n) ? String(n) : n.toFixed(2)
  if (unit === '%') return n.toFixed(0)
  if (unit === 'µs') return n.toFixed(2)
  return Math.round(n).toLocaleString('en-US')
}

/** `min..max (n)`: the value's range over its rounds, and how many rounds. */
function formatSpread({ min, max, rounds }: Spread, unit: string): string {
  return `${formatValue(min, unit)}..${formatValue(max, unit)} (${rounds})`
}

function formatTarget({ target, limit, unit }: Row): string {
  const parts: string[] = []
  if (target?.atLeast !== undefined) parts.push(`ratio ≥ ${target.atLeast.toFixed(2)}`)
  if (target?.atMost !== undefined) parts.push(`ratio ≤ ${target.atMost.toFixed(2)}`)
  if (limit?.atLeast !== undefined) parts.push(`≥ ${formatValue(limit.atLeast, unit)} ${unit}`)
  if (limit?.atMost !== undefined) parts.push(`≤ ${formatValue(limit.atMost, unit)} ${unit}`)
  return parts.join(', ')
}

const within = (n: number, bounds: { atLeast?: number; atMost?: number }) =>
  (bounds.atLeast === undefined || n >= bounds.atLeast) && (bounds.atMost === undefined || n <= bounds.atMost)

export function verdict({ target, limit, ratio, value }: Row): string {
  if (!limit && (!target || ratio === null)) return ''
  const met = (!limit || within(value, limit)) && (!target || ratio === null || within(ratio, target))
  return met ? 'met' : 'NOT MET'
}

export function machineFacts() {
  const cpus = os.cpus()
  const versionOf = (pkg: string) =>
    (JSON.parse(readFileSync(join(benchDir, '..', 'node_modules', pkg, 'package.json'), 'utf8')) as { version: string }).version
  return {
    os: `${os.type()} ${os.release()} ${os.arch()}`,
    cpus: cpus.length,
    cpuModel: cpus[0]?.model ?? 'unknown',
    totalMemoryBytes: os.totalmem(),
    loadAverageAtStart,
    bun: Bun.version,
    node: Bun.spawnSync(['node', '--version']).stdout.toString().trim(),
    autocannon: versionOf('autocannon'),
  }
}

/** Writes bench/results/<name>-<timestamp>.json (gitignored) and returns its path. */
export function writeResults(name: string, rows: Row[]): string {
  const at = new Date().toISOString()
  const dir = join(benchDir, 'results')
  mkdirSync(dir, { recursive: true })
  // Colons are not portable in file names.
  const path = join(dir, `${name}-${at.replace(/[:.]/g, '-')}.json`)
  writeFileSync(path, `${JSON.stringify({ name, at, mode: QUICK ? 'quick' : 'full', machine: machineFacts(), rows }, null, 2)}\n`)
  return path
}
