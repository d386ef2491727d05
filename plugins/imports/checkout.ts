/**
 * Checking a commit out into a workspace tree, done here rather than by `git.checkout` so that every entry
 * passes our own checks before it touches the disk: the path stays inside the tree, nothing is written through
 * a symlink (O_NOFOLLOW, and every directory is lstat-ed once), files get mode 0644 whatever the tree says (so
 * nothing checked out is executable), and the file count, file size and total size limits hold before and while
 * writing. Symlinks are created as symlinks, as git does, and never followed. A re-import applies only the
 * difference between the two commits' trees (tree-diff.ts).
 */
import * as fs from 'node:fs'
import { constants } from 'node:fs'
import { lstat, mkdir, rm, symlink, writeFile } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import { AppError } from '../../src/errors.ts'
import { isomorphicGit } from './git.ts'
import { openPackReader } from './pack-reader.ts'
import type { TreeDiff, TreeEntry } from './tree-diff.ts'
import { unsafePathError, type WorktreeState } from './workspace.ts'

export interface CheckoutLimits {
  maxFiles: number
  maxFileBytes: number
  maxRepositoryBytes: number
}

export interface CheckoutOptions {
  gitdir: string
  tree: string
  cache: object
  diff: TreeDiff
  /** What the tree holds now; undefined for an empty tree. */
  current?: WorktreeState
  commit: string
  limits: CheckoutLimits
  signal?: AbortSignal
  onProgress?: (progress: { loaded: number; total: number }) => void | Promise<void>
}

const WRITE_FLAGS = constants.O_WRONLY | constants.O_CREAT | constants.O_TRUNC | constants.O_NOFOLLOW
// Reads inflate objects synchronously; a few writes in flight overlap the disk with that work.
const PARALLEL_WRITES = 8

async function sizeOf(path: string): Promise<number> {
  try {
    const stat = await lstat(path)
    return stat.isFile() || stat.isSymbolicLink() ? stat.size : 0
  } catch {
    return 0
  }
}

/** Applies a diff to the tree and answers the new tree state. Throws a limit error before exceeding a limit. */
export async function checkout(options: CheckoutOptions): Promise<WorktreeState> {
  const { gitdir, tree, cache, diff, limits, signal } = options
  const files = (options.current?.files ?? 0) + diff.fileDelta
  if (files > limits.maxFiles)
    throw new AppError('repository_too_many_files', `The repository has ${files} files, more than ${limits.maxFiles} (IMPORT_MAX_FILES)`, {
      extensions: { limit: limits.maxFiles },
    })

  let bytes = options.current?.bytes ?? 0
  for (const path of diff.remove) {
    signal?.throwIfAborted()
    const target = join(tree, path)
    bytes -= await bytesUnder(target)
    await rm(target, { recursive: true, force: true })
  }

  // One check per directory, shared by the writers that need it at the same time.
  const directories = new Map<string, Promise<void>>([['', Promise.resolve()]])
  function ensureDirectory(relative: string): Promise<void> {
    let ready = directories.get(relative)
    if (!ready) {
      ready = (async () => {
        await ensureDirectory(dirname(relative) === '.' ? '' : dirname(relative))
        const absolute = join(tree, relative)
        const stat = await lstat(absolute).catch(() => undefined)
        if (!stat) await mkdir(absolute)
        else if (!stat.isDirectory()) throw unsafePathError(relative, 'would be written through a symlink or a file')
      })()
      directories.set(relative, ready)
    }
    return ready
  }

  let loaded = 0
  const total = diff.write.length
  const git = await isomorphicGit()
  const packs = total > 0 ? await openPackReader(gitdir, { maxObjectBytes: limits.maxFileBytes }) : undefined
  const readBlob = async (entry: TreeEntry): Promise<Uint8Array> => {
    try {
      return packs?.readBlob(entry.oid) ?? (await git.readBlob({ fs, gitdir, cache, oid: entry.oid })).blob
    } catch (error) {
      if (error instanceof AppError && error.code === 'repository_file_too_large')
        throw new AppError('repository_file_too_large', `${entry.path}: ${error.message}`, { extensions: { ...error.options.extensions, path: entry.path } })
      throw error
    }
  }
  async function write(entry: TreeEntry): Promise<void> {
    signal?.throwIfAborted()
    const parent = dirname(entry.path)
    await ensureDirectory(parent === '.' ? '' : parent)
    const target = join(tree, entry.path)
    if (entry.kind === 'submodule') {
      await mkdir(target, { recursive: true })
    } else {
      const blob = await readBlob(entry)
      if (blob.byteLength > limits.maxFileBytes)
        throw new AppError('repository_file_too_large', `${entry.path} is ${blob.byteLength} bytes, more than ${limits.maxFileBytes} (IMPORT_MAX_FILE_BYTES)`, {
          extensions: { path: entry.path, limitBytes: limits.maxFileBytes },
        })
      bytes += blob.byteLength - (options.current ? await sizeOf(target) : 0)
      if (bytes > limits.maxRepositoryBytes)
        throw new AppError('repository_too_large', `The checked-out files pass ${limits.maxRepositoryBytes} bytes (IMPORT_MAX_REPOSITORY_BYTES)`, {
          extensions: { limitBytes: limits.maxRepositoryBytes },
        })
      if (entry.kind === 'link') {
        await rm(target, { force: true })
        await symlink(Buffer.from(blob).toString('utf8'), target)
      } else await writeFile(target, blob, { flag: WRITE_FLAGS, mode: 0o644 })
    }
    loaded++
    await options.onProgress?.({ loaded, total })
  }

  // Each writer creates the directories it needs; no other ordering between entries matters.
  // On the first failure every writer stops after its current entry, and all have stopped before this returns,
  // so a caller that removes the tree next does not race a write.
  let next = 0
  let failure: { error: unknown } | undefined
  const worker = async () => {
    while (!failure && next < diff.write.length) {
      try {
        await write(diff.write[next++]!)
      } catch (error) {
        failure ??= { error }
      }
    }
  }
  await Promise.all(Array.from({ length: Math.min(PARALLEL_WRITES, diff.write.length) }, worker))
  if (failure) throw failure.error
  return { commit: options.commit, files, bytes: Math.max(0, bytes) }
}

async function bytesUnder(path: string): Promise<number> {
  const stat = await lstat(path).catch(() => undefined)
  if (!stat) return 0
  if (!stat.isDirectory()) return stat.size
  let sum = 0
  for (const entry of await fs.promises.readdir(path)) sum += await bytesUnder(join(path, entry))
  return sum
}
