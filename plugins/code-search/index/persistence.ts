/**
 * Where organisation indexes outlive the process: one snapshot file per organisation and version in
 * DATA_DIR/code-index/<org>/, and the current version of each in the database (code_index_versions),
 * which is what every process sharing the database consults to notice a newer snapshot.
 *
 * A snapshot is written to a temporary file, flushed and renamed into place under a name of its own, and
 * only then claimed in the database with a compare-and-set on the version: the file the database names
 * is always complete, and of two processes saving on the same version exactly one wins.
 *
 * A save writes only what changed: the next version's file is the previous one, copied by the kernel,
 * with one segment appended holding the changes since (see changes.ts). Now and then a Worker compacts
 * the file into one base section (the whole index as Orama saves it), so loading stays fast; neither
 * the copy, the compression, the writes nor the compaction run on the event loop.
 *
 * Format 2: "CIDX", format version (u32), then sections, each a kind (u32) and length-prefixed (u32)
 * blocks: a base (kind 1) has a JSON header, Orama's saved state as JSON and the vector block (see
 * VectorStore.serialise), both compressed with zstd (level 1: code compresses about 4.5 times, for a third
 * more time spent saving); a segment (kind 2) has a JSON header and its encoded changes, uncompressed, so
 * the event loop never copies or compresses them. The last section's header describes the whole file.
 * Format 1 (a base alone, without the kind) is still read.
 */
import { copyFile, link, mkdir, open, readdir, rename, rm, stat } from 'node:fs/promises'
import { join } from 'node:path'
import type { RawData } from '@orama/orama'
import type { Database } from '../../../src/storage/database.ts'
import { toNumber } from '../../../src/storage/database.ts'
import { timeSlices } from '../../../src/time-slices.ts'
import { VectorStore } from '../vectors/index.ts'
import { applyChange, decodeChanges, type Change } from './changes.ts'
import { EnumIndex, type SavedEnumIndex } from './enum-index.ts'
import type { PreparedTables } from './orama.ts'
import type { OrgIndex } from './org-index.ts'
import { PostingLists, type PackedPostings } from './postings.ts'

/**
 * The in-memory index and Orama under it, required by the first index decoded or created rather than at start-up
 * (this file also holds the snapshot store, built then).
 */
export const orgIndexModule = () => require('./org-index.ts') as typeof import('./org-index.ts')

/**
 * The same module imported asynchronously: loading it (Orama's modules among them) takes some 40 ms, which a
 * require does in one turn of the event loop and an import spreads over several.
 */
export const loadOrgIndexModule = () => import('./org-index.ts')

const MAGIC = 'CIDX'
const FORMAT = 2
const BASE = 1
const SEGMENT = 2

export interface SnapshotHeader {
  orgId: string
  version: number
  /** EmbeddingProvider.id of the vectors inside. */
  embeddings: string
  /** 0 when the index holds no vector. */
  dimensions: number
  slots: number
  chunks: number
  savedAt: number
  /** Shared by every version appended to one first section; a compaction starts a new chain. */
  chain?: string
}

const encoder = new TextEncoder()
const decoder = new TextDecoder()

function section(kind: number, blocks: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(4 + blocks.reduce((sum, block) => sum + 4 + block.length, 0))
  const view = new DataView(out.buffer)
  view.setUint32(0, kind)
  let at = 4
  for (const block of blocks) {
    view.setUint32(at, block.length)
    out.set(block, at + 4)
    at += 4 + block.length
  }
  return out
}

function fileOf(sections: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(8 + sections.reduce((sum, s) => sum + s.length, 0))
  out.set(encoder.encode(MAGIC), 0)
  new DataView(out.buffer).setUint32(4, FORMAT)
  let at = 8
  for (const s of sections) {
    out.set(s, at)
    at += s.length
  }
  return out
}

