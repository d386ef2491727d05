/**
 * Cold start and idle memory: `bun src/main/index.ts` and the single executable (`npm run build`, built here into a
 * temporary directory) on the embedded defaults (SQLite in a fresh DATA_DIR, no Redis, nothing configured: a first
 * start), against bare Bun.serve (bench/baseline/bare-server.ts), in alternating rounds of the same run.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { cpus, loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import pkg from '../package.json' with { type: 'json' }
import { coldStart, type ColdStart } from './lib/cold-start.ts'
import { QUICK, quickOr } from './lib/mode.ts'
import { printTable, ratioOf, spreadOf, writeResults, type Row } from './lib/report.ts'

const root = join(import.meta.dir, '..')
const ROUNDS = quickOr(7, 3)
// Not shorter in a quick run: the process is still finishing its start-up work a second after it answers.
const SETTLE_MS = 3000
// The issue's goals.
const READY_GOAL_MS = 100
const IDLE_RSS_GOAL_MB = 90

interface Subject {
  name: string
  command: string[]
  cwd: string
  env?: Record<string, string>
}

export async function run(): Promise<Row[]> {
  const buildDir = mkdtempSync(join(tmpdir(), 'bench-startup-build-'))
  try {
    // A quick run starts from source only: building the executable alone takes longer than its rounds.
    const executable = QUICK ? undefined : buildExecutable(buildDir)
    // --no-env-file: a developer's .env must not change what is measured; the executable runs outside the checkout.
    const bare: Subject = { name: 'bare Bun.serve', command: [process.execPath, '--no-env-file', join(root, 'bench', 'baseline', 'bare-server.ts')], cwd: root }
    const subjects: Subject[] = [
      {
        name: 'bun src/main/index.ts',
        command: [process.execPath, '--no-env-file', 'src/main/index.ts'],
        cwd: root,
        env: { LOG_LEVEL: 'info', LOG_FORMAT: 'json' },
      },
      ...(executable ? [{ name: 'executable', command: [executable], cwd: buildDir, env: { LOG_LEVEL: 'info', LOG_FORMAT: 'json' } }] : []),
    ]
    // Discarded: the first start pays for cold file caches.
    for (const subject of [bare, ...subjects]) await coldStart({ ...subject, settleMs: 0 })

    const starts = new Map<string, ColdStart[]>([bare, ...subjects].map((s) => [s.name, []]))
    for (let round = 0; round < ROUNDS; round++) {
      // The baseline between every service start, so drift and a neighbour's work hit both alike.
      for (const subject of subjects) {
        starts.get(bare.name)!.push(await coldStart({ ...bare, settleMs: SETTLE_MS }))
        starts.get(subject.name)!.push(await coldStart({ ...subject, settleMs: SETTLE_MS }))
      }
      console.log(`startup: round ${round + 1}/${ROUNDS} ${[...starts].map(([name, s]) => `${name} ${s.at(-1)!.readyMs.toFixed(0)} ms`).join(', ')}`)
    }

    // A start is short and mostly one thread: a machine busy with other work shows in wall time first, then in CPU time.
    const busy = `load average ${loadavg()[0]!.toFixed(1)} on ${cpus().length} CPUs when the rounds ended`
    const notes = [
      `median of ${ROUNDS} alternating rounds; each start has a fresh DATA_DIR (a first start: migrations run, secrets are generated) and is polled every 2 ms; ${busy}`,
      `idle RSS is VmRSS ${SETTLE_MS / 1000} s after the first /health answer, nothing else requested`,
      "CPU is the time of all the process's threads until the first /health answer (/proc/<pid>/task/*/schedstat)",
    ]
    const base = summary(starts.get(bare.name)!)
    return subjects.flatMap((subject) => {
      const s = summary(starts.get(subject.name)!)
      const over = (pick: (start: ColdStart) => number | undefined) => spreadOf(starts.get(subject.name)!.flatMap((start) => pick(start) ?? []))
      return [
        {
          figure: `${subject.name}: spawn to first /health 200`,
          unit: 'ms',
          baseline: base.readyMs,
          value: s.readyMs,
          ratio: ratioOf(s.readyMs, base.readyMs),
          limit: { atMost: READY_GOAL_MS },
          notes: [notes[0]!],
          spread: over((start) => start.readyMs),
        },
        ...(s.cpuMs !== undefined && base.cpuMs !== undefined
          ? [
              {
                figure: `${subject.name}: CPU until first /health 200`,
                unit: 'ms',
                baseline: base.cpuMs,
                value: s.cpuMs,
                ratio: ratioOf(s.cpuMs, base.cpuMs),
                notes: [notes[2]!],
                spread: over((start) => start.cpuMs),
              },
            ]
          : []),
        ...(s.idleRssMb !== undefined && base.idleRssMb !== undefined
          ? [
              {
                figure: `${subject.name}: idle RSS`,
                unit: 'MB',
                baseline: base.idleRssMb,
                value: s.idleRssMb,
                ratio: ratioOf(s.idleRssMb, base.idleRssMb),
                limit: { atMost: IDLE_RSS_GOAL_MB },
                notes: [notes[1]!],
                spread: over((start) => start.idleRssMb),
              },
            ]
          : []),
      ]
    })
  } finally {
    rmSync(buildDir, { recursive: true, force: true })
  }
}

/** `npm run build`'s own command, writing into `dir` instead of dist/. */
function buildExecutable(dir: string): string {
  const args = pkg.scripts.build.split(/\s+/)
  const outfile = args.indexOf('--outfile')
  if (args[0] !== 'bun' || outfile < 0) throw new Error(`package.json's build script is not "bun build ... --outfile <file>": ${pkg.scripts.build}`)
  const executable = join(dir, 'server')
  args.splice(0, 1, process.execPath)
  args.splice(outfile + 1, 1, executable)
  const built = Bun.spawnSync(args, { cwd: root, stderr: 'pipe', stdout: 'pipe' })
  if (built.exitCode !== 0) throw new Error(`building the executable failed: ${built.stderr.toString()}`)
  return executable
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!
const medianOf = (values: (number | undefined)[]) => (values.every((v) => v !== undefined) ? median(values as number[]) : undefined)

const roundOf = (value: number | undefined) => (value === undefined ? undefined : Math.round(value))

function summary(starts: ColdStart[]) {
  return {
    readyMs: Math.round(median(starts.map((s) => s.readyMs))),
    cpuMs: roundOf(medianOf(starts.map((s) => s.cpuMs))),
    idleRssMb: medianOf(starts.map((s) => s.idleRssMb)),
  }
}

if (import.meta.main) {
  const rows = await run()
  printTable(rows)
  console.log(`results: ${writeResults('startup', rows)}`)
}
