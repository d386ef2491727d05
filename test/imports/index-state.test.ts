import { afterAll, describe, expect, test } from 'bun:test'
import { join } from 'node:path'
import { createCodeIndex, createFileSnapshotStore, createHashedEmbeddings, type CodeIndex } from '../../plugins/code-search/index.ts'
import { createImportService } from '../../plugins/imports/import-service.ts'
import type { ImportSummary } from '../../plugins/imports/schemas.ts'
import { startGitServer } from '../fakes/git-server.ts'
import { makeApp, userWithRole } from '../helpers.ts'

// One database and data directory; each "process" is a code index and an import service built on them.
const git = startGitServer()
const t = await makeApp({ IMPORT_CODEHOST_URL: git.url, IMPORT_ALLOW_HOSTS: `127.0.0.1:${git.port}` })
const { user } = await userWithRole(t, 'member')
const caller = { userId: user.id, orgId: user.orgId }
afterAll(async () => {
  await t.close()
  await git.close()
})

const snapshots = createFileSnapshotStore({ db: t.deps.db, dir: join(t.config.dataDir, 'code-index-state') })

/** A process: its code index (with the given embeddings, saving snapshots or not) and an import service over it. */
function startProcess(options: { dimensions: number; persistent: boolean }) {
  const codeIndex = createCodeIndex({
    embeddings: createHashedEmbeddings({ dimensions: options.dimensions }),
    snapshots: options.persistent ? snapshots : undefined,
  })
  const imports = createImportService({ db: t.deps.db, codeIndex, dataDir: t.config.dataDir, settings: t.config.imports, logger: t.deps.logger })
  return {
    codeIndex,
    async importRepository(repository: string): Promise<ImportSummary> {
      const started = await imports.start(caller, { repository })
      await imports.settled(started.id)
      const view = await imports.get(caller.orgId, started.id)
      expect(view?.status).toBe('succeeded')
      return view!.summary!
    },
    async stop() {
      await imports.close()
      await codeIndex.close()
    },
  }
}

const found = async (index: CodeIndex, query: string) => (await index.search({ orgId: caller.orgId }, { query, mode: 'hybrid' })).map((r) => r.path)

describe('re-importing decides from what the index holds', () => {
  test('after a restart with other embeddings, importing again indexes everything and search finds it', async () => {
    git.createRepository('acme/embeddings', {
      'src/ledger.ts': 'export function reconcileLedgerEntries(entries: number[]) {\n  return entries.reduce((a, b) => a + b, 0)\n}\n',
      'src/mailer.py': 'def send_welcome_mail(address):\n    return address\n',
    })
    const first = startProcess({ dimensions: 256, persistent: true })
    expect((await first.importRepository('acme/embeddings')).index).toMatchObject({ files: 2 })
    await first.stop()

    const restarted = startProcess({ dimensions: 128, persistent: true })
    const summary = await restarted.importRepository('acme/embeddings')
    expect(summary.incremental).toBe(false)
    expect(summary.index.files).toBe(2)
    expect(summary.index.chunks).toBeGreaterThan(0)
    expect(await found(restarted.codeIndex, 'reconcileLedgerEntries')).toContain('src/ledger.ts')

    // Unchanged, with the same embeddings: the index holds the commit, so nothing is indexed again.
    const again = await restarted.importRepository('acme/embeddings')
    expect(again).toMatchObject({ incremental: true, index: { files: 0, chunks: 0 } })
    expect(await found(restarted.codeIndex, 'send welcome mail')).toContain('src/mailer.py')
    await restarted.stop()
  })

  test('an index that lost its contents (no snapshot) gets the whole repository again', async () => {
    git.createRepository('acme/lost', { 'lib/quarry.go': 'package lib\n\nfunc ExcavateGranite(tons int) int {\n\treturn tons\n}\n' })
    const first = startProcess({ dimensions: 256, persistent: false })
    await first.importRepository('acme/lost')
    await first.stop()

    const restarted = startProcess({ dimensions: 256, persistent: false })
    const summary = await restarted.importRepository('acme/lost')
    expect(summary).toMatchObject({ incremental: false, previousCommit: null, index: { files: 1 } })
    expect(await found(restarted.codeIndex, 'ExcavateGranite')).toEqual(['lib/quarry.go'])
    await restarted.stop()
  })
})

describe("the index's record of a repository", () => {
  const file = { path: 'a.ts', content: 'export function walrusTusk() {\n  return 1\n}\n' }

  test('indexFiles with a commit records it; removing the repository or changing its files without one forgets it', async () => {
    const index = createCodeIndex({ embeddings: createHashedEmbeddings() })
    const base = { orgId: 'org-record', repositoryId: 'r', repositoryName: 'acme/r' }
    expect(await index.indexedCommit!('org-record', 'r')).toBeUndefined()
    await index.indexFiles({ ...base, files: [file], commit: 'c1' })
    expect(await index.indexedCommit!('org-record', 'r')).toBe('c1')
    expect(await index.indexedCommit!('org-record', 'other')).toBeUndefined()
    await index.indexFiles({ ...base, files: [{ ...file, path: 'b.ts' }] })
    expect(await index.indexedCommit!('org-record', 'r')).toBeUndefined()
    await index.indexFiles({ ...base, files: [], commit: 'c2' })
    expect(await index.indexedCommit!('org-record', 'r')).toBe('c2')
    await index.removeRepository('org-record', 'r')
    expect(await index.indexedCommit!('org-record', 'r')).toBeUndefined()
  })

  test('the record survives a restart with the same embeddings, not with other dimensions', async () => {
    const store = createFileSnapshotStore({ db: t.deps.db, dir: join(t.config.dataDir, 'code-index-record') })
    const make = (dimensions: number) => createCodeIndex({ embeddings: createHashedEmbeddings({ dimensions }), snapshots: store, refreshIntervalMs: 0 })
    const first = make(64)
    await first.indexFiles({ orgId: 'org-restart', repositoryId: 'r', repositoryName: 'acme/r', files: [file], commit: 'c1' })
    await first.close()
    const same = make(64)
    expect(await same.indexedCommit!('org-restart', 'r')).toBe('c1')
    await same.close()
    const other = make(32)
    expect(await other.indexedCommit!('org-restart', 'r')).toBeUndefined()
    await other.close()
  })
})