/** A whole snapshot: the index in one base section. Costly for a large index: the compaction Worker calls it. */
export function encodeSnapshot(index: OrgIndex, header: Omit<SnapshotHeader, 'dimensions' | 'slots' | 'chunks'>): Uint8Array {
  const vectors = index.vectors
  const full: SnapshotHeader = {
    chain: crypto.randomUUID(),
    ...header,
    dimensions: vectors?.dimensions ?? 0,
    slots: vectors?.slots ?? 0,
    chunks: index.chunkCount,
  }
  return fileOf([
    section(BASE, [
      encoder.encode(JSON.stringify(full)),
      Bun.zstdCompressSync(encoder.encode(JSON.stringify(index.saveDatabase())), { level: 1 }),
      Bun.zstdCompressSync(vectors?.serialise() ?? new Uint8Array(0), { level: 1 }),
    ]),
  ])
}

/**
 * One segment of already encoded changes (changes.ts), as the pieces to write one after the other: nothing
 * is copied or compressed on the event loop (the compaction compresses). `fresh` makes it a whole file,
 * for an index that was empty at the version it builds on; otherwise it is appended to that version's file.
 */
export function encodeSegment(changes: readonly Uint8Array[], header: SnapshotHeader, fresh: boolean): Uint8Array[] {
  const headerBlock = encoder.encode(JSON.stringify(header))
  const prefix = new Uint8Array((fresh ? 8 : 0) + 12 + headerBlock.length)
  const view = new DataView(prefix.buffer)
  let at = 0
  if (fresh) {
    prefix.set(encoder.encode(MAGIC), 0)
    view.setUint32(4, FORMAT)
    at = 8
  }
  view.setUint32(at, SEGMENT)
  view.setUint32(at + 4, headerBlock.length)
  prefix.set(headerBlock, at + 8)
  view.setUint32(
    at + 8 + headerBlock.length,
    changes.reduce((sum, change) => sum + change.length, 0),
  )
  return [prefix, ...changes]
}

interface Section {
  kind: number
  header: SnapshotHeader
  blocks: Uint8Array[]
  /** Bytes of the whole section. */
  size: number
}

function sectionsOf(bytes: Uint8Array): Section[] {
  if (bytes.length < 8 || decoder.decode(bytes.subarray(0, 4)) !== MAGIC) throw new Error('not a code index snapshot')
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  const format = view.getUint32(4)
  if (format !== 1 && format !== FORMAT) throw new Error(`snapshot format ${format} is not ${FORMAT}`)
  const block = (at: number) => {
    if (at + 4 > bytes.length) throw new Error('snapshot is truncated')
    const length = view.getUint32(at)
    if (at + 4 + length > bytes.length) throw new Error('snapshot is truncated')
    return bytes.subarray(at + 4, at + 4 + length)
  }
  const sections: Section[] = []
  for (let at = 8; at < bytes.length; ) {
    const start = at
    const kind = format === 1 ? BASE : view.getUint32(at)
    if (format !== 1) at += 4
    if (kind !== BASE && kind !== SEGMENT) throw new Error(`snapshot section of unknown kind ${kind}`)
    const blocks: Uint8Array[] = []
    for (let i = 0; i < (kind === BASE ? 3 : 2); i++) {
      const b = block(at)
      blocks.push(b)
      at += 4 + b.length
    }
    // Sized as in format 2, which a format 1 file becomes when a segment is appended to it.
    sections.push({ kind, header: JSON.parse(decoder.decode(blocks[0])), blocks: blocks.slice(1), size: at - start + (format === 1 ? 4 : 0) })
    if (format === 1) break
  }
  if (sections.length === 0) throw new Error('snapshot is truncated')
  return sections
}

export function decodeSnapshotHeader(bytes: Uint8Array): SnapshotHeader {
  return sectionsOf(bytes).at(-1)!.header
}

/** How a decoded snapshot is laid out: what deciding to compact it, or to read only its new segments, needs. */
export interface SnapshotLayout {
  chain: string | undefined
  sections: number
  baseBytes: number
  segmentBytes: number
}

