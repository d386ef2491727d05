/**
 * Indexing a fetched pack, as `git index-pack` does: every object's id, CRC-32 and offset, written as a version 2
 * `.idx` byte for byte as git writes it. Inflating, SHA-1 and CRC-32 are native (node:zlib, Bun.CryptoHasher),
 * which made this several times faster than isomorphic-git's indexing of the same pack in pure JavaScript.
 *
 * One pass over the pack finds where each object ends (zlib reports the input it consumed), hashes the whole
 * objects and notes each delta's base; deltas are then rebuilt depth first from their bases, so only one chain
 * of contents is held at a time. A ref-delta may name a base outside the pack (a thin pack) when `externalBase`
 * supplies it. Sizes are checked before anything is allocated, the pack's trailing checksum is verified, and a
 * delta whose base cannot be found fails the pack, as it does for git.
 */
import { AppError } from '../../src/errors.ts'
import { timeSlices } from '../../src/time-slices.ts'

const OBJ_OFS_DELTA = 6
const OBJ_REF_DELTA = 7
export const OBJECT_TYPES = ['', 'commit', 'tree', 'blob', 'tag'] as const
export type ObjectType = 'commit' | 'tree' | 'blob' | 'tag'

export interface IndexPackOptions {
  /** No object may inflate past this many bytes (a delta's result included). */
  maxObjectBytes: number
  /** The base of a ref-delta that is not in the pack, or undefined when there is none. */
  externalBase?: (oid: string) => Promise<{ type: ObjectType; content: Uint8Array } | undefined>
  onProgress?: (progress: { phase: string; loaded: number; total: number }) => void | Promise<void>
  signal?: AbortSignal
}

export interface IndexedPack {
  /** The `.idx` file's bytes. */
  idx: Buffer
  /** The pack's trailing checksum in hex, which names the pack's files. */
  checksum: string
  objects: number
}

/** Longest stretch of work between two turns of the event loop, in milliseconds. */
const SLICE_MS = 5
/** Deltas kept inflated from the first pass for the second, in bytes; the rest are inflated again. */
const KEPT_DELTA_BYTES = 64 * 1024 * 1024
/** Bytes of the pack hashed between two chances to give way. */
const HASH_PIECE_BYTES = 1024 * 1024

export const damagedPack = (why: string) => new AppError('upstream_error', `The Git server sent a damaged pack: ${why}`)

const tooLarge = (size: number, limit: number) =>
  new AppError('repository_too_large', `The repository holds an object of ${size} bytes, more than ${limit} (IMPORT_MAX_REPOSITORY_BYTES)`, {
    extensions: { limitBytes: limit },
  })

function objectHeader(type: number, size: number): Buffer {
  return Buffer.from(`${OBJECT_TYPES[type]} ${size}\0`, 'latin1')
}

function objectId(type: number, content: Uint8Array): Buffer {
  return new Bun.CryptoHasher('sha1').update(objectHeader(type, content.byteLength)).update(content).digest() as Buffer
}

function readVarint(delta: Uint8Array, at: number): [number, number] {
  let value = 0
  let shift = 0
  let byte: number
  do {
    if (at >= delta.byteLength) throw damagedPack('a delta ends inside its header')
    byte = delta[at++]!
    value += (byte & 0x7f) * 2 ** shift
    shift += 7
  } while (byte & 0x80)
  return [value, at]
}

