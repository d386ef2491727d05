import { afterAll, describe, expect, test } from 'bun:test'
import { existsSync, lstatSync, readFileSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
import { analyseTree } from '../../plugins/imports/analysis/analyse.ts'
import { assertSafePath } from '../../plugins/imports/workspace.ts'
import { startImportHarness } from './helpers.ts'

const h = await startImportHarness()
afterAll(() => h.close())

// A file the repository's symlinks point at; its content must never reach the analysis or the index.
const hostSecret = join(h.t.config.dataDir, 'host-secret.txt')
await Bun.write(hostSecret, 'HOST-ONLY-CONTENT\n')

describe('symlinks are recorded as links and never followed', () => {
  test('README.md -> a host file is not read by the analyser or handed to the index', async () => {
    h.git.createRepository('acme/links', {
      'README.md': { symlink: hostSecret },
      'docs/hostname': { symlink: '/etc/hostname' },
      up: { symlink: '../../..' },
      'src/main.ts': 'export const main = true\n',
    })
    const view = await h.importAndWait({ repository: 'acme/links' })
    expect(view.status).toBe('succeeded')
    const { analysis } = view.summary!
    expect(analysis.links).toEqual({
      count: 3,
      entries: [
        { path: 'README.md', target: hostSecret },
        { path: 'up', target: '../../..' },
        { path: 'docs/hostname', target: '/etc/hostname' },
      ],
    })
    expect(analysis.files).toBe(1)
    expect(analysis.readme).toBeNull()
    expect(analysis.bytes).toBe('export const main = true\n'.length)

    const call = h.index.calls.find((c) => c.repositoryId === view.repository.id)!
    expect(call.files.map((f) => f.path)).toEqual(['src/main.ts'])
    expect(JSON.stringify(h.index.calls)).not.toContain('HOST-ONLY-CONTENT')
    expect(JSON.stringify(view)).not.toContain('HOST-ONLY-CONTENT')

    // The links exist as links inside the tree; the analyser did not descend through `up`.
    const tree = join(h.workspaceOf(view).root, 'tree')
    expect(lstatSync(join(tree, 'README.md')).isSymbolicLink()).toBe(true)
    expect(readFileSync(hostSecret, 'utf8')).toBe('HOST-ONLY-CONTENT\n')
  })

  test('the analyser lstat-s: a link to a directory is not walked', async () => {
    const tree = join(h.t.config.dataDir, 'analyse-links')
    await Bun.write(join(tree, 'a.ts'), 'export {}\n')
    const { symlinkSync } = await import('node:fs')
    symlinkSync(h.t.config.dataDir, join(tree, 'everything'))
    const { analysis, files } = await analyseTree(tree, { maxFileBytes: 1024 * 1024 })
    expect([...files.keys()]).toEqual(['a.ts'])
    expect(analysis.links.entries).toEqual([{ path: 'everything', target: h.t.config.dataDir }])
  })
})

describe('no repository path leaves the workspace', () => {
  test.each([
    ['a `..` directory', [{ name: '..', tree: [{ name: 'escaped.txt', blob: 'escaped\n' }] }]],
    ['a `.git` directory', [{ name: '.git', tree: [{ name: 'config', blob: '[core]\n\tbare = false\n' }] }]],
    ['a `.GIT` directory in another case', [{ name: 'sub', tree: [{ name: '.GIT', tree: [{ name: 'HEAD', blob: 'ref: refs/heads/evil\n' }] }] }]],
    ['a `.git ` name with a trailing space', [{ name: '.git ', tree: [{ name: 'hooks', blob: 'x\n' }] }]],
    ['a `git~1` short name', [{ name: 'git~1', tree: [{ name: 'config', blob: 'x\n' }] }]],
    ['a `.` entry', [{ name: '.', blob: 'dot\n' }]],
    ['a `.git` spelt with a character HFS+ ignores', [{ name: '.g\u200cit', tree: [{ name: 'config', blob: 'x\n' }] }]],
    ['a `.git` named through an NTFS data stream', [{ name: '.git::$INDEX_ALLOCATION', tree: [{ name: 'config', blob: 'x\n' }] }]],
    ['a name with a backslash', [{ name: '..\\escaped.txt', blob: 'escaped\n' }]],
  ])('%s fails the import with repository_unsafe_path and writes nothing', async (_, entries) => {
    const name = `acme/unsafe-${crypto.randomUUID().slice(0, 8)}`
    const repository = h.git.createRepository(name, { 'ok.txt': 'fine\n' })
    repository.commitRawTree([{ name: 'ok.txt', blob: 'fine\n' }, ...(entries as never[])])
    const before = readdirSync(h.t.config.dataDir).sort()
    const view = await h.importAndWait({ repository: name })
    expect(view.status).toBe('failed')
    expect(view.error!.code).toBe('repository_unsafe_path')
    expect(h.workspaceOf(view).exists).toBe(false)
    // Nothing appeared beside the workspaces either.
    expect(readdirSync(h.t.config.dataDir).sort()).toEqual(before)
    expect(existsSync(join(h.t.config.dataDir, 'imports', 'escaped.txt'))).toBe(false)
  })

  test('a symlink that points outside is created as a link, and nothing is written through it', async () => {
    const outside = join(h.t.config.dataDir, 'outside-dir')
    const repository = h.git.createRepository('acme/through-link', { 'ok.txt': 'fine\n' })
    // The same tree entry cannot be both a link and a directory, so a hostile server sends a link and,
    // in the next commit, files beneath the link's name.
    repository.commitRawTree([
      { name: 'ok.txt', blob: 'fine\n' },
      { name: 'dir', blob: { symlink: outside } },
    ])
    const first = await h.importAndWait({ repository: 'acme/through-link' })
    expect(first.status).toBe('succeeded')
    repository.commitRawTree([
      { name: 'ok.txt', blob: 'fine\n' },
      { name: 'dir', tree: [{ name: 'planted.txt', blob: 'planted\n' }] },
    ])
    const second = await h.importAndWait({ repository: 'acme/through-link' })
    expect(second.status).toBe('succeeded')
    expect(existsSync(join(outside, 'planted.txt'))).toBe(false)
    expect(readFileSync(join(h.workspaceOf(second).root, 'tree', 'dir', 'planted.txt'), 'utf8')).toBe('planted\n')
  })

  test('assertSafePath refuses every escaping spelling', () => {
    for (const path of ['../x', 'a/../../x', '/etc/passwd', 'a//b', 'a/./b', '.git/config', 'a/.Git/HEAD', 'a/.git./x', 'a\\..\\b', 'nul\0byte', ''])
      expect(() => assertSafePath(path)).toThrow()
    for (const path of ['a/b.txt', '.github/workflows/ci.yml', 'x/.gitignore', 'git/config', '...']) expect(() => assertSafePath(path)).not.toThrow()
  })
})
