import { afterAll, describe, expect, test } from 'bun:test'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { AppError } from '../../src/errors.ts'
import { indexPack, packIndexFile, type ObjectType } from '../../plugins/imports/pack-index.ts'

const work = mkdtempSync(join(tmpdir(), 'pack-index-'))
afterAll(() => rmSync(work, { recursive: true, force: true }))

const env = {
  PATH: process.env.PATH ?? '/usr/bin:/bin',
  HOME: work,
  GIT_CONFIG_NOSYSTEM: '1',
  GIT_AUTHOR_NAME: 'T',
  GIT_AUTHOR_EMAIL: 't@example.com',
  GIT_COMMITTER_NAME: 'T',
  GIT_COMMITTER_EMAIL: 't@example.com',
}

function git(cwd: string, args: string[], input?: Uint8Array | string): Buffer {
  const result = Bun.spawnSync(['git', ...args], { cwd, env, stdin: input === undefined ? 'ignore' : Buffer.from(input) })
  if (result.exitCode !== 0) throw new Error(`git ${args.join(' ')}: ${result.stderr.toString()}`)
  return result.stdout
}

// Files that change a little in each commit, so git stores most versions as deltas.
const repository = join(work, 'repository')
mkdirSync(repository)
git(repository, ['init', '-q', '-b', 'main'])
for (let version = 0; version < 6; version++) {
  for (let file = 0; file < 8; file++) {
    const lines = Array.from(
      { length: 150 },
      (_, line) => `export const value${file}_${line} = ${line === version * 7 ? version : line} // ${'x'.repeat(line % 30)}`,
    )
    mkdirSync(join(repository, `src/part${file % 3}`), { recursive: true })
    writeFileSync(join(repository, `src/part${file % 3}/file${file}.ts`), lines.slice(0, 100 + version * 10).join('\n'))
  }
  writeFileSync(join(repository, 'empty.txt'), '')
  git(repository, ['add', '-A'])
  git(repository, ['commit', '-q', '-m', `version ${version}`])
}

/** What git makes of a pack: its own index, with --fix-thin for a thin pack (whose completed pack then differs). */
function gitIndex(pack: Buffer, fixThin = false): Buffer {
  const dir = mkdtempSync(join(work, 'index-'))
  const path = join(dir, 'pack.pack')
  writeFileSync(path, pack)
  if (fixThin) git(repository, ['index-pack', '--fix-thin', '--stdin', '-o', join(dir, 'out.idx')], pack)
  else git(dir, ['index-pack', '-o', join(dir, 'pack.idx'), path])
  return readFileSync(join(dir, fixThin ? 'out.idx' : 'pack.idx'))
}

/** A .idx read back: object id -> [crc, offset]. */
function entries(idx: Buffer): Map<string, [number, number]> {
  const count = idx.readUInt32BE(8 + 255 * 4)
  const idsAt = 8 + 256 * 4
  const map = new Map<string, [number, number]>()
  for (let i = 0; i < count; i++)
    map.set(idx.toString('hex', idsAt + i * 20, idsAt + i * 20 + 20), [
      idx.readUInt32BE(idsAt + count * 20 + i * 4),
      idx.readUInt32BE(idsAt + count * 24 + i * 4),
    ])
  return map
}

/** Type counts of the pack's entries, as git verify-pack reads them (ofs and ref deltas both show a base). */
function deltaCount(pack: Buffer, idx: Buffer): number {
  const dir = mkdtempSync(join(work, 'verify-'))
  writeFileSync(join(dir, 'p.pack'), pack)
  writeFileSync(join(dir, 'p.idx'), idx)
  const lines = git(dir, ['verify-pack', '-v', join(dir, 'p.idx')])
    .toString()
    .split('\n')
  return lines.filter((line) => /^[0-9a-f]{40} \w+ +\d+ \d+ \d+ \d+ [0-9a-f]{40}$/.test(line)).length
}

const limits = { maxObjectBytes: 1 << 30 }

async function expectDamaged(work: Promise<unknown>, why: RegExp) {
  const error = await work.then(
    () => undefined,
    (e: unknown) => e,
  )
  expect(error).toBeInstanceOf(AppError)
  expect((error as AppError).code).toBe('upstream_error')
  expect((error as AppError).message).toMatch(why)
}

