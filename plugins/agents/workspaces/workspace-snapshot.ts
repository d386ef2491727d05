/**
 * What a workspace's tree holds, read by the service with nothing of it interpreted: the walk never follows a
 * symbolic link (a link is recorded as a link), opens each file without following a final link and proves
 * through /proc that what it opened lies inside the tree, and leaves out what Git on the host would have acted
 * on or what a commit must not carry: nested `.git` entries (an embedded repository, a gitlink), files with
 * other hard links (they may be a file outside the tree), FIFOs, sockets and devices, and files the repository
 * ignores (its `.gitignore` files, and build output and caches by common convention) unless the base holds
 * them. `.gitignore` files are only parsed, as patterns.
 */
import { closeSync, constants, read, type BigIntStats } from 'node:fs'
import { lstat, readlink, realpath } from 'node:fs/promises'
import ignore, { type Ignore } from 'ignore'
import { TaskError } from '../tasks/index.ts'
import { inDirectory, namesIn, openDirectory, openFileInTree } from './tree-walk.ts'
import { blobId, type BlobEntry, type GitFileMode } from './workspace-git.ts'

/** Left out of every snapshot unless the base commit holds them: build output, caches and dependencies. */
export const CONVENTIONAL_IGNORES = [
  '__pycache__/',
  '*.py[cod]',
  '.pytest_cache/',
  '.mypy_cache/',
  '.ruff_cache/',
  '.tox/',
  '.venv/',
  '*.egg-info/',
  '.coverage',
  'coverage/',
  '.nyc_output/',
  'node_modules/',
  'dist/',
  // A command's HOME is the workspace: package managers' caches land here.
  '.bun/',
  '.npm/',
  '.cache/',
  '.DS_Store',
]

export type LeftOutReason = 'nested repository' | 'hard link' | 'not a regular file' | 'outside the workspace' | 'unreadable' | 'ignored'

export interface LeftOut {
  path: string
  reason: LeftOutReason
}

export interface Snapshot {
  entries: BlobEntry[]
  /** What the tree holds that the snapshot does not (at most MAX_NOTED of them), and how many in all. */
  leftOut: LeftOut[]
  leftOutCount: number
  /** Files read this time, stamped as they were when read: for the cache once their blobs are stored. */
  read: Map<string, CachedBlob>
}

/** What a file was when its blob id was last computed: a file with the same stamp has the same id. */
export interface CachedBlob {
  stamp: string
  oid: string
  mode: GitFileMode
}

export interface SnapshotOptions {
  tree: string
  limits: { maxFiles: number; maxBytes: number }
  /** Paths the base commit holds: kept even where an ignore rule matches, as Git keeps tracked files. */
  tracked: ReadonlySet<string>
  /** Blob ids of files seen before, by path; only ids already stored in the Git directory may be kept here. */
  cache: Map<string, CachedBlob>
}

const MAX_NOTED = 50
const MAX_IGNORE_FILE_BYTES = 256 * 1024

/** True for `.git` in any case, and for the names Windows and macOS read as `.git` (trailing dots and spaces). */
export const isGitName = (name: string) => name.toLowerCase().replace(/[. ]+$/, '') === '.git'

const stampOf = (info: BigIntStats) => `${info.dev}:${info.ino}:${info.size}:${info.mtimeNs}:${info.ctimeNs}:${info.mode}`

interface IgnoreLevel {
  /** The directory the rules were read in, relative to the tree ('' for the root). */
  base: string
  rules: Ignore
}

function isIgnored(levels: readonly IgnoreLevel[], path: string, directory: boolean): boolean {
  let ignored = false
  for (const level of levels) {
    if (level.base && !path.startsWith(`${level.base}/`)) continue
    const relative = (level.base ? path.slice(level.base.length + 1) : path) + (directory ? '/' : '')
    const verdict = level.rules.test(relative)
    if (verdict.ignored) ignored = true
    else if (verdict.unignored) ignored = false
  }
  return ignored
}

/** `read` at a position, awaited (node:util's promisify would cost start-up the whole module). */
const readAt = (fd: number, into: Uint8Array, offset: number, length: number, position: number) =>
  new Promise<number>((resolve, reject) => read(fd, into, offset, length, position, (err, bytesRead) => (err ? reject(err) : resolve(bytesRead))))

/** The bytes of a regular file of the tree with no other link (tree-walk.ts), or why it was left out. */
async function readInside(treeReal: string, absolute: string, maxBytes: number): Promise<{ bytes: Uint8Array; info: BigIntStats } | LeftOutReason> {
  const opened = openFileInTree(treeReal, absolute, constants.O_RDONLY)
  if (typeof opened === 'string') return opened === 'symbolic link' || opened === 'gone' ? 'unreadable' : opened
  const { fd, info } = opened
  try {
    if (info.size > BigInt(maxBytes)) throw new TaskError('workspace_limit', `The workspace holds a file over ${maxBytes} bytes`)
    const bytes = new Uint8Array(Number(info.size))
    let done = 0
    while (done < bytes.byteLength) {
      const bytesRead = await readAt(fd, bytes, done, bytes.byteLength - done, done)
      if (bytesRead === 0) break
      done += bytesRead
    }
    return { bytes: bytes.subarray(0, done), info }
  } finally {
    closeSync(fd)
  }
}

