/**
 * What starting one sandboxed command costs: `runCommand({ directory, command: 'true' })` through bubblewrap and
 * through the unshare launcher it falls back to, against spawning `/bin/sh -c true` directly (the baseline), 30
 * rounds each after a warm-up, the three taking turns in every round (in a rotating order) so a busy moment costs
 * each the same. Each is
 * printed as median and p90, and as the difference to the direct spawn; the aim for bubblewrap is at most 20 ms
 * more than the direct spawn (shown, never enforced).
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { memoryLogger } from '../src/log.ts'
import { createSandbox, type Sandbox } from '../src/sandbox/index.ts'
import { printTable, ratioOf, type Row } from './lib/report.ts'

const ROUNDS = 30
const WARM_UP = 5
/** The most a bubblewrap start may add to a direct spawn, in ms. */
const ADDED_TARGET_MS = 20

const percentile = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!
}

async function time(run: () => Promise<unknown>): Promise<number> {
  const started = performance.now()
  await run()
  return performance.now() - started
}

export async function run(): Promise<Row[]> {
  const root = mkdtempSync(join(tmpdir(), 'sandbox-start-bench-'))
  // One directory each: sandboxes sharing one would take it over from each other before every command.
  const directoryOf = (name: string) => {
    const directory = join(root, name)
    mkdirSync(directory, { recursive: true, mode: 0o700 })
    return directory
  }
  const bwrapInstalled = Bun.which('bwrap') !== null
  const sandboxes: Partial<Record<'bubblewrap' | 'unshare', Sandbox>> = {}
  for (const launcher of ['bubblewrap', 'unshare'] as const) {
    const sandbox = createSandbox({ bunPath: process.execPath, logger: memoryLogger(), launcher })
    if (sandbox.available) sandboxes[launcher] = sandbox
    else console.log(`${launcher}: not measured, ${sandbox.enforcement.isolation}`)
  }
  try {
    const contenders: [string, () => Promise<unknown>][] = [
      ['direct', async () => Bun.spawn(['/bin/sh', '-c', 'true'], { stdout: 'ignore', stderr: 'ignore', cwd: directoryOf('direct') }).exited],
      ...Object.entries(sandboxes).map(([name, sandbox]) => {
        const directory = directoryOf(name)
        return [name, () => sandbox.runCommand({ directory, command: 'true' })] as [string, () => Promise<unknown>]
      }),
    ]
    const times = new Map<string, number[]>(contenders.map(([name]) => [name, []]))
    for (let round = 0; round < WARM_UP + ROUNDS; round++) {
      // Each takes its turn after each other one as often: a run leaves work to the kernel (its network namespace
      // and cgroups are torn down afterwards) that the next one may wait on.
      const order = contenders.map((_, i) => contenders[(i + round) % contenders.length]!)
      for (const [name, start] of order) {
        const ms = await time(start)
        if (round >= WARM_UP) times.get(name)!.push(ms)
      }
    }
    const direct = { median: percentile(times.get('direct')!, 50), p90: percentile(times.get('direct')!, 90) }
    for (const [name, values] of times) {
      const median = percentile(values, 50)
      const p90 = percentile(values, 90)
      const added = name === 'direct' ? '' : `, +${(median - direct.median).toFixed(2)} / +${(p90 - direct.p90).toFixed(2)} ms over direct`
      console.log(`${name.padEnd(10)} median ${median.toFixed(2)} ms, p90 ${p90.toFixed(2)} ms${added}`)
    }

    const rows: Row[] = []
    for (const launcher of ['bubblewrap', 'unshare'] as const) {
      const values = times.get(launcher)
      if (!values) {
        rows.push({
          figure: `runCommand(true) start, ${launcher}`,
          unit: 'ms',
          baseline: direct.median,
          value: 0,
          ratio: null,
          warning: launcher === 'bubblewrap' && !bwrapInstalled ? 'bwrap is not installed' : `the ${launcher} launcher does not work here`,
        })
        continue
      }
      const median = percentile(values, 50)
      const p90 = percentile(values, 90)
      const target = launcher === 'bubblewrap' ? { limit: { atMost: ADDED_TARGET_MS } } : {}
      rows.push(
        { figure: `runCommand(true) start, ${launcher}, median`, unit: 'ms', baseline: direct.median, value: median, ratio: ratioOf(median, direct.median) },
        { figure: `runCommand(true) start, ${launcher}, p90`, unit: 'ms', baseline: direct.p90, value: p90, ratio: ratioOf(p90, direct.p90) },
        { figure: `added to a direct spawn, ${launcher}, median`, unit: 'ms', baseline: null, value: median - direct.median, ratio: null, ...target },
        { figure: `added to a direct spawn, ${launcher}, p90`, unit: 'ms', baseline: null, value: p90 - direct.p90, ratio: null, ...target },
      )
    }
    return rows
  } finally {
    await Promise.all(Object.values(sandboxes).map((s) => s.close()))
    rmSync(root, { recursive: true, force: true })
  }
}

if (import.meta.main) printTable(await run())
