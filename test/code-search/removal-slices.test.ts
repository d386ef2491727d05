/**
 * Removing a large repository, or the many paths an import deleted, gives way to other work between its changes
 * (a few chunks each), and ends where a removal in one change would: the same answers, here and from the snapshot.
 */
import { afterEach, describe, expect, test } from 'bun:test'
import { createHashedEmbeddings } from '../../plugins/code-search/embeddings/hashed.ts'
import { IndexLifecycle } from '../../plugins/code-search/index/lifecycle.ts'
import { createFileSnapshotStore } from '../../plugins/code-search/index/persistence.ts'
import { indexFiles, removeRepository, type IndexingOptions } from '../../plugins/code-search/indexing/indexing.ts'
import { createCodeIndex } from '../../plugins/code-search/service.ts'
import type { CodeIndex, RepositoryFile } from '../../plugins/code-search/types.ts'
import { REMOVAL_BATCH_CHARS, REMOVAL_BATCH_CHUNKS } from '../../plugins/code-search/tuning.ts'
import { memoryLogger } from '../../src/log.ts'
import { openDatabase } from '../../src/storage/database.ts'
import { migrate } from '../../src/storage/migrate.ts'
import { migrations } from '../../src/storage/migrations/index.ts'
import { InProgress } from '../../src/time-slices.ts'
import { tempDir } from '../helpers.ts'
import { corpus } from './fixtures.ts'

// Well over one change's worth of chunks: one small function a file.
const FILES = REMOVAL_BATCH_CHUNKS * 6
const verifierFiles = (): RepositoryFile[] =>
  Array.from({ length: FILES }, (_, n) => ({
    path: `verify/check${n}.ts`,
    content: `export function verifySignature${n}(token: string) {\n  return token.length > ${n}\n}\n`,
  }))

const cleanups: (() => unknown)[] = []
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
})

/**
 * Whether, at some turn of the event loop while `work` ran, the index held `last` but no longer `first`: a removal
 * seen half done. A search of this small index answers within the turn it starts in.
 */
async function seenHalfDone(index: CodeIndex, work: Promise<unknown>, first: string, last: string): Promise<boolean> {
  const holds = async (path: string) =>
    (await index.search({ orgId: 'org' }, { query: 'verify signature token', mode: 'text', pathPrefix: path, limit: 1 })).length > 0
  let done = false
  let halfDone = false
  const probe = async () => {
    if (done) return
    if (!(await holds(first)) && (await holds(last))) halfDone = true
    setImmediate(probe)
  }
  setImmediate(probe)
  await work
  done = true
  return halfDone
}

async function savingIndex() {
  const dir = tempDir('code-removal-')
  cleanups.push(() => dir.remove())
  const db = await openDatabase({ sqliteFile: ':memory:' })
  cleanups.push(() => db.close())
  await migrate(db, migrations)
  const store = createFileSnapshotStore({ db, dir: dir.path })
  cleanups.push(() => store.close?.())
  // Slices of 0 ms: indexing gives way after every change.
  const open = () => {
    const index = createCodeIndex({ embeddings: createHashedEmbeddings(), snapshots: store, snapshotDelayMs: 600_000, indexSliceMs: 0 })
    cleanups.push(() => index.close())
    return index
  }
  return { open }
}

/** A lifecycle of indexes without snapshots or term spaces, closed after the test. */
function plainLifecycle(): IndexLifecycle {
  const made = new IndexLifecycle({
    embeddings: { id: 'test', hashedDimensions: undefined },
    snapshots: undefined,
    logger: memoryLogger(),
    now: Date.now,
    snapshotDelayMs: 600_000,
    refreshIntervalMs: 0,
    compactAfterBytes: Infinity,
  })
  cleanups.push(() => made.close())
  return made
}

/** Indexing on this thread over `lifecycle`, giving way after every change (slices of 0 ms). */
const indexingOptions = (lifecycle: IndexLifecycle, searches = new InProgress()): IndexingOptions => ({
  embeddings: createHashedEmbeddings(),
  lifecycle,
  logger: memoryLogger(),
  embedBatchSize: 64,
  prepareInWorkerFrom: Infinity,
  indexSliceMs: 0,
  chunker: undefined,
  searches,
})

// Full text: the term space is learnt again after each change, in the background.
const answer = (index: CodeIndex, query: string) =>
  index.search({ orgId: 'org' }, { query, mode: 'text', limit: 20 }).then((results) => results.map((r) => `${r.repositoryId}:${r.path}`))

