import { afterEach, describe, expect, test } from 'bun:test'
import { Glob } from 'bun'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import type { ChunkerOptions } from '../../plugins/code-search/indexing/chunker.ts'
import { createHashedEmbeddings } from '../../plugins/code-search/embeddings/hashed.ts'
import { preparationWorkers } from '../../plugins/code-search/indexing/preparation.ts'
import { termsOf, vocabularySize } from '../../plugins/code-search/terms/index.ts'
import { createFileSnapshotStore } from '../../plugins/code-search/index/persistence.ts'
import { createCodeIndex, type CodeIndexOptions } from '../../plugins/code-search/service.ts'
import type { CodeIndex, RepositoryFile, SearchMode } from '../../plugins/code-search/types.ts'
import { openDatabase } from '../../src/storage/database.ts'
import { migrate } from '../../src/storage/migrate.ts'
import { migrations } from '../../src/storage/migrations/index.ts'
import { memoryLogger } from '../../src/log.ts'
import { tempDir } from '../helpers.ts'

// Real code of several shapes, some 2 MB: more batches than the Worker is sent ahead.
function realFiles(): RepositoryFile[] {
  const roots = [
    { root: join(import.meta.dir, '../../node_modules/axios/lib'), pattern: '**/*.js' },
    { root: join(import.meta.dir, '../../node_modules/@ai-sdk/provider-utils/src'), pattern: '**/*.ts' },
    { root: join(import.meta.dir, '../../plugins'), pattern: '**/*.{ts,md}' },
    { root: join(import.meta.dir, '../../node_modules/openai/src/resources'), pattern: '**/*.ts' },
  ]
  const files: RepositoryFile[] = []
  for (const { root, pattern } of roots)
    for (const path of [...new Glob(pattern).scanSync({ cwd: root })].sort())
      files.push({ path: `${root.split('/').slice(-2).join('-')}/${path}`, content: readFileSync(join(root, path), 'utf8') })
  return files
}

const QUESTIONS = [
  'verify the access token',
  'retry a request after a timeout',
  'parse server-sent events',
  'combine headers',
  'chunk a file into declarations',
]
const MODES: SearchMode[] = ['text', 'vector', 'hybrid']

async function answers(index: CodeIndex, orgId: string) {
  // Compared once both indexes have learnt their term space: searches before and after differ.
  await index.meaningLearnt?.(orgId)
  const found: unknown[] = []
  for (const query of QUESTIONS)
    for (const mode of MODES)
      found.push((await index.search({ orgId }, { query, mode, limit: 20 })).map((r) => `${r.path}:${r.startLine}-${r.endLine} ${r.score.toFixed(6)}`))
  return found
}