export function decodeSnapshot(bytes: Uint8Array): { header: SnapshotHeader; index: OrgIndex; layout: SnapshotLayout } {
  const { OrgIndex } = orgIndexModule()
  const sections = sectionsOf(bytes)
  let index: OrgIndex | undefined
  for (const { kind, header, blocks } of sections) {
    if (kind === BASE) {
      const [databaseBlock, vectorBlock] = blocks
      const vectors =
        header.dimensions > 0 ? VectorStore.deserialise(header.dimensions, header.slots, new Uint8Array(Bun.zstdDecompressSync(vectorBlock!))) : undefined
      const raw = JSON.parse(decoder.decode(Bun.zstdDecompressSync(databaseBlock!))) as RawData
      index = OrgIndex.restore(raw, vectors)
    } else {
      index ??= new OrgIndex()
      for (const change of decodeChanges(blocks[0]!)) applyChange(index, change)
    }
  }
  return { header: sections.at(-1)!.header, index: index!, layout: layoutOf(sections) }
}

/**
 * A snapshot decoded as far as it can be off the event loop (on the snapshot Worker): Orama's saved state as
 * plain data, which crosses to the event loop by structured clone, and the vector block, transferred. What is
 * left for the event loop is restoreSnapshot: Orama's load and the index's own tables.
 */
export interface DecodedSnapshot {
  header: SnapshotHeader
  layout: SnapshotLayout
  raw: RawData
  vectors: { dimensions: number; slots: number; bytes: Uint8Array } | undefined
  /** Tables built from the pieces a Worker handed over (see handOverPieces); `raw` then holds the rest. */
  prepared?: PreparedTables
}

/** Decodes a snapshot into what restoreSnapshot takes; a base with segments is rebuilt and saved again first. */
export function decodeSnapshotData(bytes: Uint8Array): DecodedSnapshot {
  const sections = sectionsOf(bytes)
  const header = sections.at(-1)!.header
  const layout = layoutOf(sections)
  const only = sections.length === 1 && sections[0]!.kind === BASE ? sections[0]! : undefined
  if (only) {
    const [databaseBlock, vectorBlock] = only.blocks
    const raw = JSON.parse(decoder.decode(Bun.zstdDecompressSync(databaseBlock!))) as RawData
    const vectors =
      header.dimensions > 0 ? { dimensions: header.dimensions, slots: header.slots, bytes: new Uint8Array(Bun.zstdDecompressSync(vectorBlock!)) } : undefined
    return { header, layout, raw, vectors }
  }
  // Through JSON, as a base section would hold it: restoreSnapshot then sees exactly what a load of a base sees.
  const { index } = decodeSnapshot(bytes)
  const raw = JSON.parse(JSON.stringify(index.saveDatabase())) as RawData
  const store = index.vectors
  return { header, layout, raw, vectors: store ? { dimensions: store.dimensions, slots: store.slots, bytes: store.serialise() } : undefined }
}

/** The index a decoded snapshot holds, restored in slices of about `sliceMs` between turns of the event loop. */
export async function restoreSnapshot(decoded: DecodedSnapshot, sliceMs = RESTORE_SLICE_MS): Promise<OrgIndex> {
  const { OrgIndex } = await loadOrgIndexModule()
  const { raw, vectors, prepared } = decoded
  const giveWay = timeSlices(sliceMs)
  const store = vectors ? await VectorStore.deserialiseGivingWay(vectors.dimensions, vectors.slots, vectors.bytes, giveWay) : undefined
  await giveWay()
  return OrgIndex.restoreGivingWay(raw, store, giveWay, prepared)
}

/** Milliseconds of restoring a loaded snapshot between two turns of the event loop. */
const RESTORE_SLICE_MS = 4

function layoutOf(sections: Section[]): SnapshotLayout {
  const baseBytes = sections[0]!.kind === BASE ? sections[0]!.size : 0
  return { chain: sections[0]!.header.chain, sections: sections.length, baseBytes, segmentBytes: sections.reduce((sum, s) => sum + s.size, 0) - baseBytes }
}

