/**
 * Runs the whole suite with `bun test` and closes with one line, `N passed, N failed, N skipped`,
 * read from bun's JUnit report. Extra arguments go to `bun test`.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

const dir = mkdtempSync(join(tmpdir(), 'junit-'))
const report = join(dir, 'report.xml')
// Files run side by side in worker processes: most of the suite waits on servers, child processes and timers, not
// on the CPU. Each file keeps to its own databases, ports and directories, and names its Redis keys by random ids,
// so any two may run together.
// The timings file (per-file durations of an earlier run) starts the slowest files first; refresh it with
// `npm test -- --update-timings`.
const WORKERS = 3
// Suites start servers and child processes, and each file shares the CPU with the others running beside it: a slow
// shared machine needs far more than the 5 s default. The limit only catches a hang; no test asserts a duration.
// (bunfig.toml has no setting for it: `bun test` reads the timeout only from this flag.)
// Bun's own limit on a request head is an empty 431; above the service's limits it is raised as `npm start` does,
// so servers the suites start answer oversized heads with a problem body. The workers get the flag through
// BUN_OPTIONS: they do not inherit the command line's.
const proc = Bun.spawn(
  [
    process.execPath,
    'test',
    `--parallel=${WORKERS}`,
    `--timings=${join(import.meta.dir, 'timings.json')}`,
    '--timeout=90000',
    '--reporter=junit',
    `--reporter-outfile=${report}`,
    ...process.argv.slice(2),
  ],
  {
    stdio: ['inherit', 'inherit', 'inherit'],
    env: { ...process.env, BUN_OPTIONS: [process.env.BUN_OPTIONS, '--max-http-header-size=65536'].filter(Boolean).join(' ') },
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
