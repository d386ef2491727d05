/** Runs every bench/*.bench.ts in turn (never in parallel: they would measure each other), one table, one file. */
import { basename, join } from 'node:path'
import { printTable, writeResults, type Row } from './lib/report.ts'

const benchDir = import.meta.dir
const files = [...new Bun.Glob('*.bench.ts').scanSync({ cwd: benchDir })].sort()

const rows: Row[] = []
const failed: string[] = []
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
console.log(`results: ${writeResults('bench', rows)}`)
if (failed.length) {
  console.error(`failed: ${failed.join(', ')}`)
  process.exitCode = 1
}
