/**
 * Runs the whole suite with `bun test` and closes with one line, `N passed, N failed, N skipped`,
 * read from bun's JUnit report. Extra arguments go to `bun test`.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

const dir = mkdtempSync(join(tmpdir(), 'junit-'))
const report = join(dir, 'report.xml')
// Suites start servers and child processes; a slow shared machine needs more than the 5 s default.
// (bunfig.toml has no setting for it: `bun test` reads the timeout only from this flag.)
// Bun's own limit on a request head is an empty 431; above the service's limits it is raised as `npm start` does,
// so servers the suites start answer oversized heads with a problem body.
const proc = Bun.spawn(
  [process.execPath, '--max-http-header-size=65536', 'test', '--timeout=30000', '--reporter=junit', `--reporter-outfile=${report}`, ...process.argv.slice(2)],
  {
    stdio: ['inherit', 'inherit', 'inherit'],
  },
)
const exitCode = await proc.exited

let passed = 0
let failed = 0
let skipped = 0
try {
  const xml = readFileSync(report, 'utf8')
  const totals = /<testsuites\b[^>]*\btests="(\d+)"[^>]*\bfailures="(\d+)"[^>]*\bskipped="(\d+)"/.exec(xml)
  if (totals) {
    const [tests, failures, skips] = totals.slice(1).map(Number) as [number, number, number]
    failed = failures
    skipped = skips
    passed = tests - failures - skips
  }
} catch {
  // No report means bun test itself failed before running anything.
}
rmSync(dir, { recursive: true, force: true })
if (exitCode !== 0 && failed === 0) failed = 1
console.log(`${passed} passed, ${failed} failed, ${skipped} skipped`)
process.exit(exitCode === 0 && failed === 0 ? 0 : 1)