/**
 * The changes a snapshot holds beyond its first `known` sections, when it extends the chain of a file
 * already loaded; undefined when it does not (another process compacted it), and it must be read whole.
 */
export function decodeSnapshotTail(
  bytes: Uint8Array,
  known: SnapshotLayout,
): { header: SnapshotHeader; changes: Change[]; layout: SnapshotLayout } | undefined {
  const sections = sectionsOf(bytes)
  if (!known.chain || sections[0]!.header.chain !== known.chain || sections.length < known.sections) return undefined
  const changes: Change[] = []
  for (const { blocks } of sections.slice(known.sections)) changes.push(...decodeChanges(blocks[0]!))
  return { header: sections.at(-1)!.header, changes, layout: layoutOf(sections) }
}

/** The snapshot the database names for an organisation. */
export interface SnapshotVersion {
  version: number
  /** File name inside the organisation's folder. */
  file: string
}

/** Snapshot files and the version table. */
export interface SnapshotStore {
  /** What the database names for the organisation; undefined when it has never been saved. */
  current(orgId: string): Promise<SnapshotVersion | undefined>
  read(orgId: string, snapshot: SnapshotVersion): Promise<Uint8Array>
  /**
   * The snapshot read and decoded (decodeSnapshotData): a large one on a Worker, off the event loop, telling
   * `aside` when it goes there; a small one here. Without it, read is decoded here.
   */
  decode?(orgId: string, snapshot: SnapshotVersion, aside?: () => void): Promise<DecodedSnapshot>
  /**
   * Writes version `base + 1` and claims it; undefined when another process claimed that version first.
   * With `appendTo` (the file of version `base`), `bytes` is a segment written after a copy of that file.
   */
  commit(orgId: string, base: number, bytes: Uint8Array | readonly Uint8Array[], appendTo?: string): Promise<SnapshotVersion | undefined>
  /** The snapshot rewritten as one base section, by a Worker; claim it with commit. */
  compact?(orgId: string, snapshot: SnapshotVersion): Promise<Uint8Array>
  /** Ends the snapshot Worker. */
  close?(): void
  /** Deletes every snapshot of the organisation and the database's record of its version (an organisation's deletion). */
  remove?(orgId: string): Promise<void>
}

export interface FileSnapshotStoreOptions {
  db: Database
  /** Snapshots go in `<dir>/<org>/<version>-<writer>.snapshot`. */
  dir: string
  now?: () => number
  /** Files of at least this many bytes are decoded on the snapshot Worker when loaded; default 512 KiB. */
  decodeOnWorkerFrom?: number
}

/** Snapshot files from this size are read and decoded on the snapshot Worker when loaded (about 1,000 chunks, 30 ms of decoding). */
const DECODE_ON_WORKER_FROM = 512 * 1024

/** Pieces handed to one writev: the usual IOV_MAX. */
const WRITEV_PIECES = 1024

// A file not named by the database and older than this belongs to a write that died or lost; younger
// ones may be a write in progress in another process.
const ORPHAN_AFTER_MS = 10 * 60_000

