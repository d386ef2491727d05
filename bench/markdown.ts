/**
 * Prints a results file of `npm run bench` (bench/results/*.json) as the generated part of docs/benchmarks.mdx,
 * "The latest `npm run bench`": the machine it ran on, the table, and the sentences about its targets. With
 * `--write` it replaces that part of the page in place; the rest of the page is its own.
 */
import { readFileSync, writeFileSync } from 'node:fs'
import { BENCHMARKS_PAGE, latestRunSection, withLatestRun, type BenchRun } from './lib/page.ts'

const write = process.argv.includes('--write')
const file = process.argv.slice(2).find((arg) => arg !== '--write')
if (!file) {
  console.error('usage: bun bench/markdown.ts [--write] bench/results/<run>.json')
  process.exit(64)
}
const run = JSON.parse(readFileSync(file, 'utf8')) as BenchRun
if (write) writeFileSync(BENCHMARKS_PAGE, withLatestRun(readFileSync(BENCHMARKS_PAGE, 'utf8'), run))
else console.log(latestRunSection(run))
