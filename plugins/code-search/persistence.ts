/**
 * Where organisation indexes outlive the process: one snapshot file per organisation and version in
 * DATA_DIR/code-index/<org>/, and the current version of each in the database (code_index_versions),
 * which is what every process sharing the database consults to notice a newer snapshot.
 *
 * A snapshot is written to a temporary file, flushed and renamed into place under a name of its own, and
 * only then claimed in the database with a compare-and-set on the version: the file the database names
 * is always complete, and of two processes saving on the same version exactly one wins.
 *
 * Format: "CIDX", format version (u32), then three length-prefixed (u32) blocks: a JSON header, Orama's
 * saved state as JSON, and the vector block (see VectorStore.serialise), the last two compressed with zstd
 * (level 1: code compresses about 4.5 times, for a third more time spent saving).
 */
import { createHash } from 'node:crypto'
import { closeSync, fsyncSync, mkdirSync, openSync, readdirSync, renameSync, rmSync, statSync, writeSync } from 'node:fs'
import { join } from 'node:path'
import type { RawData } from '@orama/orama'
import type { Database } from '../../src/storage/database.ts'
import { toNumber } from '../../src/storage/database.ts'
import { OrgIndex } from './org-index.ts'
import { VectorStore } from './vectors.ts'

const MAGIC = 'CIDX'
const FORMAT = 1

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
}

export function encodeSnapshot(index: OrgIndex, header: Omit<SnapshotHeader, 'dimensions' | 'slots' | 'chunks'>): Uint8Array {
  const vectors = index.vectors
  const full: SnapshotHeader = { ...header, dimensions: vectors?.dimensions ?? 0, slots: vectors?.slots ?? 0, chunks: index.chunkCount }
  const encoder = new TextEncoder()
  const blocks = [
    encoder.encode(JSON.stringify(full)),
    Bun.zstdCompressSync(encoder.encode(JSON.stringify(index.saveDatabase())), { level: 1 }),
    Bun.zstdCompressSync(vectors?.serialise() ?? new Uint8Array(0), { level: 1 }),
  ]
  const out = new Uint8Array(8 + blocks.reduce((sum, block) => sum + 4 + block.length, 0))
  const view = new DataView(out.buffer)
  out.set(encoder.encode(MAGIC), 0)
  view.setUint32(4, FORMAT)
  let at = 8
  for (const block of blocks) {
    view.setUint32(at, block.length)
    out.set(block, at + 4)
    at += 4 + block.length
  }
  return out
}

export function decodeSnapshotHeader(bytes: Uint8Array): SnapshotHeader {
  return JSON.parse(new TextDecoder().decode(blocksOf(bytes)[0]))
}

export function decodeSnapshot(bytes: Uint8Array): { header: SnapshotHeader; index: OrgIndex } {
  const [headerBlock, databaseBlock, vectorBlock] = blocksOf(bytes)
  const decoder = new TextDecoder()
  const header = JSON.parse(decoder.decode(headerBlock)) as SnapshotHeader
  const vectors = header.dimensions > 0 ? VectorStore.deserialise(header.dimensions, header.slots, new Uint8Array(Bun.zstdDecompressSync(vectorBlock!))) : undefined
  const raw = JSON.parse(decoder.decode(Bun.zstdDecompressSync(databaseBlock!))) as RawData
  return { header, index: OrgIndex.restore(raw, vectors) }
}

function blocksOf(bytes: Uint8Array): Uint8Array[] {
  if (bytes.length < 8 || new TextDecoder().decode(bytes.subarray(0, 4)) !== MAGIC) throw new Error('not a code index snapshot')
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  if (view.getUint32(4) !== FORMAT) throw new Error(`snapshot format ${view.getUint32(4)} is not ${FORMAT}`)
  const blocks: Uint8Array[] = []
  let at = 8
  for (let i = 0; i < 3; i++) {
    if (at + 4 > bytes.length) throw new Error('snapshot is truncated')
    const length = view.getUint32(at)
    if (at + 4 + length > bytes.length) throw new Error('snapshot is truncated')
    blocks.push(bytes.subarray(at + 4, at + 4 + length))
    at += 4 + length
  }
  return blocks
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
  /** Writes version `base + 1` and claims it; false when another process claimed that version first. */
  commit(orgId: string, base: number, bytes: Uint8Array): Promise<boolean>
}

export interface FileSnapshotStoreOptions {
  db: Database
  /** Snapshots go in `<dir>/<org>/<version>-<writer>.snapshot`. */
  dir: string
  now?: () => number
}

// A file not named by the database and older than this belongs to a write that died or lost; younger
// ones may be a write in progress in another process.
const ORPHAN_AFTER_MS = 10 * 60_000

export function createFileSnapshotStore(options: FileSnapshotStoreOptions): SnapshotStore {
  const { db, dir } = options
  const now = options.now ?? Date.now
  const orgDir = (orgId: string) => join(dir, orgDirName(orgId))

  function writeDurably(path: string, bytes: Uint8Array): void {
    const fd = openSync(path, 'w', 0o600)
    try {
      let written = 0
      while (written < bytes.length) written += writeSync(fd, bytes, written)
      fsyncSync(fd)
    } finally {
      closeSync(fd)
    }
  }

  /** Removes older versions and orphans; a process still reading an old version retries on the new one. */
  function prune(orgId: string, keep: string, keepVersion: number): void {
    const folder = orgDir(orgId)
    for (const name of readdirSync(folder)) {
      if (name === keep) continue
      const path = join(folder, name)
      const version = Number(/^(\d+)-/.exec(name)?.[1] ?? Number.NaN)
      try {
        if (version < keepVersion || now() - statSync(path).mtimeMs > ORPHAN_AFTER_MS) rmSync(path, { force: true })
      } catch {
        // Another process pruned it first.
      }
    }
  }

  return {
    async current(orgId) {
      const [row] = await db.sql`SELECT version, snapshot FROM code_index_versions WHERE org_id = ${orgId}`
      return row ? { version: toNumber(row.version), file: String(row.snapshot) } : undefined
    },

    async read(orgId, snapshot) {
      return new Uint8Array(await Bun.file(join(orgDir(orgId), snapshot.file)).arrayBuffer())
    },

    async commit(orgId, base, bytes) {
      const version = base + 1
      const folder = orgDir(orgId)
      mkdirSync(folder, { recursive: true })
      // Each writer its own name: two processes saving the same version never overwrite each other's file.
      const file = `${version}-${crypto.randomUUID().slice(0, 12)}.snapshot`
      const temp = join(folder, `${file}.tmp`)
      writeDurably(temp, bytes)
      renameSync(temp, join(folder, file))
      const at = now()
      const claimed =
        base === 0
          ? await db.sql`INSERT INTO code_index_versions (org_id, version, snapshot, updated_at) VALUES (${orgId}, ${version}, ${file}, ${at}) ON CONFLICT (org_id) DO NOTHING RETURNING version`
          : await db.sql`UPDATE code_index_versions SET version = ${version}, snapshot = ${file}, updated_at = ${at} WHERE org_id = ${orgId} AND version = ${base} RETURNING version`
      if (claimed.length === 0) {
        rmSync(join(folder, file), { force: true })
        return false
      }
      prune(orgId, file, version)
      return true
    },
  }
}

/** A directory name for the organisation id: the id itself when it is plainly safe, else its hash. */
export function orgDirName(orgId: string): string {
  return /^[A-Za-z0-9_-]{1,100}$/.test(orgId) ? orgId : `h-${createHash('sha256').update(orgId).digest('hex').slice(0, 32)}`
}