export function createFileSnapshotStore(options: FileSnapshotStoreOptions): SnapshotStore {
  const { db, dir } = options
  const now = options.now ?? Date.now
  const orgDir = (orgId: string) => join(dir, orgDirName(orgId))
  let compactor: Compactor | undefined
  let compactions = 0

  /** Runs a task on the snapshot Worker, started for it and ended once no task is under way. */
  async function onWorker<T>(task: (worker: Compactor) => Promise<T>): Promise<T> {
    compactor ??= startCompactor()
    compactions++
    try {
      return await task(compactor)
    } finally {
      // Ended once idle: it held a second copy of an index, and its heap keeps that size while it lives.
      if (--compactions === 0) {
        compactor?.terminate()
        compactor = undefined
      }
    }
  }

  async function writeDurably(path: string, pieces: Uint8Array | readonly Uint8Array[], append: boolean): Promise<void> {
    const file = await open(path, append ? 'a' : 'w', 0o600)
    const list = pieces instanceof Uint8Array ? [pieces] : pieces
    try {
      // A segment is one piece per file indexed, thousands for an import: written many to a call, not one each.
      for (let first = 0; first < list.length; first += WRITEV_PIECES) {
        const batch = list.slice(first, first + WRITEV_PIECES)
        let written = (await file.writev(batch as Uint8Array[])).bytesWritten
        // After a short write, the rest one piece at a time.
        for (const bytes of batch) {
          const done = Math.min(written, bytes.length)
          written -= done
          for (let at = done; at < bytes.length; ) at += (await file.write(bytes, at)).bytesWritten
        }
      }
      await file.sync()
    } finally {
      await file.close()
    }
  }

  /** Copies a snapshot to append a segment to it; one of format 1 gets format 2's header and section kind. */
  async function copyForAppend(from: string, to: string): Promise<void> {
    const head = new DataView((await Bun.file(from).slice(0, 8).arrayBuffer()) as ArrayBuffer)
    if (head.byteLength < 8 || head.getUint32(4) !== 1) return copyFile(from, to)
    const prefix = new Uint8Array(12)
    prefix.set(encoder.encode(MAGIC), 0)
    new DataView(prefix.buffer).setUint32(4, FORMAT)
    new DataView(prefix.buffer).setUint32(8, BASE)
    await writeDurably(to, prefix, false)
    await writeDurably(to, new Uint8Array(await Bun.file(from).slice(8).arrayBuffer()), true)
  }

  /** Removes older versions and orphans; a process still reading an old version retries on the new one. */
  async function prune(orgId: string, keep: string, keepVersion: number): Promise<void> {
    const folder = orgDir(orgId)
    for (const name of await readdir(folder)) {
      if (name === keep) continue
      const path = join(folder, name)
      const version = Number(/^(\d+)-/.exec(name)?.[1] ?? Number.NaN)
      try {
        if (version < keepVersion || now() - (await stat(path)).mtimeMs > ORPHAN_AFTER_MS) await rm(path, { force: true })
      } catch {
        // Another process pruned it first.
      }
    }
  }

  return {
    async remove(orgId) {
      // The record first: a process that then looks finds none, and drops what it holds (IndexLifecycle.refresh).
      await db.sql`DELETE FROM code_index_versions WHERE org_id = ${orgId}`
      await rm(orgDir(orgId), { recursive: true, force: true })
    },

    async current(orgId) {
      const [row] = await db.sql`SELECT version, snapshot FROM code_index_versions WHERE org_id = ${orgId}`
      return row ? { version: toNumber(row.version), file: String(row.snapshot) } : undefined
    },

    async read(orgId, snapshot) {
      return new Uint8Array(await Bun.file(join(orgDir(orgId), snapshot.file)).arrayBuffer())
    },

    async commit(orgId, base, bytes, appendTo) {
      const version = base + 1
      const folder = orgDir(orgId)
      await mkdir(folder, { recursive: true })
      // Each writer its own name: two processes saving the same version never overwrite each other's file.
      const file = `${version}-${crypto.randomUUID().slice(0, 12)}.snapshot`
      const temp = join(folder, `${file}.tmp`)
      try {
        if (appendTo) await copyForAppend(join(folder, appendTo), temp)
      } catch (error) {
        // The base version's file was pruned: a newer version was claimed, so this one cannot be.
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined
        throw error
      }
      await writeDurably(temp, bytes, appendTo !== undefined)
      await rename(temp, join(folder, file))
      const at = now()
      const claimed =
        base === 0
          ? await db.sql`INSERT INTO code_index_versions (org_id, version, snapshot, updated_at) VALUES (${orgId}, ${version}, ${file}, ${at}) ON CONFLICT (org_id) DO NOTHING RETURNING version`
          : await db.sql`UPDATE code_index_versions SET version = ${version}, snapshot = ${file}, updated_at = ${at} WHERE org_id = ${orgId} AND version = ${base} RETURNING version`
      if (claimed.length === 0) {
        await rm(join(folder, file), { force: true })
        return undefined
      }
      await prune(orgId, file, version)
      return { version, file }
    },

    async compact(orgId, snapshot) {
      // A link of its own, which pruning leaves alone until it is orphaned: a save claimed meanwhile prunes the file.
      const pinned = join(orgDir(orgId), `compacting-${crypto.randomUUID().slice(0, 12)}.tmp`)
      await link(join(orgDir(orgId), snapshot.file), pinned)
      try {
        return await onWorker((worker) => worker.compact(pinned, { orgId, version: snapshot.version + 1, savedAt: now() }))
      } finally {
        await rm(pinned, { force: true })
      }
    },

    async decode(orgId, snapshot, aside) {
      const path = join(orgDir(orgId), snapshot.file)
      // A small file decodes here in less time than a Worker takes to start.
      if ((await stat(path)).size < (options.decodeOnWorkerFrom ?? DECODE_ON_WORKER_FROM))
        return decodeSnapshotData(new Uint8Array(await Bun.file(path).arrayBuffer()))
      aside?.()
      // The Worker opens the file by name: a file pruned meanwhile is ENOENT there, as a read here would be.
      return onWorker((worker) => worker.decode(path))
    },

    close() {
      compactor?.terminate()
      compactor = undefined
    },
  }
}

