/**
 * What turns one commit's tree into another's, read straight from the packs (pack-reader.ts) rather than through
 * isomorphic-git's walk, which listed the pack directory and tried a loose object before every object it read and
 * inflated with pako: on a repository of 8,000 files that walk took a fifth of the checkout. Unchanged subtrees
 * (same id) are skipped. Every entry name is checked as git's verify_path checks it, with the same rules
 * isomorphic-git applied (separators, `.` and `..`, `.git` in any case with NTFS and HFS+ spellings, `git~1`),
 * and every path again by assertSafePath, before anything is written.
 */
import * as fs from 'node:fs'
import { dirname } from 'node:path'
import { AppError } from '../../src/errors.ts'
import { timeSlices } from '../../src/time-slices.ts'
import { isomorphicGit } from './git.ts'
import { openPackReader, type ObjectTypeName, type PackReader } from './pack-reader.ts'
import { assertSafePath, unsafePathError } from './workspace.ts'

export type EntryKind = 'file' | 'link' | 'submodule'

export interface TreeEntry {
  path: string
  kind: EntryKind
  oid: string
}

export interface TreeDiff {
  /** Entries to write, sorted by path. */
  write: TreeEntry[]
  /** Top-most paths to delete before writing (a removed directory once, not each file in it). */
  remove: string[]
  /** Every file or link path of the old tree that is gone or replaced by a directory, for the index. */
  removedFiles: string[]
  /** Change in the number of files and links. */
  fileDelta: number
}

interface Entry {
  name: string
  kind: EntryKind | 'tree'
  oid: string
}

/** Trees and commits are read whole; none of a real repository comes near this. */
const MAX_TREE_BYTES = 64 * 1024 * 1024
/** Milliseconds of the walk between turns of the event loop. */
const SLICE_MS = 4

const invalid = (why: string) => new AppError('upstream_error', `The repository holds a tree that is not valid Git: ${why}`)

// Characters HFS+ ignores in names, so `.g\u200cit` is `.git` there.
const HFS_IGNORED = /[\u200C-\u200F\u202A-\u202E\u206A-\u206F\uFEFF]/g

function refusedName(name: string): boolean {
  const hfsClean = name.replace(HFS_IGNORED, '')
  // An NTFS alternate data stream (`.git::$INDEX_ALLOCATION`) names the part before the first colon.
  const normalized = hfsClean
    .split(':')[0]!
    .toLowerCase()
    .replace(/[. ]+$/, '')
  return name.includes('\\') || name.includes('/') || hfsClean === '.' || hfsClean === '..' || normalized === '.git' || /^\.?git~[1-9]$/.test(normalized)
}

function kindOfMode(mode: string): Entry['kind'] {
  if (mode === '40000' || mode === '040000') return 'tree'
  if (mode === '160000') return 'submodule'
  if (mode === '120000') return 'link'
  if (/^100[0-7]{3}$/.test(mode)) return 'file'
  throw invalid(`unknown entry mode ${mode}`)
}

/** A tree object's entries, sorted by name as the walk visits them. */
function parseTree(content: Buffer, path: string): Entry[] {
  const entries: Entry[] = []
  let at = 0
  while (at < content.byteLength) {
    const space = content.indexOf(0x20, at)
    const nul = space < 0 ? -1 : content.indexOf(0, space + 1)
    if (space < 0 || nul < 0 || nul + 21 > content.byteLength) throw invalid(`a damaged entry in ${path === '' ? 'the root' : path}`)
    const name = content.toString('utf8', space + 1, nul)
    if (refusedName(name)) throw unsafePathError(path === '' ? name : `${path}/${name}`, 'names an entry git refuses to check out')
    entries.push({ name, kind: kindOfMode(content.toString('latin1', at, space)), oid: content.toString('hex', nul + 1, nul + 21) })
    at = nul + 21
  }
  return entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
}

/**
 * Objects from the packs, or through isomorphic-git when none holds one (a loose object). isomorphic-git reads a
 * whole pack and hashes it in one go the first time it reads from it, which held the event loop 150 ms for a pack
 * of 23 MB.
 */