describe('indexing a pack', () => {
  test('the .idx of a pack of ofs-deltas is byte for byte the one git index-pack writes', async () => {
    const pack = git(repository, ['pack-objects', '--revs', '--delta-base-offset', '--stdout'], 'main\n')
    const ours = await indexPack(pack, limits)
    const theirs = gitIndex(pack)
    expect(ours.idx.equals(theirs)).toBe(true)
    expect(ours.objects).toBe(entries(theirs).size)
    expect(ours.checksum).toBe(pack.subarray(-20).toString('hex'))
    expect(deltaCount(pack, ours.idx)).toBeGreaterThan(20)
  })

  test('the .idx of a pack of ref-deltas is byte for byte the one git index-pack writes', async () => {
    // Without --delta-base-offset every delta names its base by id.
    const pack = git(repository, ['pack-objects', '--revs', '--stdout'], 'main\n')
    const ours = await indexPack(pack, limits)
    expect(ours.idx.equals(gitIndex(pack))).toBe(true)
    expect(deltaCount(pack, ours.idx)).toBeGreaterThan(20)
  })

  test('a thin pack is indexed with its outside bases, object for object as git indexes it', async () => {
    const pack = git(repository, ['pack-objects', '--revs', '--thin', '--stdout'], 'main\n^main~2\n')
    // Without its bases the pack cannot be indexed, as for git.
    await expectDamaged(indexPack(pack, limits), /deltas name bases it does not hold/)
    const asked: string[] = []
    const ours = await indexPack(pack, {
      ...limits,
      externalBase: async (oid) => {
        asked.push(oid)
        const type = git(repository, ['cat-file', '-t', oid]).toString().trim() as ObjectType
        return { type, content: git(repository, ['cat-file', type, oid]) }
      },
    })
    expect(asked.length).toBeGreaterThan(0)
    // git completes a thin pack by appending the bases; the objects the pack did hold keep their ids, CRCs and offsets.
    const theirs = entries(gitIndex(pack, true))
    const mine = entries(ours.idx)
    expect(mine.size).toBe(pack.readUInt32BE(8))
    for (const [oid, entry] of mine) expect(theirs.get(oid)).toEqual(entry)
    for (const oid of asked) expect(mine.has(oid)).toBe(false)
  })

  test("reports its progress in git's phases", async () => {
    const pack = git(repository, ['pack-objects', '--revs', '--delta-base-offset', '--stdout'], 'main\n')
    const phases: { phase: string; loaded: number; total: number }[] = []
    await indexPack(pack, { ...limits, onProgress: (p) => void phases.push(p) })
    // Its last report: a busy machine gives way, and reports, more often on the way.
    expect(phases.findLast((p) => p.phase === 'Receiving objects')).toMatchObject({ loaded: pack.readUInt32BE(8), total: pack.readUInt32BE(8) })
    expect(phases.at(-1)!.phase).toBe('Resolving deltas')
    expect(phases.at(-1)!.loaded).toBe(phases.at(-1)!.total)
  })

  test('a damaged pack fails with upstream_error and says why', async () => {
    const pack = git(repository, ['pack-objects', '--revs', '--delta-base-offset', '--stdout'], 'main\n')
    const flipped = Buffer.from(pack)
    flipped[Math.floor(pack.byteLength / 2)]! ^= 0xff
    await expectDamaged(indexPack(flipped, limits), /checksum does not match/)
    await expectDamaged(indexPack(pack.subarray(0, pack.byteLength - 100), limits), /checksum does not match|fewer objects|inflate/)
    await expectDamaged(indexPack(Buffer.from('not a pack at all, no PACK header here'), limits), /no pack header/)
  })

  test('an object larger than the limit is refused before it is inflated', async () => {
    const pack = git(repository, ['pack-objects', '--revs', '--delta-base-offset', '--stdout'], 'main\n')
    const error = await indexPack(pack, { maxObjectBytes: 100 }).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(AppError)
    expect((error as AppError).code).toBe('repository_too_large')
  })

  test('offsets past 2 GiB go to the table of 64-bit offsets, as git writes them', () => {
    const ids = Buffer.alloc(60)
    ids.fill(0xaa, 0, 20)
    ids.fill(0x11, 20, 40)
    ids.fill(0x55, 40, 60)
    const offsets = new Float64Array([12, 2 ** 33 + 5, 2 ** 31])
    const idx = packIndexFile(ids, new Uint32Array([1, 2, 3]), offsets, Buffer.alloc(20, 7))
    const count = 3
    const offsetsAt = 8 + 256 * 4 + count * 24
    // Sorted: 0x11.. (2^33 + 5), 0x55.. (2^31), 0xaa.. (12).
    expect(idx.readUInt32BE(offsetsAt)).toBe(0x80000000)
    expect(idx.readUInt32BE(offsetsAt + 4)).toBe(0x80000001)
    expect(idx.readUInt32BE(offsetsAt + 8)).toBe(12)
    expect(idx.readBigUInt64BE(offsetsAt + 12)).toBe(BigInt(2 ** 33 + 5))
    expect(idx.readBigUInt64BE(offsetsAt + 20)).toBe(BigInt(2 ** 31))
    expect(idx.byteLength).toBe(8 + 1024 + count * 28 + 2 * 8 + 40)
  })
})
