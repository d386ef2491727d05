/**
 * Task workspaces: each development task works in a directory of its own, `<root>/<taskId>/tree`, holding an
 * import's files at its commit (or nothing, for a new project). The base is committed into a Git directory
 * beside the tree (`git/`), out of reach of the commands run in the tree, so the diff against it cannot be
 * forged from inside. Paths given to the file functions never leave the tree: `..`, absolute paths and symbolic
 * links anywhere on the way are refused, and what was opened is checked to lie inside the tree. A workspace
 * is removed `retentionSeconds` after its task ends.
 *
 * `<root>/<taskId>/workspace.json` records the base and, once the task ended, when the workspace expires: every
 * process sharing the root (the same DATA_DIR) reads any workspace through it, and removes expired ones.
 */
import { closeSync, constants, fstatSync, openSync, readFileSync, readlinkSync, readSync, writeSync, ftruncateSync } from 'node:fs'
import { lstat, mkdir, readdir, realpath, rename, rm, unlink, writeFile } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import type { Logger } from '../../src/log.ts'
import { TaskError } from './service.ts'

export interface WorkspaceLimits {
  /** Files (and symbolic links) the tree may hold; also the most directories it may hold. */
  maxFiles: number
  /** Bytes of all files together; also the largest file a command may write. */
  maxBytes: number
}

export interface WorkspaceFile {
  path: string
  bytes: Uint8Array
}

export interface WorkspaceEntry {
  path: string
  type: 'file' | 'symlink'
  bytes: number
}

export interface WorkspaceChange {
  path: string
  status: 'added' | 'modified' | 'deleted'
}

export interface WorkspaceUsage {
  files: number
  directories: number
  bytes: number
}

export interface TaskWorkspace {
  readonly taskId: string
  /** The files, as commands see them (mounted read-write in the sandbox). */
  readonly tree: string
  /** The import and commit the tree started from; undefined for a new project. */
  readonly base: { importId: string; commit: string } | undefined
}

export interface WorkspacesOptions {
  /** Where the workspaces live: a directory the sandbox hides (under DATA_DIR). */
  root: string
  limits: WorkspaceLimits
  retentionSeconds: number
  /** How often a running command's tree is measured against the limits. Default 200 ms. */
  watchIntervalMs?: number
  logger: Logger
}

/** Refused because of where a path leads or what it names: the model (or client) is told why. */
export class WorkspacePathError extends TaskError {
  constructor(path: string, why: string) {
    super('workspace_path_refused', `${JSON.stringify(path)} ${why}`)
  }
}

const SAFE_ID = /^[A-Za-z0-9_-]{1,100}$/

/** What `workspace.json` holds. */
interface WorkspaceRecord {
  base: TaskWorkspace['base'] | null
  baseCommit: string
  /** Epoch ms after which the workspace is gone; absent while its task runs. */
  expiresAt?: number
}

/** The `/` separated relative path's segments, or a refusal naming why it cannot name a file in the tree. */
export function pathSegments(path: string): string[] {
  if (typeof path !== 'string' || path === '') throw new WorkspacePathError(String(path), 'is empty')
  if (path.startsWith('/')) throw new WorkspacePathError(path, 'is absolute; paths are relative to the workspace')
  if (/[\0\\]/.test(path)) throw new WorkspacePathError(path, 'contains NUL or a backslash')
  const segments = path.split('/').filter((s) => s !== '' && s !== '.')
  if (segments.length === 0) throw new WorkspacePathError(path, 'names the workspace itself')
  if (segments.includes('..')) throw new WorkspacePathError(path, 'contains ".."; paths stay inside the workspace')
  if (segments.some((s) => s.toLowerCase().replace(/[. ]+$/, '') === '.git')) throw new WorkspacePathError(path, 'is inside a .git directory')
  if (segments.some((s) => Buffer.byteLength(s) > 255)) throw new WorkspacePathError(path, 'has a segment over 255 bytes')
  return segments
}

/** Git with no system or user configuration, so nothing outside the service decides what it runs. */
async function git(gitdir: string, tree: string, args: string[]): Promise<string> {
  const child = Bun.spawn(
    [
      'git',
      `--git-dir=${gitdir}`,
      `--work-tree=${tree}`,
      '-c',
      'core.autocrlf=false',
      '-c',
      'core.symlinks=true',
      '-c',
      'core.hooksPath=/dev/null',
      '-c',
      'core.quotePath=false',
      '-c',
      'user.name=agent',
      '-c',
      'user.email=agent@localhost',
      ...args,
    ],
    {
      cwd: tree,
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null', HOME: gitdir, LANG: 'C' },
      stdin: 'ignore',
      stdout: 'pipe',
      stderr: 'pipe',
    },
  )
  const [out, err, code] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited])
  if (code !== 0) throw new Error(`git ${args[0]} failed (${code}): ${err.trim().slice(0, 500)}`)
  return out
}

