/**
 * Runs every bench/*.bench.ts in turn (never in parallel: they would measure each other), one table, one file.
 * With `--quick`, only the benches holding the headline figures, each in its quick form (bench/lib/mode.ts).
 */
import { basename, join } from 'node:path'
import { QUICK } from './lib/mode.ts'
import { printTable, writeResults, type Row } from './lib/report.ts'

/** Idle connections and fan-out, the authenticated route's CPU, first tokens under load, and the start. */
const QUICK_BENCHES = new Set(['agents', 'chat', 'http', 'startup'])

const benchDir = import.meta.dir
const files = [...new Bun.Glob('*.bench.ts').scanSync({ cwd: benchDir })].sort().filter((file) => !QUICK || QUICK_BENCHES.has(basename(file, '.bench.ts')))

const rows: Row[] = []
const failed: string[] = []
const runStartedAt = performance.now()
for (const file of files) {
  const bench = basename(file, '.bench.ts')
  console.log(`== ${bench}`)
  const startedAt = performance.now()
  try {
    const mod = (await import(join(benchDir, file))) as { run(): Promise<Row[]> }
    rows.push(...(await mod.run()).map((r) => ({ ...r, bench })))
  } catch (err) {
    // One broken bench should not cost the figures of the others.
    failed.push(bench)
    console.error(`${bench} failed:`, err)
  }
  console.log(`== ${bench} took ${((performance.now() - startedAt) / 1000).toFixed(0)} s`)
}

console.log()
printTable(rows)
console.log(`${QUICK ? 'quick run' : 'run'}: ${files.length} benches in ${((performance.now() - runStartedAt) / 60_000).toFixed(1)} minutes`)
console.log(`results: ${writeResults(QUICK ? 'bench-quick' : 'bench', rows)}`)
if (failed.length) {
  console.error(`failed: ${failed.join(', ')}`)
  process.exitCode = 1
}
// Every bench has closed its servers and processes; anything one of them still left referenced must not keep the run
// from ending once its figures are written.
process.exit()
