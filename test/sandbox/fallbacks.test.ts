/**
 * The same escapes with cgroups turned off, as on a machine without usable cgroups: processes are
 * bounded by RLIMIT_NPROC on the run's own uid, memory by polling the tree's resident size, and the
 * data directory by its permissions alone (nothing hidden).
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { SandboxResult } from '../../src/sandbox/index.ts'
import { makeDataDir, makeSandbox, marker, problems, processesWith, readAttempt } from './support.ts'

const dataDir = makeDataDir()
const { sandbox, logger } = makeSandbox({ cgroupRoot: false })
const bombMark = marker('nproc-bomb')
const main = (code: string) => ({ language: 'typescript' as const, mode: 'run' as const, files: { 'main.ts': code } })

let runs: Record<'forkBomb' | 'memoryHog' | 'dataDir', Promise<SandboxResult>>

beforeAll(() => {
  runs = {
    forkBomb: sandbox.run(
      main(`for (;;) {
  try {
    Bun.spawn([process.execPath, import.meta.path, ${JSON.stringify(bombMark)}], { stdout: 'ignore', stderr: 'ignore' })
  } catch {
    await Bun.sleep(1)
  }
}
`),
    ),
    memoryHog: sandbox.run(
      main(`const kept: Buffer[] = []
for (;;) {
  kept.push(Buffer.alloc(8 * 1024 * 1024, 1))
  await Bun.sleep(1)
}
`),
    ),
    dataDir: sandbox.run(main(readAttempt(dataDir.dir))),
  }
})

afterAll(async () => {
  await sandbox.close()
  dataDir.remove()
})

describe('without cgroups', () => {
  test('the enforcement report says which fallbacks apply', () => {
    expect(sandbox.available).toBe(true)
    expect(sandbox.enforcement.processes).toContain('RLIMIT_NPROC')
    expect(sandbox.enforcement.memory).toContain('polled')
  })

  test('a fork bomb hits the per-uid process limit, ends, and none of its processes survive', async () => {
    const result = await runs.forkBomb
    // The kernel refuses the forks; whether the poll sees the ceiling before Bun gives up (it aborts
    // when it cannot start a thread) is a race, so the run is either stopped or fails by itself.
    expect(['process_limit', 'failed']).toContain(result.verdict)
    expect(await processesWith(bombMark)).toEqual([])
  })

  test('unbounded allocation is caught by polling and ends with memory_limit', async () => {
    expect(await runs.memoryHog).toMatchObject({ verdict: 'memory_limit', exitCode: null })
  })

  test("the data directory's own permissions deny the run's unprivileged uid", async () => {
    const result = await runs.dataDir
    expect(result.output).toMatch(/^secret DENIED EACCES$/m)
    expect(result.output).toMatch(/^listing DENIED EACCES$/m)
    expect(result.output).not.toContain(dataDir.secret)
    expect(result.output).toContain('control READ "realtime-ai-backend"')
  })

  test('nothing went wrong behind the scenes', async () => {
    await Promise.all(Object.values(runs))
    expect(problems(logger)).toEqual([])
  })
})