/** The object a delta rebuilds from its base; every copy and insert is checked against both. */
export function applyDelta(
  base: Uint8Array,
  delta: Uint8Array,
  maxObjectBytes: number,
  tooLargeError: (size: number) => Error = (size) => tooLarge(size, maxObjectBytes),
): Buffer {
  // Buffer.copy, not subarray + set: a view per instruction costs more than the copy itself.
  const source = Buffer.isBuffer(base) ? base : Buffer.from(base.buffer, base.byteOffset, base.byteLength)
  const instructions = Buffer.isBuffer(delta) ? delta : Buffer.from(delta.buffer, delta.byteOffset, delta.byteLength)
  let [sourceSize, at] = readVarint(instructions, 0)
  if (sourceSize !== source.byteLength) throw damagedPack('a delta does not fit its base')
  let targetSize: number
  ;[targetSize, at] = readVarint(instructions, at)
  if (targetSize > maxObjectBytes) throw tooLargeError(targetSize)
  const target = Buffer.allocUnsafe(targetSize)
  let written = 0
  while (at < instructions.byteLength) {
    const op = instructions[at++]!
    if (op & 0x80) {
      let copyOffset = 0
      let copySize = 0
      for (let bit = 0; bit < 4; bit++) if (op & (1 << bit)) copyOffset += instructions[at++]! * 2 ** (8 * bit)
      for (let bit = 0; bit < 3; bit++) if (op & (16 << bit)) copySize += instructions[at++]! * 2 ** (8 * bit)
      if (copySize === 0) copySize = 0x10000
      if (at > instructions.byteLength || copyOffset + copySize > source.byteLength || written + copySize > targetSize)
        throw damagedPack('a delta copies outside its base')
      source.copy(target, written, copyOffset, copyOffset + copySize)
      written += copySize
    } else if (op > 0) {
      if (at + op > instructions.byteLength || written + op > targetSize) throw damagedPack('a delta inserts past its end')
      instructions.copy(target, written, at, at + op)
      written += op
      at += op
    } else throw damagedPack('a delta holds a reserved instruction')
  }
  if (written !== targetSize) throw damagedPack('a delta does not produce its stated size')
  return target
}

