import { describe, expect, test } from 'bun:test'
import { createImportService } from '../../plugins/imports/import-service.ts'
import { ImportStore } from '../../plugins/imports/import-store.ts'
import { locateRepository } from '../../plugins/imports/repository-url.ts'
import { memoryLogger } from '../../src/log.ts'
import { forEachBackend, tempDir } from '../helpers.ts'
import { recordingIndex, startImportHarness } from './helpers.ts'

const settings = {
  codehostUrl: 'https://git.example',
  codehostProvider: 'github',
  allowHosts: [],
  maxRepositoryBytes: 1024 * 1024,
  maxFiles: 100,
  maxFileBytes: 1024 * 1024,
  cloneTimeoutMs: 5000,
}

forEachBackend(({ name, open }) => {
  describe(`import state survives a restart (${name})`, () => {
    test('an import whose process died is marked failed at start-up; one still alive elsewhere is left alone', async () => {
      const { db, close } = await open()
      const dir = tempDir()
      try {
        const store = new ImportStore(db)
        const dead = await store.upsertRepository('org-a', locateRepository('acme/dead', settings.codehostUrl))
        const alive = await store.upsertRepository('org-a', locateRepository('acme/alive', settings.codehostUrl))
        const deadImport = (await store.createImport({ orgId: 'org-a', userId: 'user-a', repositoryId: dead.id }))!
        const aliveImport = (await store.createImport({ orgId: 'org-a', userId: 'user-a', repositoryId: alive.id }))!
        await store.appendEvent(deadImport, 1, 'import', { importId: deadImport })
        await store.appendEvent(deadImport, 2, 'status', { status: 'cloning' })
        await store.setStatus(deadImport, 'cloning', { phase: 'Receiving objects', loaded: 10, total: 99 }, Date.now() - 60_000)
        await store.setStatus(aliveImport, 'analysing', { phase: 'analysis' })

        const service = createImportService({ db, codeIndex: recordingIndex(), dataDir: dir.path, settings, logger: memoryLogger(), heartbeatMs: 5000 })
        try {
          await service.recoverInterrupted()
          const failed = await service.get('org-a', deadImport)
          expect(failed).toMatchObject({ status: 'failed', error: { code: 'import_interrupted' }, progress: null })
          expect(failed!.finishedAt).not.toBeNull()
          expect((await service.get('org-a', aliveImport))!.status).toBe('analysing')

          // Followers see the stored events and the failure, then the stream ends.
          const events = await Array.fromAsync((await service.follow('org-a', deadImport))!)
          expect(events.map((e) => [e.id, e.event])).toEqual([
            [1, 'import'],
            [2, 'status'],
            [3, 'error'],
          ])
          expect(events[2]!.data).toMatchObject({ code: 'import_interrupted' })
          expect(await service.follow('org-b', deadImport)).toBeUndefined()
          expect(await service.get('org-b', deadImport)).toBeUndefined()

          // The repository can be imported again: the failed import no longer holds it.
          expect(await store.createImport({ orgId: 'org-a', userId: 'user-a', repositoryId: dead.id })).toBeString()
          expect(await store.createImport({ orgId: 'org-a', userId: 'user-a', repositoryId: alive.id })).toBeUndefined()
        } finally {
          await service.close()
        }
      } finally {
        await close()
        dir.remove()
      }
    })
  })
})

describe('shutdown', () => {
  test('stopping the service fails its running imports as interrupted and removes their partial workspace', async () => {
    const h = await startImportHarness()
    try {
      h.git.createRepository('acme/cut-short', { 'a.ts': 'export {}\n' })
      h.git.behaviour = { kind: 'trickle', chunkBytes: 16, delayMs: 50 }
      const started = await (await h.post({ repository: 'acme/cut-short' })).json()
      await Bun.sleep(100)
      await h.imports.close()
      const view = await (await h.get(started.importId)).json()
      expect(view).toMatchObject({ status: 'failed', error: { code: 'import_interrupted' } })
      expect(h.workspaceOf(view).exists).toBe(false)
      const refused = await h.post({ repository: 'acme/cut-short' })
      expect(refused.status).toBe(503)
    } finally {
      await h.close()
    }
  })
})
