/**
 * The code index's Worker threads (preparing imports, learning term spaces, compacting and decoding snapshots) run
 * below the event loop's priority: on a busy machine a request waits for a core less while they work.
 */
import { describe, expect, test } from 'bun:test'
import { readdirSync, readFileSync } from 'node:fs'
import { getPriority } from 'node:os'
import { BACKGROUND_NICENESS } from '../../src/background-thread.ts'

const linux = process.platform === 'linux'
// A process started below that priority has nothing to lower.
const startsAbove = linux && getPriority(process.pid) < BACKGROUND_NICENESS

/** Thread id -> nice value, for every thread of this process. */
function threadNiceness(): Map<number, number> {
  const found = new Map<number, number>()
  for (const entry of readdirSync('/proc/self/task')) {
    try {
      // Field 19 of stat; fields after the command's closing parenthesis start at field 3.
      const fields = readFileSync(`/proc/self/task/${entry}/stat`, 'utf8').split(') ')[1]!.split(' ')
      found.set(Number(entry), Number(fields[16]))
    } catch {
      // A thread that ended meanwhile.
    }
  }
  return found
}

async function lowThreadsOf(script: URL): Promise<{ lowered: number[]; mainBefore: number; mainAfter: number }> {
  const before = threadNiceness()
  const worker = new Worker(script.href)
  try {
    // Waits for the Worker's module to have run; the test's own timeout catches a Worker that never lowers itself.
    for (;;) {
      const lowered = [...threadNiceness()].filter(([id, nice]) => !before.has(id) && nice === BACKGROUND_NICENESS).map(([id]) => id)
      if (lowered.length > 0) return { lowered, mainBefore: before.get(process.pid)!, mainAfter: threadNiceness().get(process.pid)! }
      await Bun.sleep(10)
    }
  } finally {
    worker.terminate()
  }
}

describe.skipIf(!startsAbove)('background Worker threads', () => {
  for (const [name, script] of [
    ['the preparation Worker', new URL('../../plugins/code-search/indexing/prepare-worker.ts', import.meta.url)],
    ['the term space Worker', new URL('../../plugins/code-search/vectors/term-space-worker.ts', import.meta.url)],
    ['the snapshot Worker', new URL('../../plugins/code-search/index/compaction-worker.ts', import.meta.url)],
  ] as const)
    test(`${name} runs at a lower priority than the event loop, which keeps its own`, async () => {
      const { lowered, mainBefore, mainAfter } = await lowThreadsOf(script)
      expect(lowered.length).toBeGreaterThan(0)
      expect(lowered).not.toContain(process.pid)
      expect(mainAfter).toBe(mainBefore)
    })
})