// Each indexes a corpus of real code twice (on a Worker and here): seconds alone, over 20 s on a loaded two-core machine.
const SLOW_MS = 120_000
describe('indexing prepared on a Worker', () => {
  const files = realFiles()
  const indexes: CodeIndex[] = []
  const make = (options: Partial<CodeIndexOptions> = {}) => {
    const index = createCodeIndex({ embeddings: createHashedEmbeddings(), ...options })
    indexes.push(index)
    return index
  }
  afterEach(async () => {
    for (const index of indexes.splice(0)) await index.close()
  })

  test('the corpus is large enough for more batches than are sent ahead', () => {
    expect(files.reduce((sum, f) => sum + f.content.length, 0)).toBeGreaterThan(5 * 256 * 1024)
  })

  test(
    'chunks, terms and vectors from the Worker rank exactly as those made on the event loop',
    async () => {
      const here = make({ prepareInWorkerFrom: Infinity })
      const worker = make({ prepareInWorkerFrom: 0 })
      // On the Worker because the call says how large it is.
      const sized = make({ prepareInWorkerFrom: 500_000 })
      const totalBytes = files.reduce((sum, f) => sum + Buffer.byteLength(f.content), 0)
      const input = (index: CodeIndex) => index.indexFiles({ orgId: 'org', repositoryId: 'repo', repositoryName: 'acme/repo', files, totalBytes })
      const counts = [await input(here), await input(worker), await input(sized)]
      expect(counts[0]!.chunks).toBeGreaterThan(500)
      expect(counts[1]).toEqual(counts[0]!)
      expect(counts[2]).toEqual(counts[0]!)
      const expected = await answers(here, 'org')
      expect((expected[0] as string[]).length).toBeGreaterThan(0)
      expect(await answers(worker, 'org')).toEqual(expected)
      expect(await answers(sized, 'org')).toEqual(expected)
    },
    SLOW_MS,
  )

  test(
    'a second import through the same Worker replaces the first, its term numbers still right',
    async () => {
      const here = make({ prepareInWorkerFrom: Infinity })
      const worker = make({ prepareInWorkerFrom: 0 })
      const changed = files.map((f, i) =>
        i % 3 === 0 ? { ...f, content: `${f.content}\nexport function addedHelper${i}(zebraCount: number) { return zebraCount }\n` } : f,
      )
      for (const index of [here, worker]) {
        await index.indexFiles({ orgId: 'org', repositoryId: 'repo', repositoryName: 'acme/repo', files })
        await index.indexFiles({ orgId: 'org', repositoryId: 'repo', repositoryName: 'acme/repo', files: changed })
      }
      expect(await answers(worker, 'org')).toEqual(await answers(here, 'org'))
      const zebra = await worker.search({ orgId: 'org' }, { query: 'zebra count helper', mode: 'text', limit: 50 })
      expect(zebra.length).toBeGreaterThan(10)
    },
    SLOW_MS,
  )

  test(
    'when the Worker cannot prepare a batch, the import goes on here, in order, and says so once',
    async () => {
      const here = make({ prepareInWorkerFrom: Infinity })
      const logger = memoryLogger('warn')
      // A function cannot be sent to a Worker: every batch is refused as it is posted.
      const refused = make({ prepareInWorkerFrom: 0, logger, chunker: { maxLines: 60, refuse: () => 0 } as ChunkerOptions })
      // The same path twice: the later copy must win, as it does when everything runs here.
      const twice = [...files, { ...files[0]!, content: 'export function onlyInTheLaterCopy(quokka: number) { return quokka }\n' }]
      for (const index of [here, refused]) await index.indexFiles({ orgId: 'org', repositoryId: 'repo', repositoryName: 'acme/repo', files: twice })
      expect(await answers(refused, 'org')).toEqual(await answers(here, 'org'))
      expect((await refused.search({ orgId: 'org' }, { query: 'quokka', mode: 'text' }))[0]?.path).toBe(files[0]!.path)
      const warnings = logger.lines.filter((line) => String(line.msg).includes('chunk preparation worker failed'))
      expect(warnings).toHaveLength(1)
    },
    SLOW_MS,
  )

  test('the Worker ends once no import holds it; one import ending leaves it to another still running', async () => {
    // Workers ended by earlier tests close first.
    await preparationWorkers().closed
    const index = make({ prepareInWorkerFrom: 0 })
    const few = (animal: string) => [{ path: `src/${animal}.ts`, content: `export function count${animal}(${animal}s: number) { return ${animal}s }\n` }]
    let secondStarted!: () => void
    const secondReading = new Promise<void>((resolve) => (secondStarted = resolve))
    let firstDone!: () => void
    const firstEnded = new Promise<void>((resolve) => (firstDone = resolve))
    // The first import reads its files once the second has begun (holding the Worker); the second waits for the first to end.
    async function* first(): AsyncGenerator<RepositoryFile> {
      await secondReading
      yield* few('wombat')
    }
    async function* second(): AsyncGenerator<RepositoryFile> {
      secondStarted()
      await firstEnded
      yield* few('quokka')
    }
    const one = index.indexFiles({ orgId: 'org-a', repositoryId: 'repo', repositoryName: 'acme/repo', files: first() })
    const two = index.indexFiles({ orgId: 'org-b', repositoryId: 'repo', repositoryName: 'acme/repo', files: second() })
    expect((await one).chunks).toBe(1)
    expect(preparationWorkers().alive).toBe(1)
    firstDone()
    expect((await two).chunks).toBe(1)
    await preparationWorkers().closed
    expect(preparationWorkers().alive).toBe(0)
    expect((await index.search({ orgId: 'org-b' }, { query: 'quokka', mode: 'text' }))[0]?.path).toBe('src/quokka.ts')
    // The next import starts another.
    await index.indexFiles({ orgId: 'org-a', repositoryId: 'repo', repositoryName: 'acme/repo', files: few('numbat') })
    expect((await index.search({ orgId: 'org-a' }, { query: 'numbat', mode: 'text' }))[0]?.path).toBe('src/numbat.ts')
    await preparationWorkers().closed
    expect(preparationWorkers().alive).toBe(0)
  })

  test(
    'the words of an import, or of a repository removed, do not stay in the vocabulary once no import runs, here or on the Worker',
    async () => {
      const words = new Set(files.slice(0, 40).flatMap((f) => termsOf(f.content)))
      expect(words.size).toBeGreaterThan(1000)
      for (const prepareInWorkerFrom of [Infinity, 0]) {
        const index = make({ prepareInWorkerFrom })
        await index.indexFiles({ orgId: 'org', repositoryId: 'repo', repositoryName: 'acme/repo', files: files.slice(0, 40) })
        expect(vocabularySize()).toBe(0)
        // Searching afterwards knows the words again.
        expect((await index.search({ orgId: 'org' }, { query: 'combine headers', mode: 'text' })).length).toBeGreaterThan(0)
        expect(vocabularySize()).toBeLessThan(20)
        // Nor do those of a repository removed, whose chunks' terms are counted again to find their postings.
        await index.removeRepository('org', 'repo')
        expect(vocabularySize()).toBe(0)
        expect(await index.search({ orgId: 'org' }, { query: 'combine headers', mode: 'text' })).toEqual([])
      }
    },
    SLOW_MS,
  )

  test('a small import whose only batch the Worker cannot prepare is indexed here, every file of it', async () => {
    const refused = make({ prepareInWorkerFrom: 0, logger: memoryLogger('error'), chunker: { maxLines: 60, refuse: () => 0 } as ChunkerOptions })
    const few = ['wombat', 'quokka', 'numbat'].map((animal) => ({
      path: `src/${animal}.ts`,
      content: `export function count${animal}(${animal}s: number) { return ${animal}s }\n`,
    }))
    const counts = await refused.indexFiles({ orgId: 'org', repositoryId: 'repo', repositoryName: 'acme/repo', files: few })
    expect(counts.files).toBe(3)
    for (const animal of ['wombat', 'quokka', 'numbat'])
      expect((await refused.search({ orgId: 'org' }, { query: animal, mode: 'text' }))[0]?.path).toBe(`src/${animal}.ts`)
  })

  test(
    'a snapshot saved from Worker-prepared chunks loads with the same answers',
    async () => {
      const dir = tempDir('code-index-prepared-')
      const db = await openDatabase({ sqliteFile: join(dir.path, 'service.db') })
      try {
        await migrate(db, migrations)
        const store = () => createFileSnapshotStore({ db, dir: join(dir.path, 'indexes') })
        const writer = make({ prepareInWorkerFrom: 0, snapshots: store(), refreshIntervalMs: 0 })
        await writer.indexFiles({ orgId: 'org', repositoryId: 'repo', repositoryName: 'acme/repo', files, commit: 'c1' })
        const expected = await answers(writer, 'org')
        await writer.close()
        const reader = make({ snapshots: store(), refreshIntervalMs: 0 })
        expect(await reader.indexedCommit!('org', 'repo')).toBe('c1')
        expect(await answers(reader, 'org')).toEqual(expected)
      } finally {
        await db.close()
        dir.remove()
      }
    },
    SLOW_MS,
  )
})
