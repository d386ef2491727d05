/**
 * Loading an organisation's index from its snapshot, as a process taking over an index does: searches are told
 * the index is still loading rather than kept waiting for the whole load of a large snapshot (a small one is
 * waited for), a snapshot missing or cut short
 * leaves the organisation searchable again once it can be read, and a snapshot decoded on the Worker gives
 * the same index as one decoded on the event loop.
 */
import { describe, expect, test } from 'bun:test'
import { readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { AppError } from '../../src/errors.ts'
import { memoryLogger } from '../../src/log.ts'
import { createHashedEmbeddings } from '../../plugins/code-search/embeddings/hashed.ts'
import { createFileSnapshotStore, orgDirName, type DecodedSnapshot, type SnapshotStore } from '../../plugins/code-search/index/persistence.ts'
import { createCodeIndex } from '../../plugins/code-search/service.ts'
import { forEachBackend, tempDir } from '../helpers.ts'
import { corpus } from './fixtures.ts'
import { suiteBackend } from './suite.ts'

const QUESTION = { query: 'verify the token signature', mode: 'hybrid' } as const
const paths = (results: { path: string }[]) => results.map((r) => r.path)

/** Once the load under way has ended: with no wait at all, a search before then is refused as still loading. */
async function loaded(index: { readiness?(orgId: string): Promise<string> }, orgId: string): Promise<string> {
  for (;;) {
    const readiness = await index.readiness!(orgId)
    if (readiness !== 'loading') return readiness
    await Bun.sleep(5)
  }
}

forEachBackend(({ name, open }) => {
  describe(`loading a code index from its snapshot (${name})`, () => {
    const suite = suiteBackend(open)
    const { cleanups } = suite

    /** A data directory holding one organisation's saved index, and the answer the process that saved it gave. */
    async function saved(options: { decodeOnWorkerFrom?: number } = {}) {
      const dir = tempDir('code-loading-')
      cleanups.push(() => dir.remove())
      const orgId = `org-${crypto.randomUUID().slice(0, 8)}`
      const store = ({ decodeOnWorkerFrom, ...more }: Partial<SnapshotStore> & { decodeOnWorkerFrom?: number } = {}) => {
        const files = createFileSnapshotStore({ db: suite.backend.db, dir: dir.path, decodeOnWorkerFrom: decodeOnWorkerFrom ?? options.decodeOnWorkerFrom })
        cleanups.push(() => files.close?.())
        return { ...files, ...more } as SnapshotStore
      }
      // Waiting for a load as long as it takes unless told otherwise: a failed load is then seen as soon as it fails.
      const open = (snapshots: SnapshotStore, loadWaitMs = 600_000) => {
        const logger = memoryLogger('info')
        const index = createCodeIndex({ embeddings: createHashedEmbeddings(), snapshots, logger, snapshotDelayMs: 600_000, loadWaitMs })
        cleanups.push(() => index.close())
        return { index, logger }
      }
      const writer = open(store()).index
      await writer.indexFiles({ orgId, repositoryId: 'shop', repositoryName: 'acme/shop', files: corpus })
      const expected = await writer.search({ orgId }, QUESTION)
      await writer.close()
      const folder = join(dir.path, orgDirName(orgId))
      const file = join(folder, readdirSync(folder).find((entry) => entry.endsWith('.snapshot'))!)
      return { orgId, store, open, expected, file }
    }

    /**
     * A snapshot store whose decode is held until `release`: `decoding` settles once it started. `aside` marks the
     * load as a Worker's (a snapshot of 512 KiB or more); `events` records when it starts and ends.
     */
    function heldDecode(store: (more?: Partial<SnapshotStore>) => SnapshotStore, options: { aside: boolean; events?: string[] }) {
      let release!: () => void
      const held = new Promise<void>((resolve) => (release = resolve))
      let started!: () => void
      const decoding = new Promise<void>((resolve) => (started = resolve))
      const files = store()
      const gated = store({
        async decode(org, snapshot, aside): Promise<DecodedSnapshot> {
          if (options.aside) aside?.()
          options.events?.push('decoding')
          started()
          await held
          options.events?.push('decoded')
          return files.decode!(org, snapshot)
        },
      })
      return { gated, release, decoding }
    }

    test('a search arriving while the snapshot loads is told so while the load is still under way, and the load goes on', async () => {
      const { orgId, store, open, expected } = await saved()
      const events: string[] = []
      // As a snapshot large enough for the Worker.
      const { gated, release, decoding } = heldDecode(store, { aside: true, events })
      // Without waiting at all: the answer cannot come from the load, which is held until the answers are in.
      const { index } = open(gated, 0)
      try {
        expect(await index.readiness!(orgId)).toBe('loading')
        await decoding
        // Searches during the same load are answered, and start no second one.
        expect(await index.readiness!(orgId)).toBe('loading')
        events.push('answered: loading')
        expect(await index.readiness!(orgId)).toBe('loading')
        expect(events).toEqual(['decoding', 'answered: loading'])
      } finally {
        release()
      }
      expect(await loaded(index, orgId)).toBe('ready')
      expect(paths(await index.search({ orgId }, QUESTION))).toEqual(paths(expected))
      expect(events).toEqual(['decoding', 'answered: loading', 'decoded'])
      expect(await index.readiness!(orgId)).toBe('ready')
    })

    test('a search made in the process (chat, the agents, MCP, a scoped search) during that load fails at once as retryable, and answers once the load is done', async () => {
      const { orgId, store, open, expected } = await saved()
      const { gated, release, decoding } = heldDecode(store, { aside: true })
      const { index } = open(gated, 0)
      try {
        const searching = index.search({ orgId }, QUESTION).then(
          () => 'answered',
          (error: unknown) => error,
        )
        await decoding
        // The load is held until after this: a search waiting for it would never get here.
        const refused = await searching
        expect(refused).toBeInstanceOf(AppError)
        expect(refused).toMatchObject({ code: 'unavailable', status: 503, options: { headers: { 'retry-after': '1' } } })
        // A query refused on its own is refused as such, loading or not.
        await expect(index.search({ orgId }, { query: '   ' })).rejects.toMatchObject({ code: 'validation_failed' })
      } finally {
        release()
      }
      expect(await loaded(index, orgId)).toBe('ready')
      expect(paths(await index.search({ orgId }, QUESTION))).toEqual(paths(expected))
    })

    test('a search waits for a snapshot small enough to be decoded on the event loop, however long that takes', async () => {
      const { orgId, store, open, expected } = await saved()
      const { gated, release, decoding } = heldDecode(store, { aside: false })
      const { index } = open(gated, 0)
      const readiness = index.readiness!(orgId)
      await decoding
      // Well past the wait of 0 ms before the load may end.
      await Bun.sleep(50)
      release()
      expect(await readiness).toBe('ready')
      expect(paths(await index.search({ orgId }, QUESTION))).toEqual(paths(expected))
    })

    test('a missing snapshot file makes the index unavailable, not an error, and it is searchable once the file is back', async () => {
      const { orgId, store, open, expected, file } = await saved()
      const bytes = readFileSync(file)
      rmSync(file)
      const { index, logger } = open(store())
      expect(await index.readiness!(orgId)).toBe('unavailable')
      // Not remembered: the next search tries again.
      expect(await index.readiness!(orgId)).toBe('unavailable')
      writeFileSync(file, bytes)
      expect(await index.readiness!(orgId)).toBe('ready')
      expect(paths(await index.search({ orgId }, QUESTION))).toEqual(paths(expected))
      expect(logger.lines.filter((line) => line.msg === 'code index loaded' && line.orgId === orgId)).toHaveLength(1)
    })

    test('a snapshot file cut short makes the index unavailable, on the Worker as on the event loop, and it recovers once the file is whole', async () => {
      for (const decodeOnWorkerFrom of [0, Number.POSITIVE_INFINITY]) {
        const { orgId, store, open, expected, file } = await saved({ decodeOnWorkerFrom })
        const bytes = readFileSync(file)
        writeFileSync(file, bytes.subarray(0, Math.floor(bytes.length / 2)))
        const { index } = open(store())
        expect(await index.readiness!(orgId)).toBe('unavailable')
        await expect(index.search({ orgId }, QUESTION)).rejects.toThrow('snapshot is truncated')
        writeFileSync(file, bytes)
        expect(await index.readiness!(orgId)).toBe('ready')
        expect(paths(await index.search({ orgId }, QUESTION))).toEqual(paths(expected))
      }
    })

    test('a snapshot decoded on the Worker answers as one decoded on the event loop, with its segments', async () => {
      const { orgId, store, open, expected } = await saved({ decodeOnWorkerFrom: 0 })
      // A second save appends a segment: the Worker rebuilds base and segment before handing the index over.
      const writer = open(store()).index
      // More chunks, and more terms of one field, than one message of the hand-over carries.
      const generated = Array.from({ length: 1200 }, (_, i) => ({
        path: `gen/helper-${i}.ts`,
        content: `export function generatedHelper${i}() {\n  return 'alpha${i} beta${i} gamma${i} delta${i}'\n}\n`,
      }))
      await writer.indexFiles({ orgId, repositoryId: 'generated', repositoryName: 'acme/generated', files: generated })
      await writer.indexFiles({
        orgId,
        repositoryId: 'tools',
        repositoryName: 'acme/tools',
        files: [{ path: 'tools/verify.py', content: 'def verify_token_signature(token):\n    """Verify the token signature."""\n    return bool(token)\n' }],
      })
      // Compared once each side has learnt its term space from the same chunks.
      await writer.meaningLearnt!(orgId)
      const withSegment = paths(await writer.search({ orgId }, QUESTION))
      await writer.close()
      expect(withSegment).toContain('tools/verify.py')
      expect(withSegment).not.toEqual(paths(expected))
      const late = { query: 'generatedHelper1187', mode: 'text' } as const
      const rare = { query: 'delta1190 gamma1190', mode: 'text', limit: 50 } as const
      const rareFound = paths(await writer.search({ orgId }, rare))
      expect(rareFound[0]).toBe('gen/helper-1190.ts')
      expect(paths(await writer.search({ orgId }, late))[0]).toBe('gen/helper-1187.ts')
      for (const decodeOnWorkerFrom of [0, Number.POSITIVE_INFINITY]) {
        const { index } = open(store({ decodeOnWorkerFrom }))
        await index.meaningLearnt!(orgId)
        expect(paths(await index.search({ orgId }, QUESTION))).toEqual(withSegment)
        expect(paths(await index.search({ orgId }, late))[0]).toBe('gen/helper-1187.ts')
        expect(paths(await index.search({ orgId }, { query: 'generatedHelper3', mode: 'text' }))[0]).toBe('gen/helper-3.ts')
        expect(paths(await index.search({ orgId }, rare))).toEqual(rareFound)
      }
    })
  })
})
