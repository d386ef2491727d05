import { afterAll, describe, expect, test } from 'bun:test'
import { existsSync, lstatSync, readFileSync, readdirSync, readlinkSync } from 'node:fs'
import { join } from 'node:path'
import { readEvents, startImportHarness } from './helpers.ts'

const h = await startImportHarness()
afterAll(() => h.close())

const treeOf = (view: { repository: { id: string } }) => join(h.workspaceOf(view as never).root, 'tree')
const callsFor = (repositoryId: string) => h.index.calls.filter((c) => c.repositoryId === repositoryId)

/** The object count of the pack an import downloaded, from its replayed progress events. */
async function objectsReceived(importId: string): Promise<number> {
  const events = await readEvents(await h.get(importId, { accept: 'text/event-stream' }))
  return events.findLast((e) => e.event === 'clone' && e.data.phase === 'Receiving objects')!.data.total
}

describe('re-importing a repository', () => {
  test('fetches only what changed and re-indexes only changed and added files, naming the removed ones', async () => {
    const base: Record<string, string> = {}
    for (let i = 0; i < 200; i++) base[`lib/module${i}.js`] = `export function handler${i}(request) {\n  return ${i}\n}\n`.repeat(30)
    const repository = h.git.createRepository('acme/incremental', {
      ...base,
      'docs/guide.md': '# Guide\n',
      'config/settings.json': '{"a": 1}\n',
      'old/name.ts': 'export const moved = true\n',
      'thing.txt': 'a file that becomes a directory\n',
    })
    const first = await h.importAndWait({ repository: 'acme/incremental' })
    expect(first.status).toBe('succeeded')
    expect(callsFor(first.repository.id)).toHaveLength(1)
    expect(callsFor(first.repository.id)[0]!.files).toHaveLength(204)
    expect(h.index.removals).toContainEqual({ orgId: h.member.user.orgId, repositoryId: first.repository.id })

    const before = repository.head()
    repository.commit({
      'lib/module7.js': 'export function handler7(request) {\n  return "changed"\n}\n',
      'lib/added.ts': 'export const added = 1\n',
      'docs/guide.md': null,
      'old/name.ts': null,
      'new/name.ts': 'export const moved = true\n',
      'thing.txt': null,
      'thing.txt/inside.md': 'now a directory\n',
    })
    const second = await h.importAndWait({ repository: 'acme/incremental' })
    expect(second.status).toBe('succeeded')
    expect(second.repository.id).toBe(first.repository.id)
    expect(second.summary).toMatchObject({ incremental: true, previousCommit: before, commit: repository.head() })
    const call = callsFor(first.repository.id)[1]!
    expect(call.files.map((f) => f.path)).toEqual(['lib/added.ts', 'lib/module7.js', 'new/name.ts', 'thing.txt/inside.md'])
    expect(call.files.find((f) => f.path === 'lib/module7.js')!.content).toContain('"changed"')
    expect(call.removedPaths).toEqual(['docs/guide.md', 'old/name.ts', 'thing.txt'])
    // Only the first import cleared the repository from the index.
    expect(h.index.removals.filter((r) => r.repositoryId === first.repository.id)).toHaveLength(1)
    // The fetch offered the old commit and received the new objects only: four blobs, the trees above them and the commit.
    expect(await objectsReceived(first.id)).toBeGreaterThan(204)
    expect(await objectsReceived(second.id)).toBeLessThanOrEqual(9)
    expect(second.summary!.receivedBytes).toBeLessThan(first.summary!.receivedBytes)

    // The tree on disk is the new commit's.
    const tree = treeOf(second)
    expect(readFileSync(join(tree, 'lib/module7.js'), 'utf8')).toContain('"changed"')
    expect(existsSync(join(tree, 'docs/guide.md'))).toBe(false)
    expect(existsSync(join(tree, 'old'))).toBe(false)
    expect(lstatSync(join(tree, 'thing.txt')).isDirectory()).toBe(true)
    expect(second.summary!.analysis.files).toBe(first.summary!.analysis.files)
    expect(second.summary!.checkout).toEqual({ written: 4, removed: 3 })
  })

  test('an unchanged repository re-imports with nothing to index', async () => {
    h.git.createRepository('acme/steady', { 'a.go': 'package a\n', 'b.go': 'package b\n' })
    const first = await h.importAndWait({ repository: 'acme/steady' })
    const second = await h.importAndWait({ repository: 'acme/steady' })
    expect(second.summary).toMatchObject({ incremental: true, commit: first.commit, checkout: { written: 0, removed: 0 }, index: { files: 0, removed: 0 } })
    expect(callsFor(first.repository.id)[1]).toMatchObject({ files: [], removedPaths: [] })
    expect(second.summary!.analysis).toEqual(first.summary!.analysis)
  })

  test('a tree left half-updated is rebuilt, and the index still gets exactly the difference', async () => {
    const repository = h.git.createRepository('acme/rebuilt', { 'one.ts': 'export const one = 1\n', 'two.ts': 'export const two = 2\n' })
    const first = await h.importAndWait({ repository: 'acme/rebuilt' })
    // What a crash during a checkout leaves: no record of what the tree holds.
    const { root } = h.workspaceOf(first)
    await Bun.file(join(root, 'worktree.json')).delete()
    await Bun.write(join(root, 'tree', 'stray.ts'), 'left over\n')
    repository.commit({ 'two.ts': 'export const two = 22\n' })
    const second = await h.importAndWait({ repository: 'acme/rebuilt' })
    expect(second.status).toBe('succeeded')
    expect(existsSync(join(root, 'tree', 'stray.ts'))).toBe(false)
    expect(callsFor(first.repository.id)[1]).toMatchObject({ files: [{ path: 'two.ts' }], removedPaths: [] })
  })

  test('a symlink replaced by a directory is removed first: the new files land inside the tree', async () => {
    const outside = join(h.t.config.dataDir, 'outside')
    const repository = h.git.createRepository('acme/link-swap', { data: { symlink: outside }, 'keep.md': 'keep\n' })
    const first = await h.importAndWait({ repository: 'acme/link-swap' })
    expect(lstatSync(join(treeOf(first), 'data')).isSymbolicLink()).toBe(true)
    expect(readlinkSync(join(treeOf(first), 'data'))).toBe(outside)
    repository.commit({ data: null, 'data/secret.txt': 'inside the tree\n' })
    const second = await h.importAndWait({ repository: 'acme/link-swap' })
    expect(second.status).toBe('succeeded')
    expect(lstatSync(join(treeOf(second), 'data')).isDirectory()).toBe(true)
    expect(readFileSync(join(treeOf(second), 'data/secret.txt'), 'utf8')).toBe('inside the tree\n')
    expect(existsSync(outside)).toBe(false)
  })
})

