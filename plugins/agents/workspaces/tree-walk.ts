/**
 * A walk of a workspace tree that a command may be changing under it, which never leaves the tree: each directory
 * is opened without following a link (O_NOFOLLOW, O_DIRECTORY) and then read, and its entries looked at, through
 * the descriptor it was opened as (`/proc/self/fd/<fd>/<name>`), so a directory swapped for a link after it was
 * seen cannot make the walk list, or look into, anything outside. Entries are visited in name order.
 */
import { closeSync, constants, fstatSync, openSync, readlinkSync, type BigIntStats } from 'node:fs'
import { lstat, readdir } from 'node:fs/promises'
import { isWithin } from '../../../src/paths.ts'

export interface TreeEntry {
  name: string
  /** Relative to the tree, `/` separated. */
  path: string
  /** Where the entry is reached through its directory's descriptor: to lstat or open it without a race on the way. */
  at: string
  /** Its lstat; undefined when it went away while the walk looked. */
  info: BigIntStats | undefined
}

/** What to do after an entry: go into it (a directory), or not. Returning 'stop' ends the whole walk. */
export type WalkStep = 'descend' | 'skip' | 'stop'

const DIRECTORY_FLAGS = constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW

/** Why a file of the tree was not opened: what the path is now. */
export type FileRefusal = 'symbolic link' | 'gone' | 'not a regular file' | 'hard link' | 'outside the workspace'

/**
 * Opens a file of the tree (at `treeReal`, resolved) without following a final link and without waiting on a FIFO,
 * then proves through /proc that what was opened is a regular file inside the tree with no other link (another
 * may be a file outside it). A command may change the path between a look and this open: whatever it became is
 * refused, never followed. Answers the descriptor, which the caller closes, or why it was refused.
 */
export function openFileInTree(treeReal: string, path: string, flags: number): { fd: number; info: BigIntStats } | FileRefusal {
  let fd: number
  try {
    fd = openSync(path, flags | constants.O_NOFOLLOW | constants.O_NONBLOCK | constants.O_NOCTTY, 0o644)
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code
    if (code === 'ELOOP') return 'symbolic link'
    if (code === 'ENOENT') return 'gone'
    if (code === 'ENOTDIR' || code === 'EISDIR' || code === 'ENXIO' || code === 'EACCES' || code === 'EPERM') return 'not a regular file'
    throw err
  }
  const refused = (why: FileRefusal) => {
    closeSync(fd)
    return why
  }
  if (!isWithin(readlinkSync(`/proc/self/fd/${fd}`), treeReal)) return refused('outside the workspace')
  const info = fstatSync(fd, { bigint: true })
  if (!info.isFile()) return refused('not a regular file')
  if (info.nlink > 1n) return refused('hard link')
  return { fd, info }
}

/** Opens a directory of the tree to read it through its descriptor; undefined when it is a link now, or gone. */
export function openDirectory(path: string): number | undefined {
  try {
    return openSync(path, DIRECTORY_FLAGS)
  } catch {
    return undefined
  }
}

/** The path of `name` in the directory open as `fd`, resolved through the descriptor. */
export const inDirectory = (fd: number, name: string) => `/proc/self/fd/${fd}/${name}`

/** The names in the directory open as `fd`, in name order. */
export async function namesIn(fd: number): Promise<string[]> {
  const names = await readdir(`/proc/self/fd/${fd}`).catch(() => [] as string[])
  return names.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))
}

/**
 * Walks `root` (which must be a directory, not a link), handing each entry to `visit`. With `inside`, the directory
 * opened must be `inside` or lie under it (a directory on the way to `root` may have been swapped for a link).
 */
export async function walkTree(root: string, visit: (entry: TreeEntry) => Promise<WalkStep> | WalkStep, inside?: string): Promise<void> {
  const fd = openSync(root, DIRECTORY_FLAGS)
  try {
    if (inside !== undefined) {
      if (!isWithin(readlinkSync(`/proc/self/fd/${fd}`), inside)) throw new Error(`${root} leads outside ${inside}`)
    }
    await walkDirectory(fd, '', visit)
  } finally {
    closeSync(fd)
  }
}

/** Walks the directory open as `fd`; false once a visit asked to stop. */
async function walkDirectory(fd: number, prefix: string, visit: (entry: TreeEntry) => Promise<WalkStep> | WalkStep): Promise<boolean> {
  for (const name of await namesIn(fd)) {
    const at = inDirectory(fd, name)
    const entry: TreeEntry = { name, path: prefix ? `${prefix}/${name}` : name, at, info: await lstat(at, { bigint: true }).catch(() => undefined) }
    const step = await visit(entry)
    if (step === 'stop') return false
    if (step !== 'descend' || !entry.info?.isDirectory()) continue
    // Undefined when it became a link, or went away, since it was seen.
    const child = openDirectory(at)
    if (child === undefined) continue
    try {
      if (!(await walkDirectory(child, entry.path, visit))) return false
    } finally {
      closeSync(child)
    }
  }
  return true
}