/** Indexes `pack` (a whole `.pack` file) and answers its `.idx`. */
export async function indexPack(pack: Buffer, options: IndexPackOptions): Promise<IndexedPack> {
  // node:zlib takes several milliseconds to load: only an import pays for it, not every start.
  const { crc32, inflateSync } = await import('node:zlib')
  const { maxObjectBytes, signal } = options
  if (pack.byteLength < 32 || pack.toString('latin1', 0, 4) !== 'PACK') throw damagedPack('no pack header')
  const version = pack.readUInt32BE(4)
  if (version !== 2 && version !== 3) throw damagedPack(`unsupported pack version ${version}`)
  const count = pack.readUInt32BE(8)
  const trailerAt = pack.byteLength - 20
  const checksum = pack.subarray(trailerAt)
  // Hashed a piece at a time: a large pack's SHA-1 in one call held the event loop 15 ms and more.
  const checksumSlices = timeSlices(SLICE_MS, () => signal?.throwIfAborted())
  const hasher = new Bun.CryptoHasher('sha1')
  for (let from = 0; from < trailerAt; from += HASH_PIECE_BYTES) {
    hasher.update(pack.subarray(from, Math.min(from + HASH_PIECE_BYTES, trailerAt)))
    await checksumSlices()
  }
  if (!checksum.equals(hasher.digest() as Buffer)) throw damagedPack('its checksum does not match')

  // What each yield reports: the phase and how far it got.
  let progress = { phase: '', loaded: 0, total: count }
  const slices = timeSlices(SLICE_MS, async () => {
    await options.onProgress?.(progress)
    signal?.throwIfAborted()
  })
  const giveWay = (phase: string, loaded: number, total = count) => {
    progress = { phase, loaded, total }
    return slices()
  }

  const offsets = new Float64Array(count)
  const dataStarts = new Float64Array(count)
  const ends = new Float64Array(count)
  const types = new Uint8Array(count)
  const sizes = new Float64Array(count)
  const crcs = new Uint32Array(count)
  const ids = Buffer.alloc(count * 20)
  const resolved = new Uint8Array(count)
  // A delta's base: an index in this pack (ofs-delta), or an object id (ref-delta).
  const baseIndex = new Int32Array(count).fill(-1)
  const baseIds = new Map<number, string>()
  const indexAt = new Map<number, number>()
  const keptDeltas = new Map<number, Buffer>()
  let keptBytes = 0

  // Pass 1: where every object ends, and the ids of the whole ones.
  let at = 12
  for (let i = 0; i < count; i++) {
    if (at >= trailerAt) throw damagedPack('it holds fewer objects than its header says')
    const offset = at
    let byte = pack[at++]!
    const type = (byte >> 4) & 7
    let size = byte & 15
    for (let shift = 4; byte & 0x80; shift += 7) {
      if (at >= trailerAt) throw damagedPack('an object header runs past the end')
      byte = pack[at++]!
      size += (byte & 0x7f) * 2 ** shift
    }
    if (size > maxObjectBytes) throw tooLarge(size, maxObjectBytes)
    if (type === OBJ_OFS_DELTA) {
      byte = pack[at++]!
      let distance = byte & 0x7f
      while (byte & 0x80) {
        if (at >= trailerAt) throw damagedPack('a delta header runs past the end')
        byte = pack[at++]!
        distance = (distance + 1) * 128 + (byte & 0x7f)
      }
      const base = indexAt.get(offset - distance)
      if (base === undefined) throw damagedPack('a delta names a base at no object')
      baseIndex[i] = base
    } else if (type === OBJ_REF_DELTA) {
      if (at + 20 > trailerAt) throw damagedPack('a delta header runs past the end')
      baseIds.set(i, pack.toString('hex', at, at + 20))
      at += 20
    } else if (type < 1 || type > 4) throw damagedPack(`unknown object type ${type}`)
    let content: Buffer
    let consumed: number
    try {
      // Input past the object is left unread; zlib says how much it consumed, which is where the object ends.
      const inflated = inflateSync(pack.subarray(at, trailerAt), {
        info: true,
        maxOutputLength: Math.max(size, 1),
        chunkSize: Math.min(Math.max(size, 64), 1 << 20),
      } as Parameters<typeof inflateSync>[1]) as unknown as { buffer: Buffer; engine: { bytesWritten: number } }
      content = inflated.buffer
      consumed = inflated.engine.bytesWritten
    } catch {
      throw damagedPack('an object does not inflate to the size its header gives')
    }
    if (content.byteLength !== size) throw damagedPack('an object does not inflate to the size its header gives')
    offsets[i] = offset
    dataStarts[i] = at
    at += consumed
    ends[i] = at
    types[i] = type
    sizes[i] = size
    crcs[i] = crc32(pack.subarray(offset, at))
    indexAt.set(offset, i)
    if (type < OBJ_OFS_DELTA) {
      objectId(type, content).copy(ids, i * 20)
      resolved[i] = 1
    } else if (keptBytes + size <= KEPT_DELTA_BYTES) {
      keptDeltas.set(i, content)
      keptBytes += size
    }
    await giveWay('Receiving objects', i + 1)
  }
  if (at !== trailerAt) throw damagedPack('it holds more data than its objects')
  await options.onProgress?.({ phase: 'Receiving objects', loaded: count, total: count })

  // Deltas by base: ofs-deltas by the base's index, ref-deltas by the base's id.
  const ofsChildren = new Map<number, number[]>()
  const refChildren = new Map<string, number[]>()
  for (let i = 0; i < count; i++) {
    if (types[i] === OBJ_OFS_DELTA) {
      const list = ofsChildren.get(baseIndex[i]!)
      if (list) list.push(i)
      else ofsChildren.set(baseIndex[i]!, [i])
    } else if (types[i] === OBJ_REF_DELTA) {
      const id = baseIds.get(i)!
      const list = refChildren.get(id)
      if (list) list.push(i)
      else refChildren.set(id, [i])
    }
  }

  // The first pass checked that these bytes inflate to the stated size, so no limit is needed here.
  const inflateAt = (i: number): Buffer => {
    const content = Bun.inflateSync(pack.subarray(dataStarts[i]!, ends[i]!) as Uint8Array<ArrayBuffer>, { windowBits: 15 } as never)
    return Buffer.from(content.buffer, content.byteOffset, content.byteLength)
  }

  let rebuilt = 0
  const deltas = count - resolved.reduce((sum, r) => sum + r, 0)
  // Rebuilds every delta resting on the object at `i` (or on an object outside the pack named `id`).
  const resolveChildren = async (type: number, content: Uint8Array, i: number | undefined, id: string, depth: number): Promise<void> => {
    const children = [...((i !== undefined && ofsChildren.get(i)) || []), ...(refChildren.get(id) ?? [])]
    if (children.length === 0) return
    if (depth > 10_000) throw damagedPack('a delta chain is too long')
    for (const child of children) {
      if (resolved[child]) continue
      const delta = keptDeltas.get(child) ?? inflateAt(child)
      keptDeltas.delete(child)
      const target = applyDelta(content, delta, maxObjectBytes)
      const childId = objectId(type, target)
      childId.copy(ids, child * 20)
      resolved[child] = 1
      rebuilt++
      await giveWay('Resolving deltas', rebuilt, deltas)
      await resolveChildren(type, target, child, childId.toString('hex'), depth + 1)
    }
  }

  const hasChildren = (i: number, id: string) => ofsChildren.has(i) || refChildren.has(id)
  for (let i = 0; i < count; i++) {
    if (types[i]! >= OBJ_OFS_DELTA) continue
    const id = ids.toString('hex', i * 20, i * 20 + 20)
    if (hasChildren(i, id)) await resolveChildren(types[i]!, inflateAt(i), i, id, 0)
  }
  // A thin pack's deltas on objects the receiver already has.
  if (rebuilt < deltas && options.externalBase) {
    for (const [id, children] of refChildren) {
      if (children.every((child) => resolved[child])) continue
      const base = await options.externalBase(id)
      if (base) await resolveChildren(OBJECT_TYPES.indexOf(base.type), base.content, undefined, id, 0)
    }
  }
  if (rebuilt < deltas) throw damagedPack(`${deltas - rebuilt} deltas name bases it does not hold`)
  await options.onProgress?.({ phase: 'Resolving deltas', loaded: deltas, total: deltas })

  const order = await idOrder(ids, count, () => giveWay('Resolving deltas', deltas, deltas))
  return { idx: packIndexFile(ids, crcs, offsets, checksum, order), checksum: checksum.toString('hex'), objects: count }
}

