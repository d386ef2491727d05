/**
 * A snapshot decoded on the Worker is handed to the event loop a piece at a time: every piece is bounded whatever
 * the index's size, the last (the rest of Orama's state) holds nothing that grows with the index, and the index
 * restored from the pieces is the one restored whole. Vectors are taken in a block of slots at a time.
 */
import { describe, expect, test } from 'bun:test'
import { OrgIndex, type FileChunks } from '../../plugins/code-search/index/org-index.ts'
import {
  decodeSnapshotData,
  encodeSnapshot,
  HandOver,
  handOverPieces,
  restoreSnapshot,
  type DecodedSnapshot,
  type PieceSizes,
  type SnapshotPiece,
} from '../../plugins/code-search/index/persistence.ts'
import { VectorStore } from '../../plugins/code-search/vectors/index.ts'

const SIZES: PieceSizes = { documents: 40, terms: 90, entries: 70 }

function vectorOf(seed: number): Float32Array {
  return Float32Array.from({ length: 8 }, (_, d) => Math.sin(seed * 7.1 + d * 1.3))
}

/** An index of `files` files of two chunks each in two repositories, with a few removed (ids and slots left free). */
function indexOf(files: number): OrgIndex {
  const index = new OrgIndex()
  for (let i = 0; i < files; i++) {
    const file: FileChunks = {
      repositoryId: i % 3 === 0 ? 'tools' : 'shop',
      repositoryName: i % 3 === 0 ? 'acme/tools' : 'acme/shop',
      path: `src/${i % 7}/file-${i}.ts`,
      language: i % 2 === 0 ? 'TypeScript' : 'Python',
      chunks: [0, 1].map((part) => ({
        startLine: part * 10 + 1,
        endLine: part * 10 + 9,
        content: `export function helper${i}Part${part}(order) {\n  return verify${i % 11}(order.total, 'alpha${i % 13} beta${i} gamma${part}')\n}\n`,
        symbols: [`helper${i}Part${part}`],
        vector: vectorOf(i * 2 + part),
      })),
    }
    index.replaceFile(file)
  }
  for (let i = 3; i < files; i += 17) index.removePath(i % 3 === 0 ? 'tools' : 'shop', `src/${i % 7}/file-${i}.ts`)
  return index
}

const decodedOf = (index: OrgIndex) => decodeSnapshotData(encodeSnapshot(index, { orgId: 'org', version: 1, embeddings: 'test', savedAt: 0, chain: 'chain' }))

/** What each piece holds, counted as PieceSizes bounds it. */
function sizeOf(piece: SnapshotPiece): { kind: keyof PieceSizes; count: number } {
  if ('ids' in piece) return { kind: 'entries', count: piece.ids.length }
  if ('documents' in piece) return { kind: 'documents', count: Object.keys(piece.documents).length }
  if ('postings' in piece) return { kind: 'terms', count: piece.postings.terms.length }
  if ('lengths' in piece) return { kind: 'entries', count: Object.keys(piece.lengths.entries).length }
  return { kind: 'entries', count: piece.enums.entries.reduce((sum, [, ids]) => sum + ids.length, 0) }
}

/** The pieces, each copied as a message between threads copies it, taken in as the event loop takes them. */
function handedOver(decoded: DecodedSnapshot): DecodedSnapshot {
  const handOver = new HandOver()
  for (const [piece] of handOverPieces(decoded, SIZES)) {
    if ('header' in piece) return handOver.finish(structuredClone(piece))
    handOver.take(structuredClone(piece))
  }
  throw new Error('no last piece')
}

const QUERIES = ['verify order total', 'helper12Part1', 'alpha3 gamma0', 'beta40', 'export function return']