export function createWorkspaces(options: WorkspacesOptions) {
  const { root, limits, logger } = options
  const watchIntervalMs = options.watchIntervalMs ?? 200
  // This process's tasks' workspaces; others' are found through their record.
  const open = new Map<string, TaskWorkspace>()
  // The commit holding each workspace's base: diffs are against it, whatever is committed later.
  const baseCommits = new Map<string, string>()
  // Git's index allows one writer: diffs of one workspace run one after the other.
  const queues = new Map<string, Promise<unknown>>()
  const removals = new Map<string, Timer>()

  const dirOf = (taskId: string) => {
    if (!SAFE_ID.test(taskId)) throw new TaskError('task_not_found', `No workspace for ${taskId}`)
    return join(root, taskId)
  }
  const gitdirOf = (taskId: string) => join(dirOf(taskId), 'git')
  const treeOf = (taskId: string) => join(dirOf(taskId), 'tree')
  const recordOf = (taskId: string) => join(dirOf(taskId), 'workspace.json')

  function readRecord(taskId: string): WorkspaceRecord | undefined {
    try {
      return JSON.parse(readFileSync(recordOf(taskId), 'utf8')) as WorkspaceRecord
    } catch {
      return undefined
    }
  }

  /** Replaced whole (written aside, then renamed), so a reader never sees half a record. */
  async function writeRecord(taskId: string, record: WorkspaceRecord): Promise<void> {
    const aside = `${recordOf(taskId)}.${process.pid}.tmp`
    await writeFile(aside, JSON.stringify(record), { mode: 0o600 })
    await rename(aside, recordOf(taskId))
  }

  const expired = (record: WorkspaceRecord) => record.expiresAt !== undefined && record.expiresAt <= Date.now()

  function serialised<T>(taskId: string, work: () => Promise<T>): Promise<T> {
    const previous = queues.get(taskId) ?? Promise.resolve()
    const next = previous.then(work, work)
    queues.set(taskId, next.catch(() => undefined))
    return next
  }

  /**
   * The absolute path of `path` in the tree after checking every directory on the way is a real directory
   * (not a symbolic link). `final`: what the last segment may be when it exists.
   */
  async function locate(tree: string, path: string, final: 'file' | 'any'): Promise<{ absolute: string; exists: boolean }> {
    const segments = pathSegments(path)
    let current = tree
    for (let i = 0; i < segments.length; i++) {
      current = join(current, segments[i]!)
      const last = i === segments.length - 1
      const info = await lstat(current).catch((err: NodeJS.ErrnoException) => {
        if (err.code === 'ENOENT' || err.code === 'ENOTDIR') return undefined
        throw err
      })
      if (!info) return { absolute: join(tree, ...segments), exists: false }
      if (info.isSymbolicLink()) throw new WorkspacePathError(path, `goes through a symbolic link (${segments.slice(0, i + 1).join('/')}); links are not followed`)
      if (!last && !info.isDirectory()) throw new WorkspacePathError(path, `needs ${segments.slice(0, i + 1).join('/')} to be a directory`)
      if (last && final === 'file' && !info.isFile()) throw new WorkspacePathError(path, 'is not a regular file')
    }
    return { absolute: current, exists: true }
  }

  /** Opens without following a final link, then proves through /proc that the file opened is inside the tree. */
  async function openInside(tree: string, absolute: string, flags: number, path: string): Promise<number> {
    const fd = openSync(absolute, flags | constants.O_NOFOLLOW, 0o644)
    const real = await realpath(tree)
    const opened = readlinkSync(`/proc/self/fd/${fd}`)
    if (!opened.startsWith(`${real}/`)) {
      closeSync(fd)
      throw new WorkspacePathError(path, 'leads outside the workspace')
    }
    return fd
  }

  /**
   * What the tree holds. The walk stops as soon as a limit is passed, so a tree a command flooded with entries
   * costs no more to measure than one at its limits.
   */
  async function usage(tree: string): Promise<WorkspaceUsage> {
    const counted: WorkspaceUsage = { files: 0, directories: 0, bytes: 0 }
    const walk = async (dir: string): Promise<void> => {
      for (const entry of await readdir(dir, { withFileTypes: true }).catch(() => [])) {
        if (overLimit(counted)) return
        const full = join(dir, entry.name)
        if (entry.isDirectory()) {
          counted.directories++
          await walk(full)
        } else {
          counted.files++
          counted.bytes += (await lstat(full).catch(() => ({ size: 0 }))).size
        }
      }
    }
    await walk(tree)
    return counted
  }

  /**
   * Removes every entry named `.git` (any case) in the tree. Git never records one, and host-side Git would
   * treat a directory holding one as an embedded repository and read wherever its `gitdir:` points.
   */
  async function removeGitEntries(dir: string): Promise<void> {
    for (const entry of await readdir(dir, { withFileTypes: true }).catch(() => [])) {
      const full = join(dir, entry.name)
      if (entry.name.toLowerCase().replace(/[. ]+$/, '') === '.git') await rm(full, { recursive: true, force: true })
      else if (entry.isDirectory()) await removeGitEntries(full)
    }
  }

  const overLimit = (u: WorkspaceUsage) =>
    u.files > limits.maxFiles
      ? `${u.files} files (at most ${limits.maxFiles})`
      : u.directories > limits.maxFiles
        ? `${u.directories} directories (at most ${limits.maxFiles})`
        : u.bytes > limits.maxBytes
          ? `${u.bytes} bytes (at most ${limits.maxBytes})`
          : undefined

  function workspaceOf(taskId: string): TaskWorkspace {
    const found = open.get(taskId)
    if (found) return found
    // Another process's task, on the shared root.
    const record = readRecord(taskId)
    if (!record || expired(record)) throw new TaskError('workspace_not_found', `The workspace of ${taskId} is gone (removed after AGENT_TASK_RETENTION_SECONDS)`)
    return { taskId, tree: treeOf(taskId), base: record.base ?? undefined }
  }

  const baseCommitOf = (taskId: string) => baseCommits.get(taskId) ?? readRecord(taskId)?.baseCommit

  return {
    limits,

    /** A new workspace holding `files`, committed as its base. */
    async create(taskId: string, files: WorkspaceFile[], base?: TaskWorkspace['base']): Promise<TaskWorkspace> {
      const bytes = files.reduce((sum, f) => sum + f.bytes.byteLength, 0)
      const problem = overLimit({ files: files.length, directories: 0, bytes })
      if (problem) throw new TaskError('workspace_limit', `The repository holds ${problem}; AGENT_WORKSPACE_MAX_FILES and AGENT_WORKSPACE_MAX_BYTES bound a workspace`)
      const tree = treeOf(taskId)
      const gitdir = gitdirOf(taskId)
      try {
        await mkdir(tree, { recursive: true, mode: 0o700 })
        for (const file of files) {
          const { absolute } = await locate(tree, file.path, 'file')
          await mkdir(dirname(absolute), { recursive: true })
          await writeFile(absolute, file.bytes, { mode: 0o644 })
        }
        await git(gitdir, tree, ['init', '--quiet'])
        await git(gitdir, tree, ['add', '--all'])
        await git(gitdir, tree, ['commit', '--quiet', '--allow-empty', '--no-verify', '-m', base ? `base: ${base.commit}` : 'base: empty project'])
        const baseCommit = (await git(gitdir, tree, ['rev-parse', 'HEAD'])).trim()
        await writeRecord(taskId, { base: base ?? null, baseCommit })
        baseCommits.set(taskId, baseCommit)
      } catch (err) {
        await rm(dirOf(taskId), { recursive: true, force: true })
        throw err
      }
      const workspace = { taskId, tree, base }
      open.set(taskId, workspace)
      return workspace
    },

    get: workspaceOf,

    /** Files and symbolic links of the tree (or of one directory in it), sorted by path. */
    async list(taskId: string, directory = ''): Promise<WorkspaceEntry[]> {
      const { tree } = workspaceOf(taskId)
      let start = tree
      if (directory.replace(/[/.]/g, '') !== '') {
        const found = await locate(tree, directory, 'any')
        if (!found.exists) throw new TaskError('file_not_found', `No directory ${JSON.stringify(directory)} in the workspace`)
        if (!(await lstat(found.absolute)).isDirectory()) throw new WorkspacePathError(directory, 'is not a directory')
        start = found.absolute
      }
      const entries: WorkspaceEntry[] = []
      const walk = async (dir: string, prefix: string) => {
        for (const entry of await readdir(dir, { withFileTypes: true }).catch(() => [])) {
          const path = prefix ? `${prefix}/${entry.name}` : entry.name
          const full = join(dir, entry.name)
          if (entry.isDirectory()) await walk(full, path)
          else {
            // A running command may remove a file between the listing and this look.
            const info = await lstat(full).catch(() => undefined)
            if (info) entries.push({ path, type: info.isSymbolicLink() ? 'symlink' : 'file', bytes: info.size })
          }
        }
      }
      await walk(start, start === tree ? '' : pathSegments(directory).join('/'))
      return entries.sort((a, b) => (a.path < b.path ? -1 : 1))
    },

    /** A regular file's bytes; links are refused. */
    async read(taskId: string, path: string): Promise<Uint8Array> {
      const { tree } = workspaceOf(taskId)
      const { absolute, exists } = await locate(tree, path, 'file')
      if (!exists) throw new TaskError('file_not_found', `No file ${JSON.stringify(path)} in the workspace`)
      const fd = await openInside(tree, absolute, constants.O_RDONLY, path)
      try {
        const size = fstatSync(fd).size
        if (size > limits.maxBytes) throw new TaskError('workspace_limit', `${path} is larger than the workspace limit`)
        const buffer = new Uint8Array(size)
        let read = 0
        while (read < size) {
          const n = readSync(fd, buffer, read, size - read, read)
          if (n === 0) break
          read += n
        }
        return buffer.subarray(0, read)
      } finally {
        closeSync(fd)
      }
    },

    /** Writes (creating directories on the way); refused when the workspace would pass its limits. */
    async write(taskId: string, path: string, content: string | Uint8Array): Promise<void> {
      const { tree } = workspaceOf(taskId)
      const bytes = typeof content === 'string' ? Buffer.from(content) : content
      const { absolute, exists } = await locate(tree, path, 'file')
      const before = await usage(tree)
      const previous = exists ? (await lstat(absolute)).size : 0
      const problem = overLimit({ ...before, files: before.files + (exists ? 0 : 1), bytes: before.bytes - previous + bytes.byteLength })
      if (problem) throw new TaskError('workspace_limit', `Writing ${path} would make the workspace hold ${problem}`)
      await mkdir(dirname(absolute), { recursive: true })
      // Checked again after creating the directories: a directory on the way must not have become a link.
      await locate(tree, path, 'file')
      // Not truncated before the check, so a refused target is left as it was.
      const fd = await openInside(tree, absolute, constants.O_WRONLY | constants.O_CREAT, path)
      try {
        ftruncateSync(fd, 0)
        let written = 0
        while (written < bytes.byteLength) written += writeSync(fd, bytes, written, bytes.byteLength - written, written)
      } finally {
        closeSync(fd)
      }
    },

    /** Removes a file or a link (never what a link points to). */
    async delete(taskId: string, path: string): Promise<void> {
      const { tree } = workspaceOf(taskId)
      const segments = pathSegments(path)
      // The directories on the way are checked; the last segment may itself be a link, which unlink removes.
      if (segments.length > 1) await locate(tree, segments.slice(0, -1).join('/'), 'any')
      const absolute = join(tree, ...segments)
      const info = await lstat(absolute).catch(() => undefined)
      if (!info) throw new TaskError('file_not_found', `No file ${JSON.stringify(path)} in the workspace`)
      if (info.isDirectory()) throw new WorkspacePathError(path, 'is a directory')
      await unlink(absolute)
    },

    /** Files and bytes the tree holds now, and what is over a limit, if anything. */
    async usage(taskId: string): Promise<WorkspaceUsage & { problem?: string }> {
      const measured = await usage(workspaceOf(taskId).tree)
      const problem = overLimit(measured)
      return problem ? { ...measured, problem } : measured
    },

    /**
     * Runs `work` (a command in the tree) while measuring the tree, so a command that floods it is killed as it
     * passes a limit, not found over it afterwards: the signal handed to `work` aborts then (and when `signal` does).
     * Answers what `work` answered and the limit passed, if any, measured again once it ended.
     */
    async whileWithinLimits<T>(taskId: string, signal: AbortSignal | undefined, work: (signal: AbortSignal) => Promise<T>): Promise<{ value: T; problem?: string }> {
      const { tree } = workspaceOf(taskId)
      const controller = new AbortController()
      const abort = () => controller.abort(signal?.reason)
      if (signal?.aborted) abort()
      signal?.addEventListener('abort', abort, { once: true })
      let problem: string | undefined
      let timer: Timer | undefined
      let done = false
      const measure = async () => {
        const started = performance.now()
        problem = overLimit(await usage(tree))
        if (problem) controller.abort(new TaskError('workspace_limit', `The workspace holds ${problem}`))
        // A large tree is measured less often, so measuring never takes more than a fifth of the time.
        else if (!done) timer = setTimeout(measure, Math.max(watchIntervalMs, 4 * (performance.now() - started)))
      }
      timer = setTimeout(measure, watchIntervalMs)
      try {
        const value = await work(controller.signal)
        done = true
        clearTimeout(timer)
        problem ??= overLimit(await usage(tree))
        return problem ? { value, problem } : { value }
      } finally {
        done = true
        clearTimeout(timer)
        signal?.removeEventListener('abort', abort)
      }
    },

    /** The unified diff of the tree against its base, and the paths it changes. */
    diff(taskId: string): Promise<{ diff: string; files: WorkspaceChange[] }> {
      const { tree } = workspaceOf(taskId)
      const gitdir = gitdirOf(taskId)
      return serialised(taskId, async () => {
        await removeGitEntries(tree)
        await git(gitdir, tree, ['add', '--all'])
        const base = baseCommitOf(taskId)
        if (!base) throw new TaskError('workspace_not_found', `The workspace of ${taskId} is gone`)
        const diff = await git(gitdir, tree, ['diff', '--cached', '--no-color', '--no-ext-diff', '--no-renames', '--binary', '--full-index', base])
        const names = await git(gitdir, tree, ['diff', '--cached', '--no-renames', '--name-status', '-z', base])
        const parts = names.split('\0').filter(Boolean)
        const files: WorkspaceChange[] = []
        for (let i = 0; i + 1 < parts.length; i += 2) {
          const code = parts[i]!
          files.push({ path: parts[i + 1]!, status: code === 'A' ? 'added' : code === 'D' ? 'deleted' : 'modified' })
        }
        return { diff, files }
      })
    },

    /** Commits the tree on a new branch `branch` (from the base); answers the commit. */
    commit(taskId: string, branch: string, message: string): Promise<string> {
      const { tree } = workspaceOf(taskId)
      const gitdir = gitdirOf(taskId)
      return serialised(taskId, async () => {
        await git(gitdir, tree, ['check-ref-format', '--branch', branch])
        await git(gitdir, tree, ['checkout', '--quiet', '-b', branch])
        await removeGitEntries(tree)
        await git(gitdir, tree, ['add', '--all'])
        await git(gitdir, tree, ['commit', '--quiet', '--allow-empty', '--no-verify', '-m', message])
        return (await git(gitdir, tree, ['rev-parse', 'HEAD'])).trim()
      })
    },

    /** The task ended: its workspace is removed after the retention time (by whichever process sweeps first). */
    async release(taskId: string) {
      if (!open.has(taskId) || removals.has(taskId)) return
      const timer = setTimeout(() => void this.remove(taskId), options.retentionSeconds * 1000)
      timer.unref?.()
      removals.set(taskId, timer)
      const baseCommit = baseCommits.get(taskId)
      if (baseCommit)
        await writeRecord(taskId, { base: open.get(taskId)!.base ?? null, baseCommit, expiresAt: Date.now() + options.retentionSeconds * 1000 }).catch((err) =>
          logger.warn('agent workspace expiry not recorded', { err, taskId }),
        )
    },

    async remove(taskId: string) {
      clearTimeout(removals.get(taskId))
      removals.delete(taskId)
      open.delete(taskId)
      baseCommits.delete(taskId)
      queues.delete(taskId)
      await rm(dirOf(taskId), { recursive: true, force: true }).catch((err) => logger.warn('agent workspace not removed', { err, taskId }))
    },

    /**
     * Removes workspaces a stopped process left behind: those created more than `olderThanSeconds` ago (a task's
     * longest run plus the retention time), so another process sharing the directory keeps its own.
     */
    async sweepOrphans(olderThanSeconds: number) {
      const names = await readdir(root).catch(() => [] as string[])
      const before = Date.now() - olderThanSeconds * 1000
      for (const name of names) {
        if (open.has(name) || !SAFE_ID.test(name)) continue
        const record = readRecord(name)
        const info = await lstat(join(root, name)).catch(() => undefined)
        if ((record && expired(record)) || (info && info.mtimeMs < before)) await rm(join(root, name), { recursive: true, force: true })
      }
    },

    /**
     * Shutdown: the workspaces of tasks still running are removed (their tasks end here, interrupted); those of
     * ended tasks stay readable through other processes until they expire, and are swept then.
     */
    async close() {
      for (const timer of removals.values()) clearTimeout(timer)
      const running = [...open.keys()].filter((taskId) => !removals.has(taskId))
      removals.clear()
      await Promise.all(running.map((taskId) => this.remove(taskId)))
      open.clear()
    },
  }
}

export type Workspaces = ReturnType<typeof createWorkspaces>

/** Reads a file as text for the model; false when it does not look like text. */
export function asText(bytes: Uint8Array): string | undefined {
  if (bytes.includes(0)) return undefined
  return new TextDecoder().decode(bytes)
}