interface Compactor {
  compact(path: string, header: CompactionHeader): Promise<Uint8Array>
  decode(path: string): Promise<DecodedSnapshot>
  terminate(): void
}

/**
 * A file to compact (with the header of the version it becomes), or, without a header, to decode for loading; or,
 * with `next`, the next piece of a decoded snapshot being handed over.
 */
export type CompactionRequest = { id: number; path: string; header?: CompactionHeader } | { id: number; next: true }

/** What a compacted snapshot's header takes from the request; the rest comes from the snapshot. */
export type CompactionHeader = Pick<SnapshotHeader, 'orgId' | 'version' | 'savedAt'>

/** Some of a decoded snapshot, handed over ahead of the rest (see handOverPieces). */
export type SnapshotPiece =
  /** Orama's document ids, in the order of their internal ids. */
  | { ids: string[] }
  | { documents: Record<string, unknown> }
  | { postings: { field: string } & PackedPostings }
  /** Some of one field's lengths by internal id. */
  | { lengths: { field: string; entries: Record<string, unknown> } }
  /** Some of an enum field's values, each with some of the internal ids holding it. */
  | { enums: { field: string; entries: [string, number[]][] } }

export type CompactionAnswer =
  | { id: number; bytes: Uint8Array }
  /** The last of a decoded snapshot: what its pieces did not hold, its vector block transferred. */
  | { id: number; decoded: DecodedSnapshot }
  | { id: number; piece: SnapshotPiece }
  | { id: number; error: string; code?: string }

/** How much a piece of a decoded snapshot holds at most; each piece is taken in a turn of its own. */
export interface PieceSizes {
  /** Stored chunks. */
  documents: number
  /** Terms of one field's postings. */
  terms: number
  /** Document ids, one field's lengths, or ids holding an enum field's values. */
  entries: number
}

/** Each a few milliseconds to take in. */
const PIECE_SIZES: PieceSizes = { documents: 500, terms: 4000, entries: 5000 }

type SavedDocuments = { docs: Record<string, unknown>; count: number }
type SavedIndex = {
  indexes: Record<string, { type: string; node: unknown; isArray: boolean }>
  fieldLengths?: Record<string, Record<string, unknown>>
  postings?: Record<string, [string, number[]][]>
}
type SavedState = { internalDocumentIDStore: { internalIdToId: string[] }; docs: SavedDocuments; index: SavedIndex }

/** An object's entries in pieces of at most `size` keys. */
function* objectPieces<T>(object: Record<string, T>, size: number): Generator<Record<string, T>> {
  let piece: Record<string, T> = {}
  let count = 0
  for (const key in object) {
    piece[key] = object[key]!
    if (++count < size) continue
    yield piece
    piece = {}
    count = 0
  }
  if (count > 0) yield piece
}

