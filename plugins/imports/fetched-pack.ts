/**
 * Receiving a fetch's pack beside isomorphic-git rather than through it. isomorphic-git indexes the pack it
 * receives in JavaScript (pako inflate, an awaited SHA-1 per object), which was most of a large clone, and has no
 * option to leave that out. This HTTP client wraps the import's own and takes the pack data (side-band channel
 * 1) out of the upload-pack response as it streams past: isomorphic-git still reads the negotiation, the shallow
 * lines and the server's progress exactly as sent, finds an empty pack and writes none; the pack is then indexed
 * natively (pack-index.ts) and stored. A response that is not pkt-lines is passed on untouched.
 */
import { rename, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import type { GitHttpResponse, HttpClient } from 'isomorphic-git'
import { timeSlices } from '../../src/time-slices.ts'
import { indexPack, type IndexPackOptions } from './pack-index.ts'

export interface PackReceiver {
  http: HttpClient
  /** The pack data of the last upload-pack response, or undefined when none came (or none could be taken out). */
  take(): Promise<Buffer | undefined>
}

const EMPTY: Buffer = Buffer.alloc(0)
/** Longest stretch of copying the pack between two turns of the event loop, in milliseconds. */
const COPY_SLICE_MS = 4

/** Four hex digits of a pkt-line length, or -1. */
function pktLength(buffer: Buffer, at: number): number {
  let length = 0
  for (let i = at; i < at + 4; i++) {
    const c = buffer[i]!
    const digit = c >= 48 && c <= 57 ? c - 48 : c >= 97 && c <= 102 ? c - 87 : c >= 65 && c <= 70 ? c - 55 : -1
    if (digit < 0) return -1
    length = length * 16 + digit
  }
  return length
}

/** The response body without its channel-1 packets, whose payloads go to `pack`. */
async function* withoutPackData(body: AsyncIterable<Uint8Array>, pack: Buffer[]): AsyncGenerator<Uint8Array> {
  // The start of a packet the last chunk ended inside (at most one packet, 64 KiB).
  let pending: Buffer = EMPTY
  let untouched = false
  for await (const chunk of body) {
    if (untouched) {
      yield chunk
      continue
    }
    const buffer = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength)
    const passed: Uint8Array[] = []
    let at = 0
    if (pending.byteLength > 0) {
      // Only the packet cut in two is put together again, not the whole chunk: a chunk read after a busy turn
      // holds megabytes, and copying each one held the event loop for tens of milliseconds.
      const head = pending.byteLength >= 4 ? pending : Buffer.concat([pending, buffer.subarray(0, 4 - pending.byteLength)])
      if (head.byteLength < 4) {
        pending = head
        continue
      }
      const length = pktLength(head, 0)
      if (length < 0) {
        untouched = true
        pack.length = 0
        yield Buffer.concat([pending, buffer])
        continue
      }
      const need = Math.max(length, 4) - pending.byteLength
      if (need > buffer.byteLength) {
        pending = Buffer.concat([pending, buffer])
        continue
      }
      const packet = Buffer.concat([pending, buffer.subarray(0, need)])
      if (length > 4 && packet[4] === 1) pack.push(packet.subarray(5))
      else passed.push(packet)
      at = need
    }
    while (buffer.byteLength - at >= 4) {
      const length = pktLength(buffer, at)
      if (length < 0) {
        // Not pkt-lines: isomorphic-git reads (and reports) it as it would have.
        untouched = true
        pack.length = 0
        break
      }
      // A flush or delimiter packet is its length alone.
      const end = at + Math.max(length, 4)
      if (end > buffer.byteLength) break
      if (length > 4 && buffer[at + 4] === 1) pack.push(buffer.subarray(at + 5, end))
      else passed.push(buffer.subarray(at, end))
      at = end
    }
    if (untouched) passed.push(buffer.subarray(at))
    pending = untouched ? EMPTY : buffer.subarray(at)
    if (passed.length > 0) yield passed.length === 1 ? passed[0]! : Buffer.concat(passed)
  }
  if (pending.byteLength > 0) yield pending
}

export function receivePackSeparately(http: HttpClient): PackReceiver {
  let pack: Buffer[] | undefined
  return {
    http: {
      async request(request): Promise<GitHttpResponse> {
        const response = await http.request(request)
        const uploadPack = request.method === 'POST' && /\/git-upload-pack$/.test(new URL(request.url).pathname)
        if (!uploadPack || response.statusCode !== 200 || !response.body) return response
        const received: Buffer[] = []
        pack = received
        return { ...response, body: withoutPackData(response.body, received) }
      },
    },
    async take() {
      if (!pack || pack.length === 0) return undefined
      const pieces = pack
      pack = undefined
      // Copied a piece at a time with turns between: a large pack in one Buffer.concat held the event loop 100 ms.
      const whole = Buffer.allocUnsafe(pieces.reduce((sum, piece) => sum + piece.byteLength, 0))
      const giveWay = timeSlices(COPY_SLICE_MS)
      let at = 0
      for (const piece of pieces) {
        whole.set(piece, at)
        at += piece.byteLength
        await giveWay()
      }
      return whole
    },
  }
}

/**
 * Indexes a received pack and stores it beside the others as `pack-<checksum>.pack` and `.idx`. The index is
 * written last and renamed into place, so a reader never finds an index without its pack. Answers the number of
 * objects stored (0 for an empty pack, which is not stored).
 */
export async function storePack(gitdir: string, pack: Buffer, options: IndexPackOptions): Promise<number> {
  if (pack.byteLength >= 12 && pack.toString('latin1', 0, 4) === 'PACK' && pack.readUInt32BE(8) === 0) return 0
  const indexed = await indexPack(pack, options)
  const base = join(gitdir, 'objects', 'pack', `pack-${indexed.checksum}`)
  await writeFile(`${base}.pack`, pack)
  await writeFile(`${base}.idx.tmp`, indexed.idx)
  await rename(`${base}.idx.tmp`, `${base}.idx`)
  return indexed.objects
}
