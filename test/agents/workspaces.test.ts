/** Task workspaces on their own: paths that stay inside, links never followed, limits, and the diff against the base. */
import { afterAll, describe, expect, test } from 'bun:test'
import { existsSync, linkSync, mkdtempSync, readFileSync, rmSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { memoryLogger } from '../../src/log.ts'
import { createWorkspaceVolumes, imageBytes } from '../../plugins/agents/workspaces/workspace-volume.ts'
import { makeSandbox } from '../sandbox/support.ts'
import { createWorkspaces, pathSegments } from '../../plugins/agents/workspaces/workspaces.ts'

const root = mkdtempSync(join(tmpdir(), 'workspaces-test-'))
const workspaces = createWorkspaces({ root: join(root, 'ws'), limits: { maxFiles: 5, maxBytes: 1000 }, retentionSeconds: 60, logger: memoryLogger() })
const text = (s: string) => new TextEncoder().encode(s)
let n = 0
const taskId = () => `task_${++n}`

/** Other instances made by tests, closed (their mounts released) whatever the tests did. */
const closeLater: { close(): Promise<void> }[] = []

afterAll(async () => {
  await workspaces.close()
  for (const instance of closeLater) await instance.close()
  rmSync(root, { recursive: true, force: true })
})

describe('workspace paths', () => {
  test('relative paths are taken; empty, absolute, .. , NUL, backslash and .git paths are refused', () => {
    expect(pathSegments('src/a.ts')).toEqual(['src', 'a.ts'])
    expect(pathSegments('./src//a.ts')).toEqual(['src', 'a.ts'])
    for (const bad of ['', '/etc/passwd', '../x', 'a/../../x', 'a\0b', 'a\\b', '.git/config', 'sub/.GIT/hooks', '.', 'a/..'])
      expect(() => pathSegments(bad)).toThrow()
  })

  test('files written by a command through links stay out of reach: reads, writes, listings and deletes never follow them', async () => {
    const id = taskId()
    const { tree } = await workspaces.create(id, [{ path: 'a.txt', bytes: text('a\n') }])
    const outside = join(root, 'outside.txt')
    writeFileSync(outside, 'outside')
    symlinkSync(outside, join(tree, 'file-link'))
    symlinkSync(root, join(tree, 'dir-link'))
    await expect(workspaces.read(id, 'file-link')).rejects.toThrow('symbolic link')
    await expect(workspaces.read(id, 'dir-link/outside.txt')).rejects.toThrow('symbolic link')
    await expect(workspaces.write(id, 'file-link', 'x')).rejects.toThrow('symbolic link')
    await expect(workspaces.write(id, 'dir-link/new.txt', 'x')).rejects.toThrow('symbolic link')
    await expect(workspaces.list(id, 'dir-link')).rejects.toThrow('symbolic link')
    await expect(workspaces.list(id, 'a.txt')).rejects.toThrow('not a directory')
    expect(readFileSync(outside, 'utf8')).toBe('outside')
    expect(existsSync(join(root, 'new.txt'))).toBe(false)
    await workspaces.delete(id, 'dir-link')
    expect(existsSync(root)).toBe(true)
    expect((await workspaces.list(id)).map((e) => `${e.path}:${e.type}`)).toEqual(['a.txt:file', 'file-link:symlink'])
  })
})

describe('workspace limits and diff', () => {
  test('a base over the limits is refused, and so is a write that would pass them', async () => {
    await expect(workspaces.create(taskId(), [{ path: 'big', bytes: new Uint8Array(1001) }])).rejects.toThrow('1001 bytes')
    const id = taskId()
    await workspaces.create(id, [])
    for (let i = 0; i < 5; i++) await workspaces.write(id, `f${i}`, 'x')
    await expect(workspaces.write(id, 'f5', 'x')).rejects.toThrow('6 files')
    await expect(workspaces.write(id, 'f0', 'x'.repeat(1000))).rejects.toThrow('1004 bytes')
    await workspaces.write(id, 'f0', 'y')
  })

  test('the diff is against the base: added, modified and deleted files, and a later commit does not change it', async () => {
    const id = taskId()
    await workspaces.create(id, [
      { path: 'keep.txt', bytes: text('same\n') },
      { path: 'change.txt', bytes: text('old\n') },
      { path: 'gone.txt', bytes: text('bye\n') },
    ])
    expect(await workspaces.diff(id)).toEqual({ diff: '', files: [], leftOut: [] })
    await workspaces.write(id, 'change.txt', 'new\n')
    await workspaces.write(id, 'dir/added.txt', 'hi\n')
    await workspaces.delete(id, 'gone.txt')
    const first = await workspaces.diff(id)
    expect(first.files).toEqual([
      { path: 'change.txt', status: 'modified' },
      { path: 'dir/added.txt', status: 'added' },
      { path: 'gone.txt', status: 'deleted' },
    ])
    expect(first.diff).toContain('-old\n+new\n')
    expect(first.diff).toContain('+++ b/dir/added.txt\n@@ -0,0 +1 @@\n+hi\n')
    const { commit, files } = await workspaces.commit(id, 'agent/change', 'Change')
    expect(commit).toMatch(/^[0-9a-f]{40}$/)
    expect(files).toEqual(first.files)
    expect(await workspaces.diff(id)).toEqual(first)
    await expect(workspaces.commit(id, 'agent/change', 'Again')).rejects.toThrow('exists already')
  })

  test('a diff of a tree unchanged since the last one is that diff again, with no new snapshot commit', async () => {
    const id = taskId()
    await workspaces.create(id, [{ path: 'a.txt', bytes: text('a\n') }])
    await workspaces.write(id, 'a.txt', 'b\n')
    const gitdir = join(root, 'ws', id, 'git')
    const snapshotCommit = () =>
      Bun.spawnSync(['git', `--git-dir=${gitdir}`, 'rev-parse', 'refs/agent/snapshot'])
        .stdout.toString()
        .trim()
    const first = await workspaces.diff(id)
    const commit = snapshotCommit()
    // A commit made a second later would have another id.
    await Bun.sleep(1100)
    expect(await workspaces.diff(id)).toEqual(first)
    expect(snapshotCommit()).toBe(commit)
    await workspaces.write(id, 'a.txt', 'c\n')
    expect((await workspaces.diff(id)).diff).toContain('+c')
    expect(snapshotCommit()).not.toBe(commit)
  })

  test('a nested .git a command made is left out of the diff with a note, never followed, and no repository elsewhere is read', async () => {
    const id = taskId()
    const { tree } = await workspaces.create(id, [{ path: 'a.txt', bytes: text('a\n') }])
    // A repository elsewhere on the host, named by a .git file as an embedded repository would be.
    const elsewhere = join(root, 'elsewhere')
    Bun.spawnSync(['git', 'init', '-q', elsewhere])
    Bun.spawnSync(['git', '-C', elsewhere, '-c', 'user.name=x', '-c', 'user.email=x@y', 'commit', '-q', '--allow-empty', '-m', 'x'])
    const head = Bun.spawnSync(['git', '-C', elsewhere, 'rev-parse', 'HEAD']).stdout.toString().trim()
    expect(head).toMatch(/^[0-9a-f]{40}$/)
    Bun.spawnSync(['mkdir', '-p', join(tree, 'sub'), join(tree, 'nested/.GIT')])
    writeFileSync(join(tree, 'sub/.git'), `gitdir: ${join(elsewhere, '.git')}\n`)
    writeFileSync(join(tree, 'sub/kept.txt'), 'kept\n')
    const { diff, files, leftOut, note } = await workspaces.diff(id)
    expect(diff).not.toContain(head)
    expect(diff).not.toContain('Subproject')
    expect(files).toEqual([{ path: 'sub/kept.txt', status: 'added' }])
    expect(leftOut).toEqual([
      { path: 'nested/.GIT', reason: 'nested repository' },
      { path: 'sub/.git', reason: 'nested repository' },
    ])
    expect(note).toContain('nested/.GIT (nested repository)')
  })

  test('ignored files and build output stay out of the diff unless the base holds them', async () => {
    const big = createWorkspaces({ root: join(root, 'ignores'), limits: { maxFiles: 50, maxBytes: 10_000 }, retentionSeconds: 60, logger: memoryLogger() })
    closeLater.push(big)
    const id = taskId()
    const { tree } = await big.create(id, [
      { path: '.gitignore', bytes: text('*.log\n/out/\n!keep.log\n') },
      { path: 'dist/tracked.js', bytes: text('1\n') },
      { path: 'pkg/.gitignore', bytes: text('generated.txt\n') },
    ])
    for (const [path, content] of Object.entries({
      'app.log': 'x',
      'keep.log': 'kept',
      'out/a.txt': 'x',
      '__pycache__/m.cpython-311.pyc': 'x',
      'pkg/mod.pyc': 'x',
      'pkg/generated.txt': 'x',
      'pkg/real.py': 'print()\n',
      'node_modules/x/index.js': 'x',
      'dist/tracked.js': '2\n',
      'dist/new.js': 'x',
      '.bun/install/cache/x': 'x',
    })) {
      Bun.spawnSync(['mkdir', '-p', join(tree, path, '..')])
      writeFileSync(join(tree, path), content)
    }
    const { files, leftOut } = await big.diff(id)
    expect(files).toEqual([
      { path: 'dist/tracked.js', status: 'modified' },
      { path: 'keep.log', status: 'added' },
      { path: 'pkg/real.py', status: 'added' },
    ])
    expect(
      leftOut
        .filter((l) => l.reason === 'ignored')
        .map((l) => l.path)
        .sort(),
    ).toEqual(['.bun/', '__pycache__/', 'app.log', 'dist/new.js', 'node_modules/', 'out/', 'pkg/generated.txt', 'pkg/mod.pyc'].sort())
    await big.close()
  })

  test('hard links, FIFOs and links are never read through: a link is committed as a link, the others are left out', async () => {
    // Plain directories, where a hard link to a file outside the tree can be made.
    const plain = createWorkspaces({
      root: join(root, 'plain'),
      limits: { maxFiles: 5, maxBytes: 1000 },
      retentionSeconds: 60,
      volumes: createWorkspaceVolumes(memoryLogger(), { images: false }),
      logger: memoryLogger(),
    })
    closeLater.push(plain)
    const id = taskId()
    const { tree } = await plain.create(id, [])
    const outside = join(root, 'hard-outside.txt')
    writeFileSync(outside, 'outside secret')
    linkSync(outside, join(tree, 'hard.txt'))
    Bun.spawnSync(['mkfifo', join(tree, 'pipe')])
    symlinkSync(outside, join(tree, 'soft.txt'))
    const { diff, files, leftOut } = await plain.diff(id)
    expect(diff).not.toContain('outside secret')
    expect(files).toEqual([{ path: 'soft.txt', status: 'added' }])
    expect(diff).toContain('new file mode 120000')
    expect(leftOut).toEqual([
      { path: 'hard.txt', reason: 'hard link' },
      { path: 'pipe', reason: 'not a regular file' },
    ])
    await expect(plain.read(id, 'hard.txt')).rejects.toThrow('hard links')
    await expect(plain.write(id, 'hard.txt', 'changed')).rejects.toThrow('hard links')
    expect(readFileSync(outside, 'utf8')).toBe('outside secret')
  })

  test('the start-up sweep removes workspaces older than the given age that no task here holds, and nothing newer', async () => {
    const stale = join(root, 'ws', 'task_stale')
    const recent = join(root, 'ws', 'task_recent')
    Bun.spawnSync(['mkdir', '-p', join(stale, 'tree'), join(recent, 'tree')])
    const old = new Date(Date.now() - 2 * 3600 * 1000)
    utimesSync(stale, old, old)
    const id = taskId()
    const { tree } = await workspaces.create(id, [])
    utimesSync(join(root, 'ws', id), old, old)
    await workspaces.sweepOrphans(3600)
    expect(existsSync(stale)).toBe(false)
    expect(existsSync(recent)).toBe(true)
    expect(existsSync(tree)).toBe(true)
  })

  test('a removed workspace is gone from disk and from reads', async () => {
    const id = taskId()
    const { tree } = await workspaces.create(id, [{ path: 'a', bytes: text('a') }])
    await workspaces.remove(id)
    expect(existsSync(tree)).toBe(false)
    expect(() => workspaces.get(id)).toThrow('gone')
  })
})

describe('a workspace continued by another task', () => {
  test('the follow-up takes the files, the base and the conversation; the earlier task and a second follow-up find it gone', async () => {
    const shared = join(root, 'continued')
    const first = createWorkspaces({ root: shared, limits: { maxFiles: 5, maxBytes: 1000 }, retentionSeconds: 60, logger: memoryLogger() })
    const second = createWorkspaces({ root: shared, limits: { maxFiles: 5, maxBytes: 1000 }, retentionSeconds: 60, logger: memoryLogger() })
    closeLater.push(first, second)
    const id = taskId()
    await first.create(id, [{ path: 'a.txt', bytes: text('one\n') }], { importId: 'imp_1', commit: 'c0ffee' })
    await first.write(id, 'a.txt', 'two\n')
    await first.startConversation(id, { instruction: 'change a' }, [{ role: 'user', content: 'change a' }])
    await first.appendConversation(id, [{ role: 'assistant', content: 'done' }])
    await first.release(id)
    // Another process continues it.
    const next = taskId()
    const adopted = await second.adopt(id, next)
    expect(adopted.base).toEqual({ importId: 'imp_1', commit: 'c0ffee' })
    expect(second.loadConversation(next)).toEqual({
      header: { instruction: 'change a' },
      messages: [
        { role: 'user', content: 'change a' },
        { role: 'assistant', content: 'done' },
      ],
    })
    await second.write(next, 'b.txt', 'new\n')
    // The diff is still against the original base.
    expect((await second.diff(next)).files).toEqual([
      { path: 'a.txt', status: 'modified' },
      { path: 'b.txt', status: 'added' },
    ])
    expect(() => second.get(id)).toThrow('gone')
    await expect(first.adopt(id, taskId())).rejects.toThrow('gone')
  })
})

describe('workspaces shared by processes', () => {
  const limits = { maxFiles: 5, maxBytes: 1000 }
  const shared = join(root, 'shared')

  test("another process on the same root reads a task's files and diff while it runs and after it ends, until it expires", async () => {
    const owner = createWorkspaces({ root: shared, limits, retentionSeconds: 1, logger: memoryLogger() })
    const other = createWorkspaces({ root: shared, limits, retentionSeconds: 1, logger: memoryLogger() })
    const id = taskId()
    await owner.create(id, [{ path: 'a.txt', bytes: text('one\n') }], { importId: 'imp_1', commit: 'c0ffee' })
    await owner.write(id, 'a.txt', 'two\n')
    expect(other.get(id).base).toEqual({ importId: 'imp_1', commit: 'c0ffee' })
    expect(new TextDecoder().decode(await other.read(id, 'a.txt'))).toBe('two\n')
    expect((await other.diff(id)).files).toEqual([{ path: 'a.txt', status: 'modified' }])
    await owner.release(id)
    // The owner shuts down: an ended task's workspace stays for the others until it expires.
    await owner.close()
    expect((await other.list(id)).map((e) => e.path)).toEqual(['a.txt'])
    expect((await other.diff(id)).diff).toContain('+two')
    await Bun.sleep(1100)
    expect(() => other.get(id)).toThrow('gone')
    await other.sweepOrphans(3600)
    expect(existsSync(join(shared, id))).toBe(false)
  })

  test("a process's shutdown removes the workspaces of its tasks still running", async () => {
    const owner = createWorkspaces({ root: shared, limits, retentionSeconds: 60, logger: memoryLogger() })
    const id = taskId()
    const { tree } = await owner.create(id, [])
    await owner.close()
    expect(existsSync(tree)).toBe(false)
  })
})

describe('limits while a command runs', () => {
  const watched = createWorkspaces({
    root: join(root, 'watched'),
    limits: { maxFiles: 20, maxBytes: 10_000 },
    retentionSeconds: 60,
    watchIntervalMs: 20,
    logger: memoryLogger(),
  })
  afterAll(() => watched.close())

  test('directories count against the limit like files', async () => {
    const id = taskId()
    const { tree } = await watched.create(id, [])
    for (let i = 0; i < 21; i++) Bun.spawnSync(['mkdir', join(tree, `d${i}`)])
    expect((await watched.usage(id)).problem).toBe('21 directories (at most 20)')
  })

  test('a command flooding the tree is stopped as it passes a limit, not when it ends', async () => {
    const id = taskId()
    const { tree } = await watched.create(id, [])
    const { value, problem } = await watched.whileWithinLimits(id, undefined, async (signal) => {
      // Stands in for a sandboxed command: writes until stopped, or for 10 s.
      for (let i = 0; i < 1000 && !signal.aborted; i++) {
        writeFileSync(join(tree, `f${i % 10}`), 'x'.repeat(2000))
        await Bun.sleep(10)
      }
      return signal.aborted ? 'stopped' : 'ran to the end'
    })
    expect(value).toBe('stopped')
    expect(problem).toMatch(/bytes \(at most 10000\)/)
  })

  test("the caller's cancel reaches the command, and a tree within the limits passes", async () => {
    const id = taskId()
    await watched.create(id, [])
    const cancel = new AbortController()
    setTimeout(() => cancel.abort(new Error('cancelled')), 50)
    const outcome = await watched.whileWithinLimits(
      id,
      cancel.signal,
      (signal) => new Promise<string>((resolve) => signal.addEventListener('abort', () => resolve(String(signal.reason)))),
    )
    expect(outcome).toEqual({ value: 'Error: cancelled' })
  })
})

describe('a filesystem of its own per workspace', () => {
  const asRoot = process.getuid?.() === 0
  if (!asRoot) console.warn('skipped: a workspace gets a filesystem of its own only when the service runs as root')

  test.if(asRoot)('a command writing past the workspace size fails inside the sandbox with ENOSPC, whatever it writes', async () => {
    const limits = { maxFiles: 20, maxBytes: 64 * 1024 }
    const sized = createWorkspaces({ root: join(root, 'sized'), limits, retentionSeconds: 60, logger: memoryLogger() })
    closeLater.push(sized)
    const { sandbox } = makeSandbox({ hiddenPaths: [root] })
    try {
      const id = taskId()
      const { tree } = await sized.create(id, [{ path: 'a.txt', bytes: text('a\n') }])
      // No RLIMIT_FSIZE and no watcher: only the filesystem stands in the way.
      const result = await sandbox.runCommand({
        directory: tree,
        command: 'head -c 100000000 /dev/zero > big; echo "exit $?"; i=0; while touch f$i 2>/dev/null; do i=$((i+1)); done; echo "files $i"',
      })
      expect(result.output).toContain('No space left on device')
      const files = Number(/files (\d+)/.exec(result.output)![1])
      expect(files).toBeLessThan(2 * limits.maxFiles + 16)
      const held = Number(Bun.spawnSync(['du', '-s', '--apparent-size', '--block-size=1', tree]).stdout.toString().split('\t')[0])
      expect(held).toBeLessThanOrEqual(imageBytes(limits))
      // The service's own writes hit the same wall, and say so.
      await expect(sized.write(id, 'more.txt', 'x'.repeat(1000))).rejects.toThrow(/size limit|limits|would make the workspace hold/)
    } finally {
      await sandbox.close()
    }
  })
})