/**
 * A decoded snapshot as the pieces the Worker hands to the event loop, each with what it transfers: the document ids,
 * stored chunks, postings (packed as the index holds them), field lengths and enum filters, which are nearly all of
 * it and grow with the index, in pieces of a bounded size; last the rest, with the vector block. The event loop asks
 * for each piece once it has taken the one before and given way (see startCompactor), so however large the index,
 * no turn takes in more than one piece.
 */
export function* handOverPieces(decoded: DecodedSnapshot, sizes = PIECE_SIZES): Generator<[SnapshotPiece | DecodedSnapshot, ArrayBuffer[]]> {
  const saved = decoded.raw as unknown as SavedState
  const ids = saved.internalDocumentIDStore.internalIdToId
  for (let first = 0; first < ids.length; first += sizes.entries) yield [{ ids: ids.slice(first, first + sizes.entries) }, []]
  for (const documents of objectPieces(saved.docs.docs, sizes.documents)) yield [{ documents }, []]
  const index = saved.index
  for (const [field, entries] of Object.entries(index.postings ?? {}))
    for (let first = 0; first < entries.length; first += sizes.terms) {
      const packed = PostingLists.pack(entries.slice(first, first + sizes.terms))
      yield [{ postings: { field, ...packed } }, [packed.offsets.buffer as ArrayBuffer, packed.words.buffer as ArrayBuffer]]
    }
  const fieldLengths: Record<string, Record<string, unknown>> = {}
  for (const [field, lengths] of Object.entries(index.fieldLengths ?? {})) {
    fieldLengths[field] = {}
    for (const entries of objectPieces(lengths, sizes.entries)) yield [{ lengths: { field, entries } }, []]
  }
  const indexes = { ...index.indexes }
  for (const [field, entry] of Object.entries(index.indexes)) {
    const values = (entry.node as SavedEnumIndex | undefined)?.numberToDocumentId
    if (entry.type !== 'Flat' || !Array.isArray(values)) continue
    indexes[field] = { ...entry, node: { numberToDocumentId: [] } }
    let entries: [string, number[]][] = []
    let count = 0
    for (const [value, holders] of values)
      for (let first = 0; first < holders.length; ) {
        const taken = holders.slice(first, first + sizes.entries - count)
        entries.push([value, taken])
        first += taken.length
        count += taken.length
        if (count < sizes.entries) continue
        yield [{ enums: { field, entries } }, []]
        entries = []
        count = 0
      }
    if (count > 0) yield [{ enums: { field, entries } }, []]
  }
  const raw = {
    ...saved,
    internalDocumentIDStore: { internalIdToId: [] },
    docs: { docs: {}, count: saved.docs.count },
    index: { ...index, indexes, fieldLengths, postings: undefined },
  } as unknown as RawData
  yield [{ ...decoded, raw }, decoded.vectors ? [decoded.vectors.bytes.buffer as ArrayBuffer] : []]
}

/**
 * Takes in the pieces of a snapshot handed over, each as it comes, and gives the decoded snapshot they make with the
 * last: its tables built (PreparedTables), the rest of Orama's state filled in.
 */
export class HandOver {
  private readonly ids = { internalIdToId: [] as string[], idToInternalId: new Map<string, number>() }
  private readonly documents: Record<string, unknown> = {}
  private readonly postings: Record<string, PostingLists> = {}
  private readonly lengths: Record<string, Record<string, unknown>> = {}
  private readonly enums: Record<string, EnumIndex> = {}

