/**
 * Reads blobs for the checkout straight from the packs the fetch stored and indexed. isomorphic-git's own
 * reader inflates with pako and rebuilds deltas by slicing and concatenating, which made the checkout of a large
 * repository several times slower than the fetch; this one inflates with the native zlib, applies deltas into one
 * preallocated buffer, and keeps recently rebuilt delta bases. The object ids come from the pack index written
 * after hashing every object (pack-index.ts), so what is read is what the index vouches for. Every size is
 * checked before anything is allocated: a hostile pack cannot make a blob larger than the single-file limit.
 */
import { readdir, readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { AppError } from '../../src/errors.ts'
import { timeSlices } from '../../src/time-slices.ts'
import { applyDelta, damagedPack } from './pack-index.ts'

const OBJ_COMMIT = 1
const OBJ_TREE = 2
const OBJ_BLOB = 3
const OBJ_TAG = 4
const OBJ_OFS_DELTA = 6
const OBJ_REF_DELTA = 7

interface Pack {
  data: Buffer
  /** Object id (hex) to offset in `data`. */
  offsets: Map<string, number>
  /** Where each object's bytes end: the next object's offset, or the trailing checksum. */
  ends: Map<number, number>
}

export type ObjectTypeName = 'commit' | 'tree' | 'blob' | 'tag'

/** Objects by id; undefined when no pack holds the object (the caller falls back to isomorphic-git). */
export interface PackReader {
  readBlob(oid: string): Uint8Array | undefined
  readObject(oid: string): { type: ObjectTypeName; content: Buffer } | undefined
}

const TYPE_NAMES: Record<number, ObjectTypeName> = { [OBJ_COMMIT]: 'commit', [OBJ_TREE]: 'tree', [OBJ_BLOB]: 'blob', [OBJ_TAG]: 'tag' }

const corrupt = damagedPack

/** Milliseconds of reading a pack index between two turns of the event loop. */
const SLICE_MS = 4

// In slices: the index of a pack of 20,000 objects read in one go held the event loop 60 ms.
async function parseIndex(index: Buffer, packLength: number): Promise<{ offsets: Map<string, number>; ends: Map<number, number> }> {
  if (index.readUInt32BE(0) !== 0xff744f63 || index.readUInt32BE(4) !== 2) throw corrupt('unsupported pack index')
  const giveWay = timeSlices(SLICE_MS)
  const count = index.readUInt32BE(8 + 255 * 4)
  const namesAt = 8 + 256 * 4
  const offsetsAt = namesAt + count * 20 + count * 4
  const largeAt = offsetsAt + count * 4
  const offsets = new Map<string, number>()
  const sorted = new Float64Array(count)
  for (let i = 0; i < count; i++) {
    let offset = index.readUInt32BE(offsetsAt + i * 4)
    if (offset & 0x80000000) offset = Number(index.readBigUInt64BE(largeAt + (offset & 0x7fffffff) * 8))
    offsets.set(index.toString('hex', namesAt + i * 20, namesAt + (i + 1) * 20), offset)
    sorted[i] = offset
    if (i % 1024 === 1023) await giveWay()
  }
  sorted.sort()
  await giveWay()
  const ends = new Map<number, number>()
  for (let i = 0; i < count; i++) {
    ends.set(sorted[i]!, i + 1 < count ? sorted[i + 1]! : packLength - 20)
    if (i % 1024 === 1023) await giveWay()
  }
  return { offsets, ends }
}

export async function openPackReader(gitdir: string, options: { maxObjectBytes: number; cacheBytes?: number }): Promise<PackReader> {
  // node:zlib takes several milliseconds to load: only a checkout pays for it, not every start.
  const { inflateSync } = await import('node:zlib')
  const directory = join(gitdir, 'objects', 'pack')
  const names = await readdir(directory).catch(() => [] as string[])
  const packs: Pack[] = []
  for (const name of names.filter((n) => n.endsWith('.idx'))) {
    const data = await readFile(join(directory, name.replace(/\.idx$/, '.pack')))
    packs.push({ data, ...(await parseIndex(await readFile(join(directory, name)), data.byteLength)) })
  }
  const cacheBytes = options.cacheBytes ?? 64 * 1024 * 1024
  // Rebuilt objects by pack and offset, least recently used first; delta chains share their bases.
  const cache = new Map<string, { type: number; content: Buffer }>()
  let cached = 0

  function remember(key: string, value: { type: number; content: Buffer }) {
    if (value.content.byteLength > cacheBytes / 4) return
    cache.set(key, value)
    cached += value.content.byteLength
    for (const [oldest, entry] of cache) {
      if (cached <= cacheBytes) break
      cache.delete(oldest)
      cached -= entry.content.byteLength
    }
  }

  function inflate(pack: Pack, at: number, end: number, size: number): Buffer {
    if (size > options.maxObjectBytes) throw tooLarge(size)
    const content = inflateSync(pack.data.subarray(at, end), { maxOutputLength: Math.max(size, 1) })
    if (content.byteLength !== size) throw corrupt('an object is not the size its header gives')
    return content
  }

  const tooLarge = (size: number) =>
    new AppError('repository_file_too_large', `A file is ${size} bytes, more than ${options.maxObjectBytes} (IMPORT_MAX_FILE_BYTES)`, {
      extensions: { limitBytes: options.maxObjectBytes },
    })

  function readAt(pack: Pack, packIndex: number, offset: number, depth: number): { type: number; content: Buffer } {
    const key = `${packIndex}:${offset}`
    const hit = cache.get(key)
    if (hit) {
      cache.delete(key)
      cache.set(key, hit)
      return hit
    }
    if (depth > 64) throw corrupt('a delta chain is too long')
    const data = pack.data
    const end = pack.ends.get(offset) ?? data.byteLength - 20
    let at = offset
    let byte = data[at++]!
    const type = (byte >> 4) & 7
    let size = byte & 15
    for (let shift = 4; byte & 0x80; shift += 7) {
      byte = data[at++]!
      size += (byte & 0x7f) * 2 ** shift
    }
    let result: { type: number; content: Buffer }
    if (type === OBJ_OFS_DELTA || type === OBJ_REF_DELTA) {
      let base: { type: number; content: Buffer }
      if (type === OBJ_OFS_DELTA) {
        byte = data[at++]!
        let distance = byte & 0x7f
        while (byte & 0x80) {
          byte = data[at++]!
          distance = (distance + 1) * 128 + (byte & 0x7f)
        }
        base = readAt(pack, packIndex, offset - distance, depth + 1)
      } else {
        const baseOid = data.toString('hex', at, at + 20)
        at += 20
        const found = locate(baseOid)
        if (!found) throw corrupt(`a delta names a base the packs do not hold (${baseOid})`)
        base = readAt(found.pack, found.index, found.offset, depth + 1)
      }
      if (size > options.maxObjectBytes * 2 + 1024) throw tooLarge(size)
      result = { type: base.type, content: applyDelta(base.content, inflate(pack, at, end, size), options.maxObjectBytes, tooLarge) }
    } else if (type === OBJ_COMMIT || type === OBJ_TREE || type === OBJ_BLOB || type === OBJ_TAG) {
      result = { type, content: inflate(pack, at, end, size) }
    } else throw corrupt(`unknown object type ${type}`)
    remember(key, result)
    return result
  }

  function locate(oid: string): { pack: Pack; index: number; offset: number } | undefined {
    for (let index = 0; index < packs.length; index++) {
      const offset = packs[index]!.offsets.get(oid)
      if (offset !== undefined) return { pack: packs[index]!, index, offset }
    }
    return undefined
  }

  return {
    readBlob(oid) {
      const found = locate(oid)
      if (!found) return undefined
      const { type, content } = readAt(found.pack, found.index, found.offset, 0)
      if (type !== OBJ_BLOB) throw corrupt(`${oid} is not a file`)
      return content
    },
    readObject(oid) {
      const found = locate(oid)
      if (!found) return undefined
      const { type, content } = readAt(found.pack, found.index, found.offset, 0)
      return { type: TYPE_NAMES[type]!, content }
    },
  }
}
