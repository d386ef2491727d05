/**
 * The memory budget: beyond it the least recently used whole indexes are dropped, their unsaved changes saved
 * first, and loaded again on next use with the same answers.
 */
import { describe, expect, test } from 'bun:test'
import { memoryLogger } from '../../src/log.ts'
import { createHashedEmbeddings } from '../../plugins/code-search/embeddings/hashed.ts'
import { createFileSnapshotStore } from '../../plugins/code-search/index/persistence.ts'
import { createCodeIndex, type CodeIndexOptions } from '../../plugins/code-search/service.ts'
import { forEachBackend, tempDir } from '../helpers.ts'
import { corpus } from './fixtures.ts'
import { suiteBackend } from './suite.ts'

const wombats = [{ path: 'src/http/retry.ts', content: 'export function retryWithWombats(attempts: number) {\n  return attempts * 2\n}\n' }]
const invoices = [{ path: 'billing/invoice.ts', content: 'export function renderInvoicePdf(lines: string[]) {\n  return lines.join("\\n")\n}\n' }]

async function until(condition: () => boolean, what: string) {
  for (let i = 0; i < 1000 && !condition(); i++) await Bun.sleep(10)
  if (!condition()) throw new Error(`gave up waiting for ${what}`)
}

forEachBackend(({ name, open }) => {
  describe(`code index memory budget (${name})`, () => {
    const suite = suiteBackend(open)
    const { cleanups } = suite

    function setUp(options: Partial<CodeIndexOptions> = {}) {
      const dir = tempDir('code-eviction-')
      cleanups.push(() => dir.remove())
      const store = createFileSnapshotStore({ db: suite.backend.db, dir: dir.path })
      const make = (more: Partial<CodeIndexOptions> = {}) => {
        const logger = memoryLogger('info')
        // Changes are saved only when an import ends or an index is dropped, within the test.
        const index = createCodeIndex({ embeddings: createHashedEmbeddings(), snapshots: store, logger, snapshotDelayMs: 600_000, ...options, ...more })
        cleanups.push(() => index.close())
        return { index, logger }
      }
      const suffix = crypto.randomUUID().slice(0, 8)
      return { make, first: `org-a-${suffix}`, second: `org-b-${suffix}` }
    }
    const paths = (results: { path: string }[]) => results.map((r) => r.path)
    const dropped = (lines: Record<string, unknown>[], orgId: string) =>
      lines.some((line) => line.msg === 'code index dropped to stay within the memory budget' && line.orgId === orgId)

    test('using a second organisation drops the first, which answers the same when searched again', async () => {
      const { make, first, second } = setUp()
      const { index, logger } = make({ memoryBudgetBytes: 1 })
      await index.indexFiles({ orgId: first, repositoryId: 'shop', repositoryName: 'acme/shop', files: [...corpus, ...wombats] })
      const before = paths(await index.search({ orgId: first }, { query: 'retry with wombats', mode: 'hybrid' }))
      await index.indexFiles({ orgId: second, repositoryId: 'billing', repositoryName: 'acme/billing', files: invoices })
      await until(() => dropped(logger.lines, first), 'the first index to be dropped')
      expect(dropped(logger.lines, second)).toBe(false)
      const loads = logger.lines.filter((line) => line.msg === 'code index loaded' && line.orgId === first).length
      expect(paths(await index.search({ orgId: first }, { query: 'retry with wombats', mode: 'hybrid' }))).toEqual(before)
      expect(logger.lines.filter((line) => line.msg === 'code index loaded' && line.orgId === first).length).toBe(loads + 1)
      // Now the second was the least recently used.
      await until(() => dropped(logger.lines, second), 'the second index to be dropped')
      expect(paths(await index.search({ orgId: second }, { query: 'render invoice pdf', mode: 'text' }))).toEqual(['billing/invoice.ts'])
    })

    test('changes not saved yet are saved before their index is dropped', async () => {
      const { make, first, second } = setUp()
      const { index, logger } = make({ memoryBudgetBytes: 1 })
      await index.indexFiles({ orgId: first, repositoryId: 'shop', repositoryName: 'acme/shop', files: wombats })
      // A removal is saved one snapshot delay later (600 s here), or when the index is dropped.
      await index.removeRepository(first, 'shop')
      expect(await index.search({ orgId: first }, { query: 'wombats', mode: 'text' })).toEqual([])
      await index.search({ orgId: second }, { query: 'anything', mode: 'text' })
      await until(() => dropped(logger.lines, first), 'the first index to be dropped')
      // Another process reading the store sees the removal.
      const { index: other } = make()
      expect(await other.search({ orgId: first }, { query: 'wombats', mode: 'text' })).toEqual([])
      expect(await index.search({ orgId: first }, { query: 'wombats', mode: 'text' })).toEqual([])
    })

    test('without a budget nothing is dropped', async () => {
      const { make, first, second } = setUp()
      const { index, logger } = make()
      await index.indexFiles({ orgId: first, repositoryId: 'shop', repositoryName: 'acme/shop', files: wombats })
      await index.indexFiles({ orgId: second, repositoryId: 'billing', repositoryName: 'acme/billing', files: invoices })
      await index.search({ orgId: first }, { query: 'wombats', mode: 'text' })
      await index.search({ orgId: second }, { query: 'invoice', mode: 'text' })
      expect(logger.lines.filter((line) => line.msg === 'code index dropped to stay within the memory budget')).toEqual([])
      expect(logger.lines.filter((line) => line.msg === 'code index loaded')).toEqual([])
    })
  })
})