function answers(index: OrgIndex) {
  const paths = (hits: { slot: number }[]) => hits.map((hit) => `${index.chunk(hit.slot)!.path}#${hit.slot}`)
  return QUERIES.flatMap((query) => [
    paths(index.searchText(query, {}, 20)),
    paths(index.searchText(query, { repositoryIds: new Set(['tools']), languages: new Set(['python']) }, 20)),
    paths(index.searchText(query, { pathPrefix: 'src/3/' }, 20)),
    [
      ...index.wholeFileScores(
        query,
        index.searchText(query, {}, 20).map((hit) => hit.slot),
      ),
    ],
    [...index.repositoryFit(query)],
    paths(index.searchVector(vectorOf(5), { repositoryIds: new Set(['shop']) }, 10)),
  ])
}

describe('a decoded snapshot handed over in pieces', () => {
  test('every piece is bounded, and the last holds nothing that grows with the index', () => {
    const lastSizes: number[] = []
    const pieceCounts: number[] = []
    for (const files of [150, 1500]) {
      const pieces = [...handOverPieces(decodedOf(indexOf(files)), SIZES)].map(([piece]) => piece)
      const last = pieces.pop() as DecodedSnapshot
      expect('header' in last).toBe(true)
      const kinds = new Set<string>()
      for (const piece of pieces as SnapshotPiece[]) {
        const { kind, count } = sizeOf(piece)
        kinds.add(Object.keys(piece)[0]!)
        expect(count).toBeGreaterThan(0)
        expect(count).toBeLessThanOrEqual(SIZES[kind])
      }
      expect([...kinds].sort()).toEqual(['documents', 'enums', 'ids', 'lengths', 'postings'])
      pieceCounts.push(pieces.length)
      // Counts and averages gain a digit or two; nothing else may grow.
      lastSizes.push(JSON.stringify(last.raw).length)
      expect(last.vectors?.slots).toBe(files * 2)
    }
    expect(pieceCounts[1]!).toBeGreaterThan(pieceCounts[0]! * 5)
    expect(Math.abs(lastSizes[1]! - lastSizes[0]!)).toBeLessThan(64)
  })

  test('the index restored from the pieces is the index restored whole, and changes alike after', async () => {
    const original = indexOf(1500)
    const whole = await restoreSnapshot(decodedOf(original))
    const pieced = await restoreSnapshot(handedOver(decodedOf(original)))
    expect(pieced.chunkCount).toBe(original.chunkCount)
    expect(JSON.stringify(pieced.saveDatabase())).toBe(JSON.stringify(whole.saveDatabase()))
    expect(answers(pieced)).toEqual(answers(whole))
    expect(answers(pieced)).toEqual(answers(original))
    for (const index of [whole, pieced]) {
      index.removePath('shop', 'src/1/file-1.ts')
      index.replaceFile({
        repositoryId: 'tools',
        repositoryName: 'acme/tools',
        path: 'src/3/new.ts',
        language: 'TypeScript',
        chunks: [{ startLine: 1, endLine: 3, content: 'verify the order total again alpha3', symbols: ['again'], vector: vectorOf(99) }],
      })
    }
    expect(JSON.stringify(pieced.saveDatabase())).toBe(JSON.stringify(whole.saveDatabase()))
    expect(answers(pieced)).toEqual(answers(whole))
  })

  test('vectors are taken in a block of slots at a time, as deserialise takes them at once', async () => {
    const store = new VectorStore(4)
    const slots = 4096 * 2 + 100
    for (let slot = 0; slot < slots; slot++) store.set(slot, vectorOf(slot).subarray(0, 4))
    const bytes = store.serialise()
    let turns = 0
    const pieced = await VectorStore.deserialiseGivingWay(4, slots, bytes, async () => void turns++)
    expect(turns).toBe(3)
    const whole = VectorStore.deserialise(4, slots, bytes)
    expect(pieced.serialise()).toEqual(whole.serialise())
    const query = vectorOf(7).subarray(0, 4)
    expect(pieced.nearest(query, 20)).toEqual(whole.nearest(query, 20))
  })
})
