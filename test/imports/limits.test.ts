import { afterAll, beforeEach, describe, expect, test } from 'bun:test'
import { randomBytes } from 'node:crypto'
import { existsSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
import { startImportHarness } from './helpers.ts'

// Small size limits so each misbehaving server is stopped within a second or two. The clone time limit is long, so
// a loaded machine never stops a well-behaved import; a test of the time limit shortens it to a second against a
// server that takes longer than that however fast the machine is.
const GENEROUS_CLONE_MS = 120_000
const SHORT_CLONE_MS = 1000
const h = await startImportHarness({
  env: {
    IMPORT_CLONE_TIMEOUT_SECONDS: String(GENEROUS_CLONE_MS / 1000),
    IMPORT_MAX_REPOSITORY_BYTES: String(256 * 1024),
    IMPORT_MAX_FILES: '50',
    IMPORT_MAX_FILE_BYTES: String(64 * 1024),
  },
})
afterAll(() => h.close())
beforeEach(() => {
  h.git.behaviour = { kind: 'normal' }
  h.settings.cloneTimeoutMs = GENEROUS_CLONE_MS
})

h.git.createRepository('acme/ordinary', { 'src/app.ts': 'export const app = 1\n', 'README.md': '# Ordinary\n' })

async function expectFailure(repository: string, code: string) {
  const view = await h.importAndWait({ repository })
  expect(view.status).toBe('failed')
  expect(view.error!.code).toBe(code)
  // The partial workspace is gone, and so is anything else under the organisation.
  expect(h.workspaceOf(view).exists).toBe(false)
  return view
}

describe('limits stop a misbehaving server and remove the partial workspace', () => {
  test('a server that trickles bytes is stopped by the clone time limit', async () => {
    h.git.behaviour = { kind: 'trickle', chunkBytes: 8, delayMs: 100 }
    h.settings.cloneTimeoutMs = SHORT_CLONE_MS
    const view = await expectFailure('acme/ordinary', 'import_timeout')
    expect(view.error!.message).toContain('IMPORT_CLONE_TIMEOUT_SECONDS')
  })

  test('an endless ref list is stopped by the size limit', async () => {
    h.git.behaviour = { kind: 'endless-refs' }
    const view = await expectFailure('acme/ordinary', 'repository_too_large')
    expect(view.error!.message).toContain('IMPORT_MAX_REPOSITORY_BYTES')
  })

  test('a huge pack is stopped by the size limit', async () => {
    h.git.behaviour = { kind: 'huge-pack' }
    await expectFailure('acme/ordinary', 'repository_too_large')
  })

  test('an endless pack that stays under the size limit is stopped by the time limit', async () => {
    h.git.behaviour = { kind: 'trickle', chunkBytes: 1024, delayMs: 50 }
    const many: Record<string, string> = {}
    // Random text does not compress: about 40 KiB of pack, 2 s at this rate.
    for (let i = 0; i < 40; i++) many[`f${i}.txt`] = randomBytes(1024).toString('hex')
    h.git.createRepository('acme/slow-pack', many)
    h.settings.cloneTimeoutMs = SHORT_CLONE_MS
    await expectFailure('acme/slow-pack', 'import_timeout')
  })

  test('too many files', async () => {
    const files: Record<string, string> = {}
    for (let i = 0; i < 51; i++) files[`many/f${i}.txt`] = `${i}\n`
    h.git.createRepository('acme/too-many', files)
    const view = await expectFailure('acme/too-many', 'repository_too_many_files')
    expect(view.error!.message).toContain('51 files')
  })

  test('a file over the single-file limit', async () => {
    h.git.createRepository('acme/big-file', { 'small.txt': 'small\n', 'data/big.bin': new Uint8Array(64 * 1024 + 1).fill(7) })
    const view = await expectFailure('acme/big-file', 'repository_file_too_large')
    expect(view.error!.message).toContain('data/big.bin')
  })

  test('checked-out files over the repository size limit', async () => {
    // Highly compressible: the pack is small, the files are not.
    const files: Record<string, string> = {}
    for (let i = 0; i < 5; i++) files[`blob${i}.txt`] = `${i}`.repeat(60 * 1024)
    h.git.createRepository('acme/expands', files)
    await expectFailure('acme/expands', 'repository_too_large')
  })

  test('a later import of a well-behaved repository still works, and failures left nothing behind', async () => {
    const view = await h.importAndWait({ repository: 'acme/ordinary' })
    expect(view.status).toBe('succeeded')
    const orgDirectory = join(h.t.config.dataDir, 'imports', h.member.user.orgId)
    expect(readdirSync(orgDirectory)).toEqual([view.repository.id])
    expect(existsSync(join(orgDirectory, view.repository.id, 'tree', 'src', 'app.ts'))).toBe(true)
  })
})

describe('a failed re-import keeps what the last good import left', () => {
  test('the object store and the tree survive a fetch that times out', async () => {
    const repository = h.git.createRepository('acme/kept', { 'a.ts': 'export const a = 1\n' })
    const first = await h.importAndWait({ repository: 'acme/kept' })
    expect(first.status).toBe('succeeded')
    repository.commit({ 'a.ts': 'export const a = 2\n' })
    h.git.behaviour = { kind: 'trickle', chunkBytes: 8, delayMs: 100 }
    h.settings.cloneTimeoutMs = SHORT_CLONE_MS
    const failed = await h.importAndWait({ repository: 'acme/kept' })
    expect(failed.error!.code).toBe('import_timeout')
    h.git.behaviour = { kind: 'normal' }
    expect(existsSync(join(h.workspaceOf(first).root, 'tree', 'a.ts'))).toBe(true)
    const again = await h.importAndWait({ repository: 'acme/kept' })
    expect(again.summary).toMatchObject({ incremental: true, previousCommit: first.commit, commit: repository.head() })
  })
})