describe('removing many chunks', () => {
  const first = 'verify/check0.ts'
  const last = `verify/check${FILES - 1}.ts`

  test("a repository's removal gives way between its changes and leaves the other repositories as they were", async () => {
    const index = createCodeIndex({ embeddings: createHashedEmbeddings(), indexSliceMs: 0 })
    cleanups.push(() => index.close())
    await index.indexFiles({ orgId: 'org', repositoryId: 'shop', repositoryName: 'acme/shop', files: corpus })
    const shopAnswer = await answer(index, 'verify the token signature')
    await index.indexFiles({ orgId: 'org', repositoryId: 'verifiers', repositoryName: 'acme/verifiers', files: verifierFiles() })
    expect(await answer(index, 'verify signature token')).toContain(`verifiers:${first}`)

    // As one change, no turn saw it half done.
    expect(await seenHalfDone(index, index.removeRepository('org', 'verifiers'), first, last)).toBe(true)
    expect(await answer(index, 'verify the token signature')).toEqual(shopAnswer)
    expect((await answer(index, 'verify signature token')).filter((hit) => hit.startsWith('verifiers:'))).toEqual([])
    expect(await index.indexedCommit!('org', 'verifiers')).toBeUndefined()
  })

  test("an import's deleted paths go between other work too, and its commit is recorded once they are gone", async () => {
    const index = createCodeIndex({ embeddings: createHashedEmbeddings(), indexSliceMs: 0 })
    cleanups.push(() => index.close())
    const files = verifierFiles()
    await index.indexFiles({ orgId: 'org', repositoryId: 'verifiers', repositoryName: 'acme/verifiers', files, commit: 'a'.repeat(40) })
    const kept = [files.at(-1)!.path]
    const deleted = files.slice(0, -1).map((file) => file.path)
    const reimport = index.indexFiles({
      orgId: 'org',
      repositoryId: 'verifiers',
      repositoryName: 'acme/verifiers',
      files: [],
      removedPaths: deleted,
      commit: 'b'.repeat(40),
    })
    expect(await seenHalfDone(index, reimport, first, `verify/check${FILES - 2}.ts`)).toBe(true)
    const left = await index.search({ orgId: 'org' }, { query: 'verify signature token', mode: 'text', limit: 50 })
    expect(left.map((hit) => hit.path)).toEqual(kept)
    expect(await index.indexedCommit!('org', 'verifiers')).toBe('b'.repeat(40))
  })

  test('a file of many chunks goes a batch at a time too', async () => {
    // One function a chunk, each named by letters only, so each name is a term of its own chunk.
    const index = createCodeIndex({ embeddings: createHashedEmbeddings(), indexSliceMs: 0, chunker: { maxLines: 4, minLines: 1, overlapLines: 0 } })
    cleanups.push(() => index.close())
    const name = (n: number) => `check${[...n.toString(26).padStart(3, '0')].map((digit) => String.fromCharCode(97 + Number.parseInt(digit, 26))).join('')}`
    const count = REMOVAL_BATCH_CHUNKS * 5
    const content = Array.from({ length: count }, (_, n) => `export function ${name(n)}(token: string) {\n  return token.length > ${n}\n}\n`).join('')
    await index.indexFiles({ orgId: 'org', repositoryId: 'checks', repositoryName: 'acme/checks', files: [{ path: 'checks.ts', content }] })
    const holds = async (n: number) => (await index.search({ orgId: 'org' }, { query: name(n), mode: 'text', limit: 1 })).length > 0
    expect((await holds(0)) && (await holds(count - 1))).toBe(true)

    const removal = index.removeRepository('org', 'checks')
    let done = false
    let halfDone = false
    const probe = async () => {
      if (done) return
      if ((await holds(0)) && !(await holds(count - 1))) halfDone = true
      setImmediate(probe)
    }
    setImmediate(probe)
    await removal
    done = true
    expect(halfDone).toBe(true)
    expect((await holds(0)) || (await holds(count - 1))).toBe(false)
  })

  test('no change drops more than REMOVAL_BATCH_CHARS of content or REMOVAL_BATCH_CHUNKS chunks, whatever the sizes of its files', async () => {
    const indexes = plainLifecycle()
    const org = await indexes.org('org')
    const held = () =>
      org.index.pathsOf('mixed').reduce(
        (sum, path) => {
          const size = org.index.sizeAt('mixed', path)
          return { chunks: sum.chunks + size.chunks, chars: sum.chars + size.chars }
        },
        { chunks: 0, chars: 0 },
      )
    // What the repository holds each time the removal gives way (with slices of 0 ms, after every change or piece).
    const seen: { chunks: number; chars: number }[] = []
    class Watching extends InProgress {
      override finished(atMostMs: number) {
        seen.push(held())
        return super.finished(atMostMs)
      }
    }
    const options = indexingOptions(indexes, new Watching())
    // Lines of 64 characters: chunks of 60 lines, near the chunker's 4,000 characters.
    const lines = (count: number, word: string) =>
      Array.from({ length: count }, (_, n) => `export const ${word}${String(n).padStart(6, '0')} = '${'x'.repeat(38)}'`).join('\n')
    const files: RepositoryFile[] = [
      { path: 'big.ts', content: lines(6_000, 'big') },
      ...Array.from({ length: 40 }, (_, n) => ({ path: `medium${n}.ts`, content: lines(500, `medium${n}_`) })),
      ...Array.from({ length: 300 }, (_, n) => ({ path: `small${n}.ts`, content: `export const small${n} = ${n}\n` })),
    ]
    await indexFiles(options, { orgId: 'org', repositoryId: 'mixed', repositoryName: 'acme/mixed', files })
    const before = held()
    expect(before.chars).toBeGreaterThan(20 * REMOVAL_BATCH_CHARS)
    seen.length = 0
    await removeRepository(options, 'org', 'mixed')
    expect(held()).toEqual({ chunks: 0, chars: 0 })
    const steps = [before, ...seen]
    let largest = { chunks: 0, chars: 0 }
    for (let n = 1; n < steps.length; n++) {
      const chunks = steps[n - 1]!.chunks - steps[n]!.chunks
      const chars = steps[n - 1]!.chars - steps[n]!.chars
      largest = { chunks: Math.max(largest.chunks, chunks), chars: Math.max(largest.chars, chars) }
    }
    expect(largest.chars).toBeLessThanOrEqual(REMOVAL_BATCH_CHARS)
    expect(largest.chunks).toBeLessThanOrEqual(REMOVAL_BATCH_CHUNKS)
    // Each change near its bound, not one a chunk (the sweep afterwards gives way too, changing nothing held).
    const changes = steps.filter((step, n) => n > 0 && step.chunks < steps[n - 1]!.chunks).length
    expect(changes).toBeLessThan((2 * before.chars) / REMOVAL_BATCH_CHARS)
  })

  test('both end in a snapshot that loads as the index was', async () => {
    const { open } = await savingIndex()
    const index = open()
    await index.indexFiles({ orgId: 'org', repositoryId: 'shop', repositoryName: 'acme/shop', files: corpus })
    const files = verifierFiles()
    await index.indexFiles({ orgId: 'org', repositoryId: 'verifiers', repositoryName: 'acme/verifiers', files, commit: 'a'.repeat(40) })
    await index.indexFiles({ orgId: 'org', repositoryId: 'more', repositoryName: 'acme/more', files, commit: 'c'.repeat(40) })
    await index.removeRepository('org', 'verifiers')
    await index.indexFiles({
      orgId: 'org',
      repositoryId: 'more',
      repositoryName: 'acme/more',
      files: [],
      removedPaths: files.slice(1).map((f) => f.path),
      commit: 'd'.repeat(40),
    })
    const expected = await answer(index, 'verify the token signature')
    expect(expected).toContain(`more:${first}`)
    await index.close()

    const reloaded = open()
    // Read after the load (which indexedCommit waits for): a search during a large snapshot's load is refused.
    expect(await reloaded.indexedCommit!('org', 'verifiers')).toBeUndefined()
    expect(await reloaded.indexedCommit!('org', 'more')).toBe('d'.repeat(40))
    expect(await answer(reloaded, 'verify the token signature')).toEqual(expected)
  })
})