describe('checkout fidelity', () => {
  test("the checked-out tree is git's own, byte for byte, delta-compressed objects included", async () => {
    // Near-duplicate files make the server send long delta chains.
    const files: Record<string, string> = {}
    for (let i = 0; i < 300; i++)
      files[`src/part${i % 7}/file${i}.ts`] = `export function handler${i}(input: string) {\n  return input + ${i}\n}\n`.repeat(5 + (i % 30))
    files['bin/data.bin'] = new Uint8Array(4096).map((_, i) => (i * 7) % 256) as never
    const repository = h.git.createRepository('acme/fidelity', files)
    const first = await h.importAndWait({ repository: 'acme/fidelity' })
    expect(first.status).toBe('succeeded')
    const changes: Record<string, string | null> = {}
    for (let i = 0; i < 300; i += 10) changes[`src/part${i % 7}/file${i}.ts`] = `// edited\n${files[`src/part${i % 7}/file${i}.ts`]}`
    changes['src/part0/file7.ts'] = null
    repository.commit(changes)
    const second = await h.importAndWait({ repository: 'acme/fidelity' })
    expect(second.status).toBe('succeeded')
    const tree = treeOf(second)
    const expected = repository.git('ls-files').split('\n').sort()
    const listed = (dir: string, prefix = ''): string[] =>
      readdirSync(join(dir, prefix), { withFileTypes: true }).flatMap((entry) =>
        entry.isDirectory() ? listed(dir, join(prefix, entry.name)) : [join(prefix, entry.name)],
      )
    expect(listed(tree).sort()).toEqual(expected)
    for (const path of expected) expect(Buffer.compare(readFileSync(join(tree, path)), readFileSync(join(repository.workdir, path)))).toBe(0)
  })
})

describe('ref and depth', () => {
  test('imports the named branch with the asked depth', async () => {
    const repository = h.git.createRepository('acme/branches', { 'main.txt': 'main\n' })
    repository.commit({ 'main.txt': 'main 2\n' })
    repository.git('checkout', '-q', '-b', 'feature')
    repository.git('commit', '-q', '--allow-empty', '-m', 'feature start')
    const feature = repository.commit({ 'feature.txt': 'feature\n' })
    const view = await h.importAndWait({ repository: 'acme/branches', ref: 'feature', depth: 1 })
    expect(view.status).toBe('succeeded')
    expect(view).toMatchObject({ ref: 'feature', depth: 1, commit: feature })
    expect(view.summary!.analysis.files).toBe(2)
    // Depth 1: the object store holds one commit, not the four of the branch.
    const shallow = readFileSync(join(h.workspaceOf(view).root, 'git', 'shallow'), 'utf8').trim()
    expect(shallow).toBe(feature)
  })

  test('a ref the repository does not have fails the import with repository_not_found', async () => {
    h.git.createRepository('acme/no-such-ref', { 'a.txt': 'a\n' })
    const view = await h.importAndWait({ repository: 'acme/no-such-ref', ref: 'does-not-exist' })
    expect(view.status).toBe('failed')
    expect(view.error).toMatchObject({ code: 'repository_not_found' })
    expect(view.error!.message).toContain('does-not-exist')
    expect(h.workspaceOf(view).exists).toBe(false)
  })

  test('a repository the server does not have fails with repository_not_found', async () => {
    const view = await h.importAndWait({ repository: 'acme/missing' })
    expect(view).toMatchObject({ status: 'failed', error: { code: 'repository_not_found' } })
    expect(h.workspaceOf(view).exists).toBe(false)
  })
})