  take(piece: SnapshotPiece): void {
    if ('ids' in piece) {
      const { internalIdToId, idToInternalId } = this.ids
      // As Orama's load: internal ids from 1, in order.
      for (const id of piece.ids) {
        internalIdToId.push(id)
        idToInternalId.set(id, internalIdToId.length)
      }
    } else if ('documents' in piece) Object.assign(this.documents, piece.documents)
    else if ('postings' in piece) (this.postings[piece.postings.field] ??= new PostingLists()).addPacked(piece.postings)
    else if ('lengths' in piece) Object.assign((this.lengths[piece.lengths.field] ??= {}), piece.lengths.entries)
    else {
      const index = (this.enums[piece.enums.field] ??= new EnumIndex())
      for (const [value, ids] of piece.enums.entries) for (const id of ids) index.insert(value, id)
    }
  }

  finish(decoded: DecodedSnapshot): DecodedSnapshot {
    const raw = decoded.raw as unknown as SavedState
    raw.docs.docs = this.documents
    raw.index.fieldLengths = { ...raw.index.fieldLengths, ...this.lengths }
    return { ...decoded, prepared: { ids: this.ids, enums: this.enums, postings: this.postings } }
  }
}

// In the standalone executable (`npm run build`, which names the Worker as a second entry point) modules live in
// Bun's embedded file system, where a Worker is found by its path from the build's root.
const COMPACTION_WORKER = import.meta.url.startsWith('file:///$bunfs/')
  ? './plugins/code-search/index/compaction-worker.ts'
  : new URL('./compaction-worker.ts', import.meta.url)

/** One Worker, started for a compaction and ended once none is under way, doing one organisation's at a time in the order asked. */
function startCompactor(): Compactor {
  const worker = new Worker(COMPACTION_WORKER)
  // An idle Worker must not keep the process alive.
  worker.unref()
  const waiting = new Map<number, { resolve(answer: Uint8Array | DecodedSnapshot): void; reject(error: Error): void }>()
  let nextId = 1
  /** Snapshots being handed over, by request. */
  const handOvers = new Map<number, HandOver>()
  const settle = (id: number) => {
    const caller = waiting.get(id)
    waiting.delete(id)
    handOvers.delete(id)
    if (waiting.size === 0) worker.unref()
    return caller
  }
  worker.onmessage = ({ data }: MessageEvent<CompactionAnswer>) => {
    if ('piece' in data) {
      const handOver = handOvers.get(data.id)
      if (!handOver) return
      try {
        handOver.take(data.piece)
      } catch (error) {
        settle(data.id)?.reject(error as Error)
        return
      }
      // Asked for once other work has had its turn: pieces arriving together would be taken in one turn.
      setImmediate(() => handOvers.has(data.id) && worker.postMessage({ id: data.id, next: true } satisfies CompactionRequest))
      return
    }
    const handOver = handOvers.get(data.id)
    const caller = settle(data.id)
    if ('bytes' in data) caller?.resolve(data.bytes)
    else if ('decoded' in data) caller?.resolve(handOver ? handOver.finish(data.decoded) : data.decoded)
    else caller?.reject(Object.assign(new Error(data.error), { code: data.code }))
  }
  const ask = <T>(request: { path: string; header?: CompactionHeader }) => {
    const id = nextId++
    worker.ref()
    if (!request.header) handOvers.set(id, new HandOver())
    worker.postMessage({ id, ...request } satisfies CompactionRequest)
    return new Promise<T>((resolve, reject) => waiting.set(id, { resolve: resolve as (answer: unknown) => void, reject }))
  }
  worker.onerror = (event) => {
    for (const caller of waiting.values()) caller.reject(new Error(`compaction worker failed: ${event.message}`))
    waiting.clear()
    handOvers.clear()
  }
  return {
    compact: (path, header) => ask<Uint8Array>({ path, header }),
    decode: (path) => ask<DecodedSnapshot>({ path }),
    terminate: () => worker.terminate(),
  }
}

/** A directory name for the organisation id: the id itself when it is plainly safe, else its hash. */
export function orgDirName(orgId: string): string {
  return /^[A-Za-z0-9_-]{1,100}$/.test(orgId) ? orgId : `h-${new Bun.CryptoHasher('sha256').update(orgId).digest('hex').slice(0, 32)}`
}
