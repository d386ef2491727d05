/**
 * Prints a results file of `npm run bench` (bench/results/*.json) as the table of docs/benchmarks.mdx, "The latest
 * `npm run bench`", with the machine it ran on: paste the output over that section's run line and table.
 */
import { readFileSync } from 'node:fs'
import { markdownTable, type Row } from './lib/report.ts'

const file = process.argv[2]
if (!file) {
  console.error('usage: bun bench/markdown.ts bench/results/<run>.json')
  process.exit(64)
}
const run = JSON.parse(readFileSync(file, 'utf8')) as {
  at: string
  rows: Row[]
  machine: { os: string; cpus: number; cpuModel: string; totalMemoryBytes: number; loadAverageAtStart: number[]; bun: string; node: string }
}
const m = run.machine
console.log(
  `Run ${run.at.slice(0, 16).replace('T', ' ')} UTC on ${m.os}, ${m.cpus} × ${m.cpuModel}, ${Math.round(m.totalMemoryBytes / 2 ** 30)} GiB, ` +
    `Bun ${m.bun}, Node.js ${m.node}; load average ${m.loadAverageAtStart[0]!.toFixed(2)} at the start.\n`,
)
console.log(markdownTable(run.rows))
