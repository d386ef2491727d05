import { describe, expect, test } from 'bun:test'
import { existsSync, readdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { memoryLogger } from '../../src/log.ts'
import { createHashedEmbeddings } from '../../plugins/code-search/embeddings/hashed.ts'
import type { EmbeddingProvider } from '../../plugins/code-search/embeddings/provider.ts'
import { createFileSnapshotStore, decodeSnapshotHeader, orgDirName, type SnapshotStore } from '../../plugins/code-search/index/persistence.ts'
import { createCodeIndex, type CodeIndexOptions } from '../../plugins/code-search/service.ts'
import type { RepositoryFile } from '../../plugins/code-search/types.ts'
import { forEachBackend, tempDir } from '../helpers.ts'
import { corpus } from './fixtures.ts'
import { suiteBackend } from './suite.ts'

/** Hashed embeddings that count the texts they embed, to tell a re-index from a load. */
function countingEmbeddings(): EmbeddingProvider & { texts: number } {
  const inner = createHashedEmbeddings()
  const spy = {
    id: inner.id,
    texts: 0,
    embed(texts: readonly string[]) {
      spy.texts += texts.length
      return inner.embed(texts)
    },
  }
  return spy
}

async function waitFor(condition: () => Promise<boolean> | boolean, what: string): Promise<void> {
  for (let i = 0; i < 500; i++) {
    if (await condition()) return
    await Bun.sleep(10)
  }
  throw new Error(`gave up waiting for ${what}`)
}

const zoo: RepositoryFile[] = [{ path: 'zoo/keeper.ts', content: 'export function feedPenguins(fish: number) {\n  return fish * 2\n}\n' }]
const farm: RepositoryFile[] = [{ path: 'farm/barn.py', content: 'def milk_cows(count):\n    return count * 3\n' }]

forEachBackend(({ name, open }) => {
  describe(`code index persistence (${name})`, () => {
    // One database per backend; each test has its own organisation and data directory.
    const suite = suiteBackend(open)
    const { cleanups } = suite

    async function setUp() {
      const dir = tempDir('code-index-')
      cleanups.push(() => dir.remove())
      const store = createFileSnapshotStore({ db: suite.backend.db, dir: dir.path })
      const make = (options: Partial<CodeIndexOptions> = {}) => {
        const index = createCodeIndex({ embeddings: createHashedEmbeddings(), snapshots: store, refreshIntervalMs: 0, ...options })
        cleanups.push(() => index.close())
        return index
      }
      return { org: `org-${crypto.randomUUID().slice(0, 8)}`, dir: dir.path, store, make }
    }

    const paths = async (index: ReturnType<typeof createCodeIndex>, orgId: string, query: string) =>
      (await index.search({ orgId }, { query, mode: 'text', limit: 50 })).map((r) => r.path)

    test('a restarted index answers from its snapshot without embedding a single chunk again', async () => {
      const { org, store, dir, make } = await setUp()
      const first = make({ snapshotDelayMs: 60_000 })
      const { chunks } = await first.indexFiles({ orgId: org, repositoryId: 'shop', repositoryName: 'acme/shop', files: corpus })
      await first.close()
      expect(await store.current(org)).toMatchObject({ version: 1 })
      const files = readdirSync(join(dir, orgDirName(org)))
      expect(files).toHaveLength(1)
      expect(files[0]).toMatch(/^1-[0-9a-f-]+\.snapshot$/)
      expect(decodeSnapshotHeader(new Uint8Array(await Bun.file(join(dir, org, files[0]!)).arrayBuffer()))).toMatchObject({
        orgId: org,
        version: 1,
        chunks,
        embeddings: 'hashed-subwords-v1/256',
      })

      const embeddings = countingEmbeddings()
      const restarted = make({ embeddings })
      for (const mode of ['hybrid', 'text', 'vector'] as const) {
        const [top] = await restarted.search({ orgId: org }, { query: 'graceful shutdown SIGTERM', mode })
        expect(top).toMatchObject({ path: 'internal/server/graceful.go', repositoryName: 'acme/shop' })
      }
      // Only the query was embedded (once: query vectors are cached).
      expect(embeddings.texts).toBe(1)
    })

    test('changes made after a restart build on the snapshot: replaced and removed files stay so', async () => {
      const { org, make } = await setUp()
      const first = make({ snapshotDelayMs: 60_000 })
      await first.indexFiles({ orgId: org, repositoryId: 'shop', repositoryName: 'acme/shop', files: corpus })
      await first.close()
      const second = make({ snapshotDelayMs: 60_000 })
      await second.indexFiles({
        orgId: org,
        repositoryId: 'shop',
        repositoryName: 'acme/shop',
        files: [{ path: 'src/http/retry.ts', content: 'export const retries = "wombat"\n' }],
        removedPaths: ['app/utils/slugify.py'],
      })
      await second.close()
      const third = make()
      expect(await paths(third, org, 'wombat')).toEqual(['src/http/retry.ts'])
      expect(await paths(third, org, 'backoff')).toEqual([])
      expect(await paths(third, org, 'slugify')).toEqual([])
      expect(await paths(third, org, 'invoice')).toContain('app/billing/invoice.py')
    })

    test('an import is saved once, when it ends, however many batches it has; other changes wait for the delay', async () => {
      const { org, store, make } = await setUp()
      const index = make({ snapshotDelayMs: 60_000, embedBatchSize: 2 })
      await index.indexFiles({ orgId: org, repositoryId: 'shop', repositoryName: 'acme/shop', files: corpus })
      expect(await store.current(org)).toMatchObject({ version: 1 })
      await index.removeRepository(org, 'shop')
      await index.indexFiles({ orgId: org, repositoryId: 'zoo', repositoryName: 'z/z', files: zoo })
      // The removal went out with the next import's snapshot.
      expect(await store.current(org)).toMatchObject({ version: 2 })
      await index.removeRepository(org, 'zoo')
      expect(await store.current(org)).toMatchObject({ version: 2 })
      await index.close()
      expect(await store.current(org)).toMatchObject({ version: 3 })
      expect(await paths(make(), org, 'penguins invoice')).toEqual([])
    })

    test('a change is saved on its own once the delay passes, leaving no temporary file and no older version', async () => {
      const { org, store, dir, make } = await setUp()
      const index = make({ snapshotDelayMs: 0 })
      const odd = `${org}/with:odd chars`
      await index.indexFiles({ orgId: odd, repositoryId: 'zoo', repositoryName: 'z/z', files: zoo })
      await index.indexFiles({ orgId: odd, repositoryId: 'farm', repositoryName: 'f/f', files: farm })
      expect(await store.current(odd)).toMatchObject({ version: 2 })
      await index.removeRepository(odd, 'zoo')
      await waitFor(async () => (await store.current(odd))?.version === 3, 'the delayed snapshot')
      const folder = join(dir, orgDirName(odd))
      expect(orgDirName(odd)).toMatch(/^h-[0-9a-f]{32}$/)
      // The older versions are pruned once the newer one is claimed (the claim is visible first).
      const current = (await store.current(odd))!.file
      await waitFor(() => readdirSync(folder).length === 1, 'the older versions pruned')
      expect(readdirSync(folder)).toEqual([current])
      expect(await paths(make(), odd, 'penguins cows')).toEqual(['farm/barn.py'])
    })

    test("two processes on one database and data directory: each notices the other's newer snapshot", async () => {
      const { org, store, make } = await setUp()
      const a = make()
      const b = make()
      // B loads the organisation (empty) before A changes it.
      expect(await paths(b, org, 'penguins')).toEqual([])
      await a.indexFiles({ orgId: org, repositoryId: 'zoo', repositoryName: 'z/z', files: zoo })
      expect(await paths(b, org, 'penguins')).toEqual(['zoo/keeper.ts'])

      await b.indexFiles({ orgId: org, repositoryId: 'farm', repositoryName: 'f/f', files: farm })
      expect(await store.current(org)).toMatchObject({ version: 2 })
      expect(await paths(a, org, 'cows')).toEqual(['farm/barn.py'])
      expect(await paths(a, org, 'penguins')).toEqual(['zoo/keeper.ts'])
    })

    test("two processes saving on the same version: the loser builds on the winner's snapshot, so both changes survive", async () => {
      const { org, store, make } = await setUp()
      const a = make()
      // B reads the version table as it was before A saved, until it saves itself: B is a moment behind.
      let saving = false
      const behind: SnapshotStore = {
        ...store,
        current: async (orgId) => (saving ? store.current(orgId) : undefined),
        commit: (...args) => {
          saving = true
          return store.commit(...args)
        },
      }
      const logger = memoryLogger('info')
      const b = make({ snapshots: behind, logger })
      await a.indexFiles({ orgId: org, repositoryId: 'zoo', repositoryName: 'z/z', files: zoo })
      expect(await store.current(org)).toMatchObject({ version: 1 })
      await b.indexFiles({ orgId: org, repositoryId: 'farm', repositoryName: 'f/f', files: farm })
      expect(await store.current(org)).toMatchObject({ version: 2 })
      expect(logger.lines.map((l) => l.msg)).toContain('code index reloaded: another process saved a newer snapshot')
      for (const index of [make(), b]) {
        expect(await paths(index, org, 'penguins')).toEqual(['zoo/keeper.ts'])
        expect(await paths(index, org, 'cows')).toEqual(['farm/barn.py'])
      }
    })

    test('a save that fails fails the import, keeps its changes, and is done again later', async () => {
      const { org, store, make } = await setUp()
      let failures = 1
      const flaky: SnapshotStore = { ...store, commit: (...args) => (failures-- > 0 ? Promise.reject(new Error('disk full')) : store.commit(...args)) }
      const logger = memoryLogger('info')
      const index = make({ snapshots: flaky, logger, snapshotDelayMs: 60_000 })
      await expect(index.indexFiles({ orgId: org, repositoryId: 'zoo', repositoryName: 'z/z', files: zoo })).rejects.toThrow('disk full')
      expect(logger.lines.find((l) => l.msg === 'code index snapshot failed; will retry')).toBeDefined()
      expect(await paths(index, org, 'penguins')).toEqual(['zoo/keeper.ts'])
      await index.close()
      expect(await store.current(org)).toMatchObject({ version: 1 })
      expect(await paths(make(), org, 'penguins')).toEqual(['zoo/keeper.ts'])
    })

    test('a snapshot made with other embeddings is not used: the index starts empty and says why', async () => {
      const { org, store, make } = await setUp()
      const old = make({ embeddings: createHashedEmbeddings({ dimensions: 64 }), snapshotDelayMs: 60_000 })
      await old.indexFiles({ orgId: org, repositoryId: 'zoo', repositoryName: 'z/z', files: zoo })
      await old.close()
      const logger = memoryLogger('info')
      const current = make({ logger })
      expect(await paths(current, org, 'penguins')).toEqual([])
      expect(logger.lines.find((l) => String(l.msg).includes('other embeddings'))).toMatchObject({
        snapshot: 'hashed-subwords-v1/64',
        configured: 'hashed-subwords-v1/256',
      })
      // Saving goes on from the version the database names.
      await current.indexFiles({ orgId: org, repositoryId: 'farm', repositoryName: 'f/f', files: farm })
      await current.close()
      expect(await store.current(org)).toMatchObject({ version: 2 })
    })

    test('a reader whose snapshot was pruned under it reads the newer one', async () => {
      const { org, store, dir, make } = await setUp()
      const writer = make({ snapshotDelayMs: 60_000 })
      await writer.indexFiles({ orgId: org, repositoryId: 'zoo', repositoryName: 'z/z', files: zoo })
      await writer.close()
      const stale = (await store.current(org))!
      const second = make({ snapshotDelayMs: 60_000 })
      await second.indexFiles({ orgId: org, repositoryId: 'farm', repositoryName: 'f/f', files: farm })
      await second.close()
      expect(existsSync(join(dir, org, stale.file))).toBe(false)
      // A store that answers the old version first, as a process that read the table just before the save would.
      let first = true
      const racing: SnapshotStore = {
        ...store,
        current: async (orgId) => {
          if (!first) return store.current(orgId)
          first = false
          return stale
        },
      }
      const reader = make({ snapshots: racing })
      expect(await paths(reader, org, 'cows')).toEqual(['farm/barn.py'])
    })

    test('a snapshot that is not one is refused rather than read as an empty index', async () => {
      const { org, store, dir, make } = await setUp()
      const writer = make({ snapshotDelayMs: 60_000 })
      await writer.indexFiles({ orgId: org, repositoryId: 'zoo', repositoryName: 'z/z', files: zoo })
      await writer.close()
      writeFileSync(join(dir, org, (await store.current(org))!.file), 'garbage')
      await expect(make().search({ orgId: org }, { query: 'penguins' })).rejects.toThrow('not a code index snapshot')
    })

    test('a save of thousands of pieces, as a large import makes, is written whole and in order', async () => {
      const { org, store } = await setUp()
      const pieces = Array.from({ length: 2500 }, (_, i) => new Uint8Array(1 + ((i * 7919) % 3000)).fill(i % 251))
      const saved = (await store.commit(org, 0, pieces))!
      const expected = Buffer.concat(pieces)
      expect(Buffer.from(await store.read(org, saved)).equals(expected)).toBe(true)
      const appended = (await store.commit(org, 1, pieces.slice(0, 1100), saved.file))!
      expect(Buffer.from(await store.read(org, appended)).equals(Buffer.concat([expected, ...pieces.slice(0, 1100)]))).toBe(true)
    })
  })
})