describe("removed chunks' postings", () => {
  const fileOf = (path: string, content: string) => ({
    repositoryId: 'r',
    repositoryName: 'acme/r',
    path,
    language: 'TypeScript',
    chunks: [{ startLine: 1, endLine: 3, content, symbols: [], vector: Float32Array.of(1, 0) }],
  })

  test('are swept once the changes removing chunks pause, whatever applied them', async () => {
    const indexes = plainLifecycle()
    const org = await indexes.org('org')
    for (let n = 0; n < 50; n++) indexes.apply(org, { kind: 'file', file: fileOf(`f${n}.ts`, `verify token ${n}`) })
    indexes.apply(org, { kind: 'removePaths', repositoryId: 'r', paths: ['f1.ts', 'f2.ts'] })
    expect(org.index.sweepPending).toBe(true)
    // Answered as gone meanwhile.
    expect(org.index.searchText('verify token', {}, 100)).toHaveLength(48)
    while (org.index.sweepPending) await Bun.sleep(10)
    expect(org.index.searchText('verify token', {}, 100)).toHaveLength(48)
  })

  test("are swept before a repository's removal, or an import that removed paths, answers", async () => {
    const indexes = plainLifecycle()
    const options = indexingOptions(indexes)
    const org = await indexes.org('org')
    await indexFiles(options, { orgId: 'org', repositoryId: 'shop', repositoryName: 'acme/shop', files: corpus })
    await indexFiles(options, { orgId: 'org', repositoryId: 'verifiers', repositoryName: 'acme/verifiers', files: verifierFiles() })
    await indexFiles(options, {
      orgId: 'org',
      repositoryId: 'verifiers',
      repositoryName: 'acme/verifiers',
      files: [],
      removedPaths: verifierFiles()
        .slice(1)
        .map((file) => file.path),
    })
    expect(org.index.sweepPending).toBe(false)
    expect(org.index.pathsOf('verifiers')).toEqual(['verify/check0.ts'])
    await removeRepository(options, 'org', 'verifiers')
    expect(org.index.sweepPending).toBe(false)
    expect(org.index.pathsOf('verifiers')).toEqual([])
  })
})
