/**
 * Task workspaces: each development task works in a directory of its own, `<root>/<taskId>/tree`, holding an
 * import's files at its commit (or nothing, for a new project), on a filesystem of its own where the machine
 * allows it (workspace-volume.ts). The base is committed into a bare Git directory beside the tree (`git/`), out
 * of reach of the commands run in the tree, so the diff against it cannot be forged from inside. Git never reads
 * the tree: the service reads it (workspace-snapshot.ts) and hands Git the bytes (workspace-git.ts). Paths given
 * to the file functions never leave the tree: `..`, absolute paths and symbolic links anywhere on the way are
 * refused, and what was opened is checked to lie inside the tree (tree-walk.ts). A workspace is removed
 * `retentionSeconds` after its task ends.
 *
 * `<root>/<taskId>/workspace.json` records the base and, once the task ended, when the workspace expires: every
 * process sharing the root (the same DATA_DIR) reads any workspace through it, and removes expired ones.
 */
import { closeSync, constants, fstatSync, readFileSync, readlinkSync, readSync, writeSync, ftruncateSync } from 'node:fs'
import { appendFile, lstat, mkdir, readdir, realpath, rename, rm, unlink, writeFile } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import { branchProblem } from '../../../src/branch-names.ts'
import { isWithin } from '../../../src/paths.ts'
import type { Logger } from '../../../src/log.ts'
import { TaskError } from '../tasks/index.ts'
import { blobId, commitTree, diffCommits, initBare, pathsOf, readBlobs, refExists, type GitFileMode } from './workspace-git.ts'
import { describeLeftOut, isGitName, rememberBlobs, takeSnapshot, type CachedBlob, type LeftOut, type Snapshot } from './workspace-snapshot.ts'
import { inDirectory, openDirectory, openFileInTree, walkTree, type FileRefusal } from './tree-walk.ts'
import { createWorkspaceVolumes, type WorkspaceVolumes } from './workspace-volume.ts'

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
  /** How each tree gets a filesystem of its own. Default: loop-mounted images where the machine allows them. */
  volumes?: WorkspaceVolumes
  logger: Logger
}

/** The tree against its base: the unified diff, the paths it changes, and what the snapshot left out. */
export interface WorkspaceDiff {
  diff: string
  files: WorkspaceChange[]
  leftOut: LeftOut[]
  /** One line naming what was left out, for the model and the task's log; undefined when nothing was. */
  note?: string
}

/** A commit of the tree, with what each changed path holds in it (null: deleted) and its mode. */
export interface WorkspaceCommit extends WorkspaceDiff {
  commit: string
  contents: Map<string, { bytes: Uint8Array; mode: GitFileMode } | null>
}

/** Refused because of where a path leads or what it names: the model (or client) is told why. */
export class WorkspacePathError extends TaskError {
  constructor(path: string, why: string) {
    super('workspace_path_refused', `${JSON.stringify(path)} ${why}`)
  }
}

const SAFE_ID = /^[A-Za-z0-9_-]{1,100}$/

/** What the model or client is told of a file the tree walk refused to open. */
const REFUSALS: Record<Exclude<FileRefusal, 'gone'>, string> = {
  'symbolic link': 'is a symbolic link; links are not followed',
  'not a regular file': 'is not a regular file',
  'hard link': 'has other hard links; they are not followed',
  'outside the workspace': 'leads outside the workspace',
}
/** The base commit's ref, and the one each diff's snapshot is stored under. */
const BASE_REF = 'refs/agent/base'
/** Beside `workspace.json`: the task's model conversation, for a follow-up. */
const CONVERSATION_FILE = 'conversation.jsonl'
const SNAPSHOT_REF = 'refs/agent/snapshot'
/** Workspaces whose blob ids, base paths and last diff a process keeps. */
const CACHED_WORKSPACES = 200

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
  if (segments.some(isGitName)) throw new WorkspacePathError(path, 'is inside a .git directory')
  if (segments.some((s) => Buffer.byteLength(s) > 255)) throw new WorkspacePathError(path, 'has a segment over 255 bytes')
  return segments
}