/** Reads the tree as Git blobs; files whose stamp is in the cache are not read again. */
export async function takeSnapshot(options: SnapshotOptions): Promise<Snapshot> {
  const { tree, limits, tracked, cache } = options
  const treeReal = await realpath(tree)
  const trackedDirectories = new Set<string>()
  for (const path of tracked) for (let at = path.indexOf('/'); at !== -1; at = path.indexOf('/', at + 1)) trackedDirectories.add(path.slice(0, at))
  const entries: BlobEntry[] = []
  const leftOut: LeftOut[] = []
  let leftOutCount = 0
  let bytes = 0
  const seen = new Set<string>()
  const fresh = new Map<string, CachedBlob>()
  const leave = (path: string, reason: LeftOutReason) => {
    leftOutCount++
    if (leftOut.length < MAX_NOTED) leftOut.push({ path, reason })
  }
  const count = (size: number) => {
    bytes += size
    if (entries.length > limits.maxFiles) throw new TaskError('workspace_limit', `The workspace holds more than ${limits.maxFiles} files`)
    if (bytes > limits.maxBytes) throw new TaskError('workspace_limit', `The workspace holds more than ${limits.maxBytes} bytes`)
  }

  const ignoreLevelAt = async (directory: number, base: string): Promise<IgnoreLevel | undefined> => {
    const read = await readInside(treeReal, inDirectory(directory, '.gitignore'), MAX_IGNORE_FILE_BYTES).catch(() => undefined)
    if (!read || typeof read === 'string') return undefined
    return { base, rules: ignore({ allowRelativePaths: true }).add(new TextDecoder().decode(read.bytes)) }
  }

  // Each directory is read through the descriptor it was opened as (tree-walk.ts): one a command swaps for a link
  // while it is read cannot lead the walk outside.
  const walk = async (directory: number, prefix: string, levels: IgnoreLevel[], insideIgnored: boolean): Promise<void> => {
    const own = await ignoreLevelAt(directory, prefix)
    const here = own ? [...levels, own] : levels
    for (const name of await namesIn(directory)) {
      const path = prefix ? `${prefix}/${name}` : name
      const absolute = inDirectory(directory, name)
      if (isGitName(name)) {
        leave(path, 'nested repository')
        continue
      }
      const info = await lstat(absolute, { bigint: true }).catch(() => undefined)
      if (!info) {
        leave(path, 'unreadable')
        continue
      }
      const directoryEntry = info.isDirectory()
      const ignored = insideIgnored || isIgnored(here, path, directoryEntry)
      if (ignored && !(directoryEntry ? trackedDirectories.has(path) : tracked.has(path))) {
        leave(directoryEntry ? `${path}/` : path, 'ignored')
        continue
      }
      if (directoryEntry) {
        const child = openDirectory(absolute)
        if (child === undefined) {
          leave(`${path}/`, 'outside the workspace')
          continue
        }
        try {
          await walk(child, path, here, ignored)
        } finally {
          closeSync(child)
        }
        continue
      }
      if (info.isSymbolicLink()) {
        const target = Buffer.from(await readlink(absolute).catch(() => ''))
        entries.push({ path, mode: '120000', oid: blobId(target), bytes: target })
        count(target.byteLength)
        continue
      }
      if (!info.isFile()) {
        leave(path, 'not a regular file')
        continue
      }
      if (info.nlink > 1n) {
        leave(path, 'hard link')
        continue
      }
      const mode: GitFileMode = (info.mode & 0o100n) !== 0n ? '100755' : '100644'
      const stamp = stampOf(info)
      const cached = cache.get(path)
      seen.add(path)
      if (cached && cached.stamp === stamp && cached.mode === mode) {
        entries.push({ path, mode, oid: cached.oid })
        count(Number(info.size))
        continue
      }
      const read = await readInside(treeReal, absolute, limits.maxBytes)
      if (typeof read === 'string') {
        leave(path, read)
        continue
      }
      const oid = blobId(read.bytes)
      entries.push({ path, mode, oid, bytes: read.bytes })
      fresh.set(path, { stamp: stampOf(read.info), oid, mode })
      count(read.bytes.byteLength)
    }
  }
  const root = openDirectory(tree)
  if (root === undefined) throw new TaskError('workspace_not_found', 'The workspace is not a directory')
  try {
    await walk(root, '', [{ base: '', rules: ignore().add(CONVENTIONAL_IGNORES) }], false)
  } finally {
    closeSync(root)
  }
  for (const path of cache.keys()) if (!seen.has(path)) cache.delete(path)
  return { entries, leftOut, leftOutCount, read: fresh }
}

/** Keeps the ids of the files a snapshot read, once its blobs are stored in the Git directory. */
export function rememberBlobs(snapshot: Snapshot, cache: Map<string, CachedBlob>): void {
  for (const [path, blob] of snapshot.read) cache.set(path, blob)
}

/** A line for the model and the log: what was left out of the diff, and why. */
export function describeLeftOut(snapshot: Snapshot): string | undefined {
  if (snapshot.leftOutCount === 0) return undefined
  const shown = snapshot.leftOut
    .filter((l) => l.reason !== 'ignored')
    .concat(snapshot.leftOut.filter((l) => l.reason === 'ignored'))
    .slice(0, 10)
    .map((l) => `${l.path} (${l.reason})`)
  const more = snapshot.leftOutCount - shown.length
  return `Left out of the diff: ${shown.join(', ')}${more > 0 ? `, and ${more} more` : ''}`
}