export async function objectReader(gitdir: string, cache: object): Promise<(oid: string) => Promise<{ type: ObjectTypeName; content: Buffer }>> {
  const packs: PackReader = await openPackReader(gitdir, { maxObjectBytes: MAX_TREE_BYTES })
  return async (oid) => {
    const packed = packs.readObject(oid)
    if (packed) return packed
    const git = await isomorphicGit()
    const { type, object } = await git.readObject({ fs, gitdir, cache, oid, format: 'content' })
    return { type: type as ObjectTypeName, content: Buffer.from(object as Uint8Array) }
  }
}

/** What turns the tree of `from` into the tree of `to`; without `from`, everything in `to`. */
export async function diffTrees(options: { gitdir: string; cache: object; from?: string; to: string; signal?: AbortSignal }): Promise<TreeDiff> {
  const { from, to, signal } = options
  const read = await objectReader(options.gitdir, options.cache)
  const diff: TreeDiff = { write: [], remove: [], removedFiles: [], fileDelta: 0 }
  const removedDirectories = new Set<string>()
  // Reading packed trees never waits on I/O: a tree of thousands of files would hold the event loop throughout.
  const giveWay = timeSlices(SLICE_MS)

  const treeOf = async (commit: string) => {
    const { type, content } = await read(commit)
    const tree = type === 'commit' ? /^tree ([0-9a-f]{40})\n/.exec(content.toString('latin1', 0, 46))?.[1] : undefined
    if (!tree) throw invalid(`${commit} is not a commit`)
    return tree
  }
  const entriesOf = async (oid: string, path: string) => {
    const { type, content } = await read(oid)
    if (type !== 'tree') throw invalid(`${path} is not a tree`)
    return parseTree(content, path)
  }

  // Parents before children, as the checkout's removals need.
  const visit = async (path: string, before: Entry | undefined, after: Entry | undefined): Promise<void> => {
    await giveWay()
    signal?.throwIfAborted()
    if (before && after && before.oid === after.oid) return
    assertSafePath(path)
    const oldKind = before?.kind
    const newKind = after?.kind
    if (oldKind && oldKind !== 'tree') {
      diff.fileDelta--
      if (!newKind || newKind === 'tree') diff.removedFiles.push(path)
    }
    // Something of another kind sits at the path, or it is gone: delete it first, unless a removed parent already covers it.
    if (oldKind && (oldKind !== newKind || oldKind === 'link' || oldKind === 'submodule')) {
      if (!removedDirectories.has(dirname(path))) diff.remove.push(path)
      if (oldKind === 'tree') removedDirectories.add(path)
    }
    if (newKind && newKind !== 'tree') {
      diff.write.push({ path, kind: newKind, oid: after!.oid })
      diff.fileDelta++
    }
    await descend(path, before?.kind === 'tree' ? before.oid : undefined, after?.kind === 'tree' ? after.oid : undefined)
  }

  const descend = async (path: string, beforeTree: string | undefined, afterTree: string | undefined): Promise<void> => {
    if (!beforeTree && !afterTree) return
    const older = beforeTree ? await entriesOf(beforeTree, path) : []
    const newer = afterTree ? await entriesOf(afterTree, path) : []
    // Both lists are sorted: walk them together.
    let i = 0
    let j = 0
    while (i < older.length || j < newer.length) {
      const a = older[i]
      const b = newer[j]
      const name = !b || (a && a.name < b.name) ? a!.name : b.name
      const before = a?.name === name ? a : undefined
      const after = b?.name === name ? b : undefined
      if (before) i++
      if (after) j++
      await visit(path === '' ? name : `${path}/${name}`, before, after)
    }
  }

  const beforeRoot = from ? await treeOf(from) : undefined
  const afterRoot = await treeOf(to)
  if (beforeRoot !== afterRoot) await descend('', beforeRoot, afterRoot)
  diff.write.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0))
  return diff
}