export function createWorkspaces(options: WorkspacesOptions) {
  const { root, limits, logger } = options
  const watchIntervalMs = options.watchIntervalMs ?? 200
  const volumes = options.volumes ?? createWorkspaceVolumes(logger)
  // Per workspace: blob ids of files already stored, and the paths the base holds.
  const blobCaches = new Map<string, Map<string, CachedBlob>>()
  const trackedPaths = new Map<string, Promise<Set<string>>>()
  // The last diff of each workspace, with the key of the tree it was taken of.
  const lastDiffs = new Map<string, { key: string; diff: WorkspaceDiff }>()
  // These only spare work: other processes' workspaces read here are never removed here, so the oldest go first.
  const remember = <T>(cache: Map<string, T>, taskId: string, value: T) => {
    cache.delete(taskId)
    cache.set(taskId, value)
    if (cache.size > CACHED_WORKSPACES) cache.delete(cache.keys().next().value!)
  }
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
    queues.set(
      taskId,
      next.catch(() => undefined),
    )
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
      if (info.isSymbolicLink())
        throw new WorkspacePathError(path, `goes through a symbolic link (${segments.slice(0, i + 1).join('/')}); links are not followed`)
      if (!last && !info.isDirectory()) throw new WorkspacePathError(path, `needs ${segments.slice(0, i + 1).join('/')} to be a directory`)
      if (last && final === 'file' && !info.isFile()) throw new WorkspacePathError(path, 'is not a regular file')
    }
    return { absolute: current, exists: true }
  }

  /** Creates the directories on the way to `path` one at a time, each checked to be a directory and not a link. */
  async function makeDirectories(tree: string, path: string): Promise<void> {
    const segments = pathSegments(path).slice(0, -1)
    let current = tree
    for (const [i, segment] of segments.entries()) {
      current = join(current, segment)
      await mkdir(current, { mode: 0o755 }).catch((err: NodeJS.ErrnoException) => {
        if (err.code === 'ENOSPC' || err.code === 'EDQUOT')
          throw new TaskError('workspace_limit', `Making the directories of ${path} would pass the workspace's limits`)
        if (err.code !== 'EEXIST') throw new WorkspacePathError(path, `cannot have ${segments.slice(0, i + 1).join('/')} as a directory`)
      })
      const info = await lstat(current).catch(() => undefined)
      if (!info?.isDirectory()) throw new WorkspacePathError(path, `needs ${segments.slice(0, i + 1).join('/')} to be a directory`)
    }
  }

  /** A file of the tree opened as openFileInTree (tree-walk.ts) opens it; a refusal tells the model or client why. */
  async function openInside(tree: string, absolute: string, flags: number, path: string): Promise<number> {
    let opened: ReturnType<typeof openFileInTree>
    try {
      opened = openFileInTree(await realpath(tree), absolute, flags)
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code
      if (code === 'ENOSPC' || code === 'EDQUOT') throw new TaskError('workspace_limit', `Writing ${path} would pass the workspace's size limit`)
      throw err
    }
    if (typeof opened !== 'string') return opened.fd
    if (opened === 'gone') throw new TaskError('file_not_found', `No file ${JSON.stringify(path)} in the workspace`)
    throw new WorkspacePathError(path, REFUSALS[opened])
  }

  /**
   * What the tree holds. The walk stops as soon as a limit is passed, so a tree a command flooded with entries
   * costs no more to measure than one at its limits.
   */
  async function usage(tree: string): Promise<WorkspaceUsage> {
    const counted: WorkspaceUsage = { files: 0, directories: 0, bytes: 0 }
    await walkTree(tree, (entry) => {
      if (overLimit(counted)) return 'stop'
      if (entry.info?.isDirectory()) {
        counted.directories++
        return 'descend'
      }
      counted.files++
      counted.bytes += Number(entry.info?.size ?? 0)
      return 'skip'
    }).catch(() => undefined)
    return counted
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
    if (!record || expired(record))
      throw new TaskError('workspace_not_found', `The workspace of ${taskId} is gone (removed after AGENT_TASK_RETENTION_SECONDS)`)
    volumes.attach(dirOf(taskId), treeOf(taskId))
    return { taskId, tree: treeOf(taskId), base: record.base ?? undefined }
  }

  const baseCommitOf = (taskId: string) => baseCommits.get(taskId) ?? readRecord(taskId)?.baseCommit

  const requireBase = (taskId: string) => {
    const base = baseCommitOf(taskId)
    if (!base) throw new TaskError('workspace_not_found', `The workspace of ${taskId} is gone`)
    return base
  }

  /** The paths the base holds: kept in every snapshot even where an ignore rule matches them. */
  function trackedOf(taskId: string): Promise<Set<string>> {
    let tracked = trackedPaths.get(taskId)
    if (!tracked) {
      tracked = pathsOf(gitdirOf(taskId), requireBase(taskId)).then((paths) => new Set(paths))
      tracked.catch(() => trackedPaths.delete(taskId))
      remember(trackedPaths, taskId, tracked)
    }
    return tracked
  }

  function blobCacheOf(taskId: string): Map<string, CachedBlob> {
    let cache = blobCaches.get(taskId)
    if (!cache) remember(blobCaches, taskId, (cache = new Map()))
    return cache
  }

  /** The tree as it is now, its unchanged files known by their stamps. */
  async function snapshotOf(taskId: string): Promise<Snapshot> {
    return takeSnapshot({ tree: treeOf(taskId), limits, tracked: await trackedOf(taskId), cache: blobCacheOf(taskId) })
  }

  /** Stores a snapshot as the whole tree of a new commit on `ref`, whose parent is the base. */
  async function commitSnapshot(taskId: string, snapshot: Snapshot, ref: string, message: string): Promise<string> {
    const commit = await commitTree(gitdirOf(taskId), ref, snapshot.entries, { parent: requireBase(taskId), message })
    rememberBlobs(snapshot, blobCacheOf(taskId))
    return commit
  }

  /** What a snapshot holds, as one key: its paths, modes and blob ids, and what it left out. */
  const treeKey = (snapshot: Snapshot) =>
    new Bun.CryptoHasher('sha1')
      .update(JSON.stringify([snapshot.entries.map((e) => [e.path, e.mode, e.oid]), snapshot.leftOut, snapshot.leftOutCount]))
      .digest('hex')

  const withChanges = (snapshot: Snapshot, changes: { diff: string; files: WorkspaceChange[] }): WorkspaceDiff => {
    const note = describeLeftOut(snapshot)
    return { ...changes, leftOut: snapshot.leftOut, ...(note ? { note } : {}) }
  }

  return {
    limits,

    /** A new workspace holding `files`, committed as its base. */
    async create(taskId: string, files: WorkspaceFile[], base?: TaskWorkspace['base']): Promise<TaskWorkspace> {
      const bytes = files.reduce((sum, f) => sum + f.bytes.byteLength, 0)
      const problem = overLimit({ files: files.length, directories: 0, bytes })
      if (problem)
        throw new TaskError('workspace_limit', `The repository holds ${problem}; AGENT_WORKSPACE_MAX_FILES and AGENT_WORKSPACE_MAX_BYTES bound a workspace`)
      const tree = treeOf(taskId)
      const gitdir = gitdirOf(taskId)
      try {
        await volumes.create(dirOf(taskId), tree, limits)
        const entries = []
        for (const file of files) {
          const { absolute } = await locate(tree, file.path, 'file')
          await mkdir(dirname(absolute), { recursive: true })
          await writeFile(absolute, file.bytes, { mode: 0o644 })
          entries.push({ path: pathSegments(file.path).join('/'), mode: '100644' as const, oid: blobId(file.bytes), bytes: file.bytes })
        }
        await initBare(gitdir)
        const baseCommit = await commitTree(gitdir, BASE_REF, entries, { message: base ? `base: ${base.commit}` : 'base: empty project' })
        await writeRecord(taskId, { base: base ?? null, baseCommit })
        baseCommits.set(taskId, baseCommit)
        remember(trackedPaths, taskId, Promise.resolve(new Set(entries.map((e) => e.path))))
      } catch (err) {
        await volumes.release(dirOf(taskId)).catch(() => {})
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
      const prefix = start === tree ? '' : `${pathSegments(directory).join('/')}/`
      await walkTree(
        start,
        ({ path, info }) => {
          // A running command may remove an entry between the listing and this look.
          if (!info) return 'skip'
          if (info.isDirectory()) return 'descend'
          entries.push({ path: prefix + path, type: info.isSymbolicLink() ? 'symlink' : 'file', bytes: Number(info.size) })
          return 'skip'
        },
        await realpath(tree),
      ).catch((err: NodeJS.ErrnoException) => {
        if (err.code === 'ENOENT' || err.code === 'ENOTDIR') throw new TaskError('file_not_found', `No directory ${JSON.stringify(directory)} in the workspace`)
        throw new WorkspacePathError(directory || '.', 'leads outside the workspace, or through a link')
      })
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
      await makeDirectories(tree, path)
      // Checked again after creating the directories: a directory on the way must not have become a link.
      await locate(tree, path, 'file')
      // Created through its directory's descriptor, opened without following a link and proved inside the tree:
      // a directory on the way swapped for a link since the look cannot have the file made elsewhere.
      const segments = pathSegments(path)
      const parent = openDirectory(join(tree, ...segments.slice(0, -1)))
      if (parent === undefined) throw new WorkspacePathError(path, 'needs its directory to be a directory, not a link')
      let fd: number
      try {
        if (!isWithin(readlinkSync(`/proc/self/fd/${parent}`), await realpath(tree))) throw new WorkspacePathError(path, 'leads outside the workspace')
        // Not truncated before the check, so a refused target is left as it was.
        fd = await openInside(tree, inDirectory(parent, segments.at(-1)!), constants.O_WRONLY | constants.O_CREAT, path)
      } finally {
        closeSync(parent)
      }
      try {
        ftruncateSync(fd, 0)
        let written = 0
        while (written < bytes.byteLength) written += writeSync(fd, bytes, written, bytes.byteLength - written, written)
      } catch (err) {
        // The workspace's own filesystem is full (its hard limit), or the file passed RLIMIT_FSIZE.
        const code = (err as NodeJS.ErrnoException).code
        if (code === 'ENOSPC' || code === 'EDQUOT' || code === 'EFBIG')
          throw new TaskError('workspace_limit', `Writing ${path} would pass the workspace's size limit`)
        throw err
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
      await unlink(absolute).catch((err: NodeJS.ErrnoException) => {
        if (err.code === 'ENOENT') throw new TaskError('file_not_found', `No file ${JSON.stringify(path)} in the workspace`)
        throw err
      })
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
    async whileWithinLimits<T>(
      taskId: string,
      signal: AbortSignal | undefined,
      work: (signal: AbortSignal) => Promise<T>,
    ): Promise<{ value: T; problem?: string }> {
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

    /** The unified diff of the tree against its base, the paths it changes, and what was left out of it. */
    diff(taskId: string): Promise<WorkspaceDiff> {
      workspaceOf(taskId)
      return serialised(taskId, async () => {
        const snapshot = await snapshotOf(taskId)
        // A tree read as it was at the last diff has that diff: no commit, no Git run.
        const key = treeKey(snapshot)
        const last = lastDiffs.get(taskId)
        if (last?.key === key) return last.diff
        const commit = await commitSnapshot(taskId, snapshot, SNAPSHOT_REF, 'snapshot')
        const diff = withChanges(snapshot, await diffCommits(gitdirOf(taskId), requireBase(taskId), commit))
        remember(lastDiffs, taskId, { key, diff })
        return diff
      })
    },

    /**
     * Commits the tree on a new branch `branch` from the base; refused with `branch_exists` when the branch is
     * there already. Answers the commit, its diff against the base and what each changed path holds in it.
     */
    commit(taskId: string, branch: string, message: string): Promise<WorkspaceCommit> {
      workspaceOf(taskId)
      const gitdir = gitdirOf(taskId)
      return serialised(taskId, async () => {
        const problem = branchProblem(branch)
        if (problem) throw new TaskError('invalid_branch', `branch ${JSON.stringify(branch)} ${problem}`)
        const ref = `refs/heads/${branch}`
        if (await refExists(gitdir, ref)) throw new TaskError('branch_exists', `The branch ${branch} exists already in this workspace`)
        const snapshot = await snapshotOf(taskId)
        const commit = await commitSnapshot(taskId, snapshot, ref, message)
        const changes = withChanges(snapshot, await diffCommits(gitdir, requireBase(taskId), commit))
        const byPath = new Map(snapshot.entries.map((e) => [e.path, e]))
        const kept = changes.files.filter((f) => f.status !== 'deleted').map((f) => byPath.get(f.path)!)
        const blobs = await readBlobs(
          gitdir,
          kept.filter((e) => !e.bytes).map((e) => e.oid),
        )
        const contents: WorkspaceCommit['contents'] = new Map()
        for (const file of changes.files) {
          const entry = byPath.get(file.path)
          contents.set(file.path, file.status === 'deleted' || !entry ? null : { bytes: entry.bytes ?? blobs.get(entry.oid)!, mode: entry.mode })
        }
        return { ...changes, commit, contents }
      })
    },

    /**
     * Starts the conversation kept beside a task's workspace, for a follow-up in any process: a header (what the
     * task was asked) and the messages so far, one JSON line each, replacing any earlier one whole.
     */
    async startConversation(taskId: string, header: unknown, messages: readonly unknown[]): Promise<void> {
      workspaceOf(taskId)
      const file = join(dirOf(taskId), CONVERSATION_FILE)
      const aside = `${file}.${process.pid}.tmp`
      await writeFile(aside, [header, ...messages].map((line) => `${JSON.stringify(line)}\n`).join(''), { mode: 0o600 })
      await rename(aside, file)
    },

    /** Adds messages to the kept conversation: each step writes only what it added. */
    async appendConversation(taskId: string, messages: readonly unknown[]): Promise<void> {
      workspaceOf(taskId)
      if (messages.length > 0) await appendFile(join(dirOf(taskId), CONVERSATION_FILE), messages.map((line) => `${JSON.stringify(line)}\n`).join(''))
    },

    /** The conversation kept beside a task's workspace, or undefined when none was; a line cut by a crash is left out. */
    loadConversation(taskId: string): { header: unknown; messages: unknown[] } | undefined {
      workspaceOf(taskId)
      let text: string
      try {
        text = readFileSync(join(dirOf(taskId), CONVERSATION_FILE), 'utf8')
      } catch {
        return undefined
      }
      const lines: unknown[] = []
      for (const line of text.split('\n')) {
        if (!line) continue
        try {
          lines.push(JSON.parse(line))
        } catch {
          break
        }
      }
      return lines.length === 0 ? undefined : { header: lines[0], messages: lines.slice(1) }
    },

    /**
     * Hands an ended task's workspace (its files, its base and its conversation) to the task that continues it.
     * The directory is renamed, so of two follow-ups of one task only one gets it; the other, and a read of the
     * earlier task's workspace afterwards, finds it gone (`workspace_not_found`).
     */
    async adopt(fromTaskId: string, toTaskId: string): Promise<TaskWorkspace> {
      const record = readRecord(fromTaskId)
      if (!record || expired(record))
        throw new TaskError('workspace_not_found', `The workspace of ${fromTaskId} is gone (removed after AGENT_TASK_RETENTION_SECONDS, or continued already)`)
      clearTimeout(removals.get(fromTaskId))
      removals.delete(fromTaskId)
      open.delete(fromTaskId)
      baseCommits.delete(fromTaskId)
      blobCaches.delete(fromTaskId)
      trackedPaths.delete(fromTaskId)
      lastDiffs.delete(fromTaskId)
      await volumes.release(dirOf(fromTaskId))
      try {
        await rename(dirOf(fromTaskId), dirOf(toTaskId))
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOENT')
          throw new TaskError('workspace_not_found', `The workspace of ${fromTaskId} is gone (continued already, or removed)`)
        throw err
      }
      volumes.attach(dirOf(toTaskId), treeOf(toTaskId))
      await writeRecord(toTaskId, { base: record.base, baseCommit: record.baseCommit })
      const workspace = { taskId: toTaskId, tree: treeOf(toTaskId), base: record.base ?? undefined }
      baseCommits.set(toTaskId, record.baseCommit)
      open.set(toTaskId, workspace)
      return workspace
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
      blobCaches.delete(taskId)
      trackedPaths.delete(taskId)
      lastDiffs.delete(taskId)
      queues.delete(taskId)
      await volumes.release(dirOf(taskId))
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
        if ((record && expired(record)) || (info && info.mtimeMs < before)) {
          await volumes.release(join(root, name))
          await rm(join(root, name), { recursive: true, force: true })
        }
      }
    },

    /**
     * Shutdown: the workspaces of tasks still running are removed (their tasks end here, interrupted); those of
     * ended tasks are unmounted but stay readable through other processes until they expire, and are swept then.
     */
    async close() {
      for (const timer of removals.values()) clearTimeout(timer)
      const running = [...open.keys()].filter((taskId) => !removals.has(taskId))
      const ended = [...removals.keys()]
      removals.clear()
      await Promise.all(running.map((taskId) => this.remove(taskId)))
      // The process leaves no mount behind: another one mounts an ended task's image again when it reads it.
      await Promise.all(ended.map((taskId) => volumes.release(dirOf(taskId))))
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
