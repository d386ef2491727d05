import { describe, expect, test } from 'bun:test'
import { readdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { memoryLogger } from '../../src/log.ts'
import { createHashedEmbeddings } from '../../plugins/code-search/embeddings/hashed.ts'
import { createFileSnapshotStore, decodeSnapshot, decodeSnapshotHeader, orgDirName, type SnapshotStore } from '../../plugins/code-search/index/persistence.ts'
import { createCodeIndex, type CodeIndexOptions } from '../../plugins/code-search/service.ts'
import type { SearchMode } from '../../plugins/code-search/types.ts'
import { forEachBackend, tempDir } from '../helpers.ts'
import { suiteBackend } from './suite.ts'
import { corpus, labelledQueries } from './fixtures.ts'

async function waitFor(condition: () => Promise<boolean> | boolean, what: string): Promise<void> {
  for (let i = 0; i < 1000; i++) {
    if (await condition()) return
    await Bun.sleep(10)
  }
  throw new Error(`gave up waiting for ${what}`)
}

const change = [{ path: 'src/http/retry.ts', content: 'export function retryWithWombats(attempts: number) {\n  return attempts * 2\n}\n' }]

forEachBackend(({ name, open }) => {
  describe(`code index snapshot segments (${name})`, () => {
    const suite = suiteBackend(open)
    const { cleanups } = suite

    function setUp() {
      const dir = tempDir('code-segments-')
      cleanups.push(() => dir.remove())
      const store = createFileSnapshotStore({ db: suite.backend.db, dir: dir.path })
      const make = (options: Partial<CodeIndexOptions> = {}) => {
        const index = createCodeIndex({ embeddings: createHashedEmbeddings(), snapshots: store, refreshIntervalMs: 0, snapshotDelayMs: 60_000, ...options })
        cleanups.push(() => index.close())
        return index
      }
      const org = `org-${crypto.randomUUID().slice(0, 8)}`
      const fileOf = async () => {
        const named = (await store.current(org))!
        return new Uint8Array(await Bun.file(join(dir.path, orgDirName(org), named.file)).arrayBuffer())
      }
      return { org, dir: dir.path, store, make, fileOf }
    }

    /** Every labelled query in every mode, as paths and lines: what "the same results" means here. */
    const answers = async (index: ReturnType<typeof createCodeIndex>, orgId: string) => {
      // Compared once both indexes have learnt their term space: searches before and after differ.
      await index.meaningLearnt?.(orgId)
      const all: string[][] = []
      for (const mode of ['hybrid', 'text', 'vector'] as SearchMode[])
        for (const { query } of labelledQueries)
          all.push((await index.search({ orgId }, { query, mode, limit: 5 })).map((r) => `${r.path}:${r.startLine}-${r.endLine} ${r.score}`))
      return all
    }

    test('a second save after a small change appends a segment to the first file rather than writing the whole index again', async () => {
      const { org, make, fileOf } = setUp()
      const index = make()
      await index.indexFiles({ orgId: org, repositoryId: 'shop', repositoryName: 'acme/shop', files: corpus })
      const first = await fileOf()
      await index.indexFiles({ orgId: org, repositoryId: 'shop', repositoryName: 'acme/shop', files: change })
      const second = await fileOf()
      // The first file, byte for byte, then one segment holding the one changed file.
      expect(Buffer.from(second.subarray(0, first.length)).equals(Buffer.from(first))).toBe(true)
      expect(second.length - first.length).toBeLessThan(first.length / 10)
      expect(decodeSnapshot(second).layout).toMatchObject({ sections: 2, baseBytes: 0 })
      expect(decodeSnapshotHeader(second)).toMatchObject({ version: 2, orgId: org })
    })

    test('a process restarted from the segments finds the same results as the one that wrote them', async () => {
      const { org, make } = setUp()
      const writer = make({ embedBatchSize: 3 })
      await writer.indexFiles({ orgId: org, repositoryId: 'shop', repositoryName: 'acme/shop', files: corpus.slice(0, 10) })
      await writer.indexFiles({ orgId: org, repositoryId: 'shop', repositoryName: 'acme/shop', files: corpus.slice(10), removedPaths: [corpus[0]!.path] })
      await writer.indexFiles({ orgId: org, repositoryId: 'shop', repositoryName: 'acme/shop', files: change })
      const expected = await answers(writer, org)
      await writer.close()
      const restarted = make()
      expect(await answers(restarted, org)).toEqual(expected)
      expect(await restarted.indexedCommit!(org, 'shop')).toBeUndefined()
    })

    test('once segments outweigh the limit, a Worker rewrites the snapshot as one base, and a restart finds the same', async () => {
      const { org, store, dir, make, fileOf } = setUp()
      const logger = memoryLogger('debug')
      const index = make({ compactAfterBytes: 1, logger })
      await index.indexFiles({ orgId: org, repositoryId: 'shop', repositoryName: 'acme/shop', files: corpus, commit: 'c0ffee' })
      // The log line comes once the service has taken the compacted file as its own, after the database names it.
      await waitFor(() => logger.lines.some((l) => l.msg === 'code index compacted'), 'the compaction')
      expect(await store.current(org)).toMatchObject({ version: 2 })
      const compacted = decodeSnapshot(await fileOf())
      expect(compacted.layout).toMatchObject({ sections: 1, segmentBytes: 0 })
      expect(compacted.layout.baseBytes).toBeGreaterThan(0)
      expect(readdirSync(join(dir, orgDirName(org)))).toEqual([(await store.current(org))!.file])
      const restarted = make()
      expect(await answers(restarted, org)).toEqual(await answers(index, org))
      expect(await restarted.indexedCommit!(org, 'shop')).toBe('c0ffee')
      // Saves after a compaction build on it.
      await index.indexFiles({ orgId: org, repositoryId: 'shop', repositoryName: 'acme/shop', files: change })
      await index.close()
      expect((await make().search({ orgId: org }, { query: 'wombats', mode: 'text' })).map((r) => r.path)).toEqual(['src/http/retry.ts'])
    })

    test('segments saved while the Worker compacts are kept after its base', async () => {
      const { org, store, make, fileOf } = setUp()
      let release = () => {}
      const gate = new Promise<void>((resolve) => (release = resolve))
      // The Worker's answer is held back until a second save has appended its segment.
      const slow: SnapshotStore = {
        ...store,
        compact: async (...args) => {
          const bytes = await store.compact!(...args)
          await gate
          return bytes
        },
      }
      const index = make({ snapshots: slow, compactAfterBytes: 1 })
      await index.indexFiles({ orgId: org, repositoryId: 'shop', repositoryName: 'acme/shop', files: corpus })
      await index.indexFiles({ orgId: org, repositoryId: 'shop', repositoryName: 'acme/shop', files: change })
      expect(await store.current(org)).toMatchObject({ version: 2 })
      release()
      await waitFor(async () => (await store.current(org))?.version === 3, 'the compacted version')
      const layout = decodeSnapshot(await fileOf()).layout
      expect(layout).toMatchObject({ sections: 2 })
      expect(layout.baseBytes).toBeGreaterThan(0)
      const expected = await answers(index, org)
      await index.close()
      const restarted = make()
      expect(await answers(restarted, org)).toEqual(expected)
      expect((await restarted.search({ orgId: org }, { query: 'wombats', mode: 'text' })).map((r) => r.path)).toEqual(['src/http/retry.ts'])
    })

    test('a search answers while this process saves, from the index holding what is being saved, not after the save', async () => {
      const { org, store, make } = setUp()
      let holding = false
      let entered = false
      let release = () => {}
      const gate = new Promise<void>((resolve) => (release = resolve))
      // The second save does not finish until the search has answered: were the search queued behind it, neither would.
      const slow: SnapshotStore = {
        ...store,
        commit: async (...args) => {
          if (holding) {
            entered = true
            await gate
          }
          return store.commit(...args)
        },
      }
      const index = make({ snapshots: slow })
      await index.indexFiles({ orgId: org, repositoryId: 'shop', repositoryName: 'acme/shop', files: corpus })
      holding = true
      const saving = index.indexFiles({ orgId: org, repositoryId: 'shop', repositoryName: 'acme/shop', files: change })
      await waitFor(() => entered, 'the save to start')
      const found = await index.search({ orgId: org }, { query: 'wombats', mode: 'text' })
      expect(found.map((r) => r.path)).toEqual(['src/http/retry.ts'])
      release()
      await saving
      expect(await store.current(org)).toMatchObject({ version: 2 })
    })

    test('a process sharing the data directory reads only the segments another appended since its own', async () => {
      const { org, make } = setUp()
      const a = make()
      const logger = memoryLogger('info')
      const b = make({ logger })
      await a.indexFiles({ orgId: org, repositoryId: 'shop', repositoryName: 'acme/shop', files: corpus })
      expect((await b.search({ orgId: org }, { query: 'graceful shutdown', mode: 'text' }))[0]?.path).toBe('internal/server/graceful.go')
      await a.indexFiles({ orgId: org, repositoryId: 'shop', repositoryName: 'acme/shop', files: change })
      expect((await b.search({ orgId: org }, { query: 'wombats', mode: 'text' })).map((r) => r.path)).toEqual(['src/http/retry.ts'])
      const reloads = logger.lines.filter((l) => l.msg === 'code index reloaded: another process saved a newer snapshot')
      expect(reloads.at(-1)).toMatchObject({ version: 2, changes: 1 })
      expect(await answers(b, org)).toEqual(await answers(a, org))
    })

    test('a snapshot of the first format is read, and the next save appends to it', async () => {
      const { org, store, dir, make, fileOf } = setUp()
      const writer = make()
      await writer.indexFiles({ orgId: org, repositoryId: 'shop', repositoryName: 'acme/shop', files: corpus })
      await writer.close()
      // Format 1: the same base blocks without a section kind.
      const compactor = make({ compactAfterBytes: 1 })
      await compactor.indexFiles({ orgId: org, repositoryId: 'zoo', repositoryName: 'z/z', files: change })
      await waitFor(async () => decodeSnapshot(await fileOf()).layout.sections === 1, 'a compacted snapshot')
      const expected = await answers(compactor, org)
      await compactor.close()
      const base = await fileOf()
      const old = new Uint8Array(base.length - 4)
      old.set(base.subarray(0, 8), 0)
      old.set(base.subarray(12), 8)
      new DataView(old.buffer).setUint32(4, 1)
      writeFileSync(join(dir, orgDirName(org), (await store.current(org))!.file), old)
      const reader = make()
      expect(await answers(reader, org)).toEqual(expected)
      await reader.indexFiles({
        orgId: org,
        repositoryId: 'farm',
        repositoryName: 'f/f',
        files: [{ path: 'barn.py', content: 'def milk_cows():\n    return 3\n' }],
      })
      await reader.close()
      const latest = await fileOf()
      expect(new DataView(latest.buffer).getUint32(4)).toBe(2)
      expect((await make().search({ orgId: org }, { query: 'milk cows', mode: 'text' })).map((r) => r.path)).toEqual(['barn.py'])
    })
  })
})