/**
 * The objects' numbers in the order of their ids. Sorted by first byte, then one first byte at a time with a
 * chance to give way between: sorting 20,000 ids in one go held the event loop 15 ms and more.
 */
export async function idOrder(ids: Buffer, count: number, giveWay?: () => Promise<void>): Promise<Uint32Array> {
  const starts = new Uint32Array(257)
  for (let i = 0; i < count; i++) starts[ids[i * 20]! + 1]!++
  for (let b = 0; b < 256; b++) starts[b + 1]! += starts[b]!
  const order = new Uint32Array(count)
  const next = starts.slice(0, 256)
  for (let i = 0; i < count; i++) order[next[ids[i * 20]!]!++] = i
  // Each object's id as a number, its first six bytes; the whole id is compared only where those are equal.
  const keys = new Float64Array(count)
  for (let i = 0; i < count; i++) keys[i] = ids.readUIntBE(i * 20, 6)
  const byId = (a: number, b: number) => keys[a]! - keys[b]! || ids.compare(ids, b * 20, b * 20 + 20, a * 20, a * 20 + 20) || a - b
  for (let b = 0; b < 256; b++) {
    if (starts[b + 1]! - starts[b]! > 1) order.subarray(starts[b], starts[b + 1]).sort(byId)
    await giveWay?.()
  }
  return order
}

/**
 * A version 2 pack index: magic and version, the fan-out table, the sorted ids, their CRC-32s and offsets (those
 * past 2 GiB in a table of 64-bit offsets), the pack's checksum, and the index's own SHA-1.
 */
export function packIndexFile(ids: Buffer, crcs: Uint32Array, offsets: Float64Array, packChecksum: Uint8Array, order?: Uint32Array): Buffer {
  const count = crcs.length
  order ??= new Uint32Array(count).map((_, i) => i).sort((a, b) => ids.compare(ids, b * 20, b * 20 + 20, a * 20, a * 20 + 20) || a - b)
  let large = 0
  for (let i = 0; i < count; i++) if (offsets[i]! > 0x7fffffff) large++
  const size = 8 + 256 * 4 + count * 28 + large * 8 + 40
  const out = Buffer.alloc(size)
  out.writeUInt32BE(0xff744f63, 0)
  out.writeUInt32BE(2, 4)
  const fanout = new Uint32Array(256)
  for (let i = 0; i < count; i++) fanout[ids[i * 20]!]!++
  let running = 0
  for (let b = 0; b < 256; b++) out.writeUInt32BE((running += fanout[b]!), 8 + b * 4)
  const idsAt = 8 + 256 * 4
  const crcsAt = idsAt + count * 20
  const offsetsAt = crcsAt + count * 4
  const largeAt = offsetsAt + count * 4
  let largeIndex = 0
  order.forEach((i, n) => {
    ids.copy(out, idsAt + n * 20, i * 20, i * 20 + 20)
    out.writeUInt32BE(crcs[i]!, crcsAt + n * 4)
    const offset = offsets[i]!
    if (offset > 0x7fffffff) {
      out.writeUInt32BE((0x80000000 | largeIndex) >>> 0, offsetsAt + n * 4)
      out.writeBigUInt64BE(BigInt(offset), largeAt + largeIndex * 8)
      largeIndex++
    } else out.writeUInt32BE(offset, offsetsAt + n * 4)
  })
  out.set(packChecksum, size - 40)
  out.set(new Bun.CryptoHasher('sha1').update(out.subarray(0, size - 20)).digest() as Buffer, size - 20)
  return out
}
