/**
 * Escape attempts against the sandbox as the machine runs it (namespaces, per-run cgroups, own uid).
 * The cases run at the same time, as they would on a busy service.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { SandboxResult } from '../../src/sandbox/index.ts'
import { makeDataDir, makeSandbox, marker, problems, processesWith, readAttempt, startWitness, waitFor } from './support.ts'

const dataDir = makeDataDir()
// Readable by anyone on the host: only being hidden keeps it from the sandbox.
const openDataDir = makeDataDir('world-readable')
const witness = startWitness()
const { sandbox, logger } = makeSandbox({ hiddenPaths: [dataDir.dir, openDataDir.dir] })

const marks = { bomb: marker('bomb'), cancel: marker('cancel') }
const main = (code: string) => ({ language: 'typescript' as const, mode: 'run' as const, files: { 'main.ts': code } })

let runs: Record<'dataDir' | 'openDataDir' | 'network' | 'forkBomb' | 'printForever' | 'infiniteLoop' | 'memoryHog' | 'cancelled', Promise<SandboxResult>>
let cancelledChildrenSeen: Promise<boolean>

beforeAll(() => {
  const cancel = new AbortController()
  runs = {
    dataDir: sandbox.run(main(readAttempt(dataDir.dir))),
    openDataDir: sandbox.run(main(readAttempt(openDataDir.dir))),
    network: sandbox.run(
      main(`import { networkInterfaces } from 'node:os'
console.log('interfaces', JSON.stringify(Object.keys(networkInterfaces())))
try {
  const answer = await fetch(${JSON.stringify(witness.url)})
  console.log('REACHED', answer.status, await answer.text())
} catch (e) {
  console.log('BLOCKED', (e as NodeJS.ErrnoException).code)
  process.exit(3)
}
`),
    ),
    forkBomb: sandbox.run(
      main(`for (;;) {
  try {
    Bun.spawn([process.execPath, import.meta.path, ${JSON.stringify(marks.bomb)}], { stdout: 'ignore', stderr: 'ignore' })
  } catch {
    await Bun.sleep(1)
  }
}
`),
    ),
    printForever: sandbox.run({ ...main("for (;;) console.log('spam '.repeat(20))\n"), maxOutputBytes: 4096 }),
    infiniteLoop: sandbox.run({ ...main('let n = 0\nfor (;;) n++\n'), timeoutMs: 1500 }),
    memoryHog: sandbox.run(
      main(`const kept: Buffer[] = []
for (;;) {
  kept.push(Buffer.alloc(8 * 1024 * 1024, 1))
  await Bun.sleep(1)
}
`),
    ),
    cancelled: sandbox.run({
      ...main(`for (let i = 0; i < 3; i++)
  Bun.spawn([process.execPath, '-e', 'setInterval(() => {}, 1000)', ${JSON.stringify(marks.cancel)}], { stdout: 'ignore', stderr: 'ignore' })
console.log('children started')
setInterval(() => {}, 1000)
`),
      signal: cancel.signal,
    }),
  }
  // Cancel once the run's children are up, as a client going away mid-run would.
  cancelledChildrenSeen = waitFor(async () => (await processesWith(marks.cancel)).length === 3).then((seen) => {
    cancel.abort()
    return seen
  })
})

afterAll(async () => {
  await sandbox.close()
  witness.stop()
  dataDir.remove()
  openDataDir.remove()
})

describe('containment', () => {
  test("reading the service's data directory is denied, while ordinary files stay readable", async () => {
    const result = await runs.dataDir
    expect(result.verdict).toBe('passed')
    expect(result.output).toMatch(/^secret DENIED E[A-Z]+$/m)
    expect(result.output).toMatch(/^listing DENIED E[A-Z]+$/m)
    expect(result.output).not.toContain(dataDir.secret)
    // The control proves the attempt really reached the file system.
    expect(result.output).toContain('control READ "realtime-ai-backend"')
    expect(await Bun.file(`${dataDir.dir}/secrets.json`).text()).toContain(dataDir.secret)
  })

  test('a hidden path stays out of reach even when its permissions would let anyone read it', async () => {
    const result = await runs.openDataDir
    expect(result.verdict).toBe('passed')
    expect(result.output).toMatch(/^secret DENIED E[A-Z]+$/m)
    expect(result.output).not.toContain(openDataDir.secret)
    expect(result.output).toContain('control READ "realtime-ai-backend"')
  })

  test('a connection to 127.0.0.1 fails and the server there sees nothing', async () => {
    const result = await runs.network
    expect(result.verdict).toBe('failed')
    expect(result.exitCode).toBe(3)
    // The namespace's own loopback at most (bubblewrap brings it up, the unshare launcher leaves it down).
    const interfaces = JSON.parse(/^interfaces (.*)$/m.exec(result.output)?.[1] ?? 'null') as string[]
    expect(interfaces.filter((name) => name !== 'lo')).toEqual([])
    expect(result.output).toMatch(/^BLOCKED /m)
    expect(result.output).not.toContain('REACHED')
    expect(witness.hits()).toBe(0)
  })

  test('a fork bomb is stopped with process_limit and none of its processes survive', async () => {
    const result = await runs.forkBomb
    expect(result.verdict).toBe('process_limit')
    expect(result.exitCode).toBeNull()
    expect(await processesWith(marks.bomb)).toEqual([])
  })

  test('printing forever is stopped at the output cap', async () => {
    const result = await runs.printForever
    expect(result.verdict).toBe('output_limit')
    expect(result.truncated).toBe(true)
    expect(Buffer.byteLength(result.output)).toBe(4096)
    expect(result.output).toStartWith('spam spam')
  })

  test('an infinite loop ends with timeout', async () => {
    const result = await runs.infiniteLoop
    expect(result).toMatchObject({ verdict: 'timeout', exitCode: null, output: '' })
  })

  test('allocating memory without bound ends with memory_limit', async () => {
    const result = await runs.memoryHog
    expect(result).toMatchObject({ verdict: 'memory_limit', exitCode: null })
  })

  test('cancelling through the signal kills the whole tree', async () => {
    expect(await cancelledChildrenSeen).toBe(true)
    const result = await runs.cancelled
    expect(result.verdict).toBe('cancelled')
    expect(result.output).toBe('children started\n')
    expect(await processesWith(marks.cancel)).toEqual([])
  })

  test('a request already cancelled starts nothing', async () => {
    expect(await sandbox.run({ ...main('console.log(1)\n'), signal: AbortSignal.abort() })).toMatchObject({ verdict: 'cancelled', output: '' })
  })

  test('the service stays healthy: its server still answers and nothing was left behind', async () => {
    await Promise.all(Object.values(runs))
    const answer = await fetch(witness.url)
    expect(await answer.text()).toBe('still here')
    expect(witness.hits()).toBe(1)
    expect(problems(logger)).toEqual([])
    // This file's own marks only: sandbox suites running beside it start marked processes of their own.
    for (const mark of Object.values(marks)) expect(await processesWith(mark)).toEqual([])
  })
})
