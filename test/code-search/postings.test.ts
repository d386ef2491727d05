import { describe, expect, test } from 'bun:test'
import fc from 'fast-check'
import { PostingLists } from '../../plugins/code-search/index/postings.ts'

const postingsOf = (lists: PostingLists, term: string) => {
  const found: [number, number][] = []
  lists.forEach(term, (id, count) => found.push([id, count]))
  return found
}

describe('posting lists', () => {
  test('grow one posting at a time, keeping the order they were added, ids and counts of any size', () => {
    const lists = new PostingLists()
    const added: [number, number][] = []
    // Small entries and the long form (a count of 255 or more, an id of 2^23 or more) mixed, past several doublings.
    for (let i = 0; i < 300; i++) {
      const id = i % 7 === 0 ? (1 << 23) + i : i + 1
      const count = i % 11 === 0 ? 255 + i : (i % 254) + 1
      lists.add('request', id, count)
      added.push([id, count])
    }
    lists.add('response', 4, 2)
    expect(postingsOf(lists, 'request')).toEqual(added)
    expect(lists.documents('request')).toBe(300)
    expect(postingsOf(lists, 'response')).toEqual([[4, 2]])
    expect(lists.documents('absent')).toBe(0)
    expect(postingsOf(lists, 'absent')).toEqual([])
    expect(lists.terms).toBe(2)
  })

  test('trimming gives back the room lists keep to grow, keeps every posting in order, and the lists grow again after', () => {
    const lists = new PostingLists()
    const expected = new Map<string, [number, number][]>()
    // Thousands of terms, so the trim gives way several times; lists of one posting to a few hundred.
    for (let term = 0; term < 5000; term++)
      for (let id = 0; id <= term % 300; id++) {
        const count = id % 13 === 0 ? 300 : (id % 9) + 1
        lists.add(`t${term}`, id, count)
        let list = expected.get(`t${term}`)
        if (!list) expected.set(`t${term}`, (list = []))
        list.push([id, count])
      }
    const before = lists.words
    expect(before.room).toBeGreaterThan(before.used * 1.2)
    const steps = [...lists.trim()].length
    expect(steps).toBeGreaterThan(0)
    expect(lists.words).toEqual({ used: before.used, room: before.used })
    for (const [term, list] of expected) expect(postingsOf(lists, term)).toEqual(list)
    // Nothing widened since: nothing to do.
    expect([...lists.trim()].length).toBe(0)
    lists.add('t7', 9999, 3)
    lists.add('new', 1, 1)
    expect(postingsOf(lists, 't7')).toEqual([...expected.get('t7')!, [9999, 3]])
    expect(postingsOf(lists, 'new')).toEqual([[1, 1]])
    expect(lists.documents('t7')).toBe(expected.get('t7')!.length + 1)
  })

  test("a removed id is skipped at once and out of its terms' counts; a sweep drops its entries, keeping the rest in order", () => {
    const lists = new PostingLists()
    for (let id = 1; id <= 100; id++) lists.add('common', id, id % 3 === 0 ? 1000 : 2)
    lists.add('rare', 50, 1)
    lists.add('untouched', 95, 1)
    for (let id = 1; id <= 90; id++) lists.remove(id, id === 50 ? ['common', 'rare'] : ['common'])
    const kept = Array.from({ length: 10 }, (_, i): [number, number] => [91 + i, (91 + i) % 3 === 0 ? 1000 : 2])
    // Before any sweep: reads, counts and the saved form already leave the removed ids out.
    const before = lists.words.used
    expect(postingsOf(lists, 'common')).toEqual(kept)
    expect(lists.documents('common')).toBe(10)
    expect(lists.has('rare')).toBe(false)
    expect([...lists.saved()].map(([term]) => term)).toEqual(['common', 'untouched'])
    expect(lists.words.used).toBe(before)
    expect(lists.sweepPending).toBe(true)

    expect([...lists.sweep()].length).toBe(0)
    expect(lists.sweepPending).toBe(false)
    // What is left: 'common' (a header, 93, 96 and 99 in three words for their count of 1000, seven in one) and 'untouched'.
    expect(lists.words.used).toBeLessThan(before)
    expect(lists.words.used).toBe(2 + 3 * 3 + 7 + (2 + 1))
    expect(postingsOf(lists, 'common')).toEqual(kept)
    expect(lists.terms).toBe(2)
    // Only the lists the removed ids were in are touched.
    expect(postingsOf(lists, 'untouched')).toEqual([[95, 1]])
    // A swept id comes back (its slot reused) at the end of the list.
    lists.add('common', 5, 7)
    lists.add('rare', 5, 1)
    expect(postingsOf(lists, 'common').at(-1)).toEqual([5, 7])
    expect(lists.documents('common')).toBe(11)
    expect(postingsOf(lists, 'rare')).toEqual([[5, 1]])
  })

  test('a sweep of long lists gives way between steps, and removals made meanwhile are swept too', () => {
    const lists = new PostingLists()
    const terms = Array.from({ length: 40 }, (_, n) => `t${n}`)
    for (let id = 1; id <= 20_000; id++) for (const term of terms) lists.add(term, id, 1)
    for (let id = 1; id <= 10_000; id += 2) lists.remove(id, terms)
    const sweep = lists.sweep()
    expect(sweep.next().done).toBe(false)
    // Mid-sweep: reads are right, and a removal joins the sweep under way.
    expect(lists.documents('t0')).toBe(15_000)
    lists.remove(20_000, terms)
    expect(postingsOf(lists, 't39').at(-1)).toEqual([19_999, 1])
    let steps = 1
    while (!sweep.next().done) steps++
    expect(steps).toBeGreaterThan(5)
    expect(lists.sweepPending).toBe(false)
    expect(lists.words.used).toBe(40 * (2 + 20_000 - 5_001))
    for (const term of terms) expect(lists.documents(term)).toBe(20_000 - 5_001)
  })

  test('an id removed and added again before any sweep is read as its new document only', () => {
    const lists = new PostingLists()
    lists.add('old', 1, 3)
    lists.add('both', 1, 4)
    lists.add('both', 2, 1)
    lists.remove(1, ['old', 'both'])
    lists.add('both', 1, 9)
    lists.add('new', 1, 1)
    expect(postingsOf(lists, 'old')).toEqual([])
    expect(postingsOf(lists, 'both')).toEqual([
      [2, 1],
      [1, 9],
    ])
    expect(lists.documents('both')).toBe(2)
    expect(postingsOf(lists, 'new')).toEqual([[1, 1]])
    expect(lists.sweepPending).toBe(false)
  })

  test('an id removed from no list is nothing to sweep and nothing to skip', () => {
    const lists = new PostingLists()
    lists.add('kept', 1, 1)
    lists.remove(2, [])
    lists.remove(3, ['absent'])
    expect(lists.sweepPending).toBe(false)
    lists.add('kept', 2, 5)
    expect(postingsOf(lists, 'kept')).toEqual([
      [1, 1],
      [2, 5],
    ])
  })

  test('any interleaving of adds, removals, ids coming back and partial sweeps reads as the documents held', () => {
    type Op = { kind: 'add'; id: number; terms: number[] } | { kind: 'remove'; id: number } | { kind: 'sweep'; steps: number }
    const op: fc.Arbitrary<Op> = fc.oneof(
      fc.record({
        kind: fc.constant('add' as const),
        id: fc.integer({ min: 0, max: 30 }),
        terms: fc.uniqueArray(fc.integer({ min: 0, max: 8 }), { maxLength: 5 }),
      }),
      fc.record({ kind: fc.constant('remove' as const), id: fc.integer({ min: 0, max: 30 }) }),
      fc.record({ kind: fc.constant('sweep' as const), steps: fc.integer({ min: 0, max: 3 }) }),
    )
    fc.assert(
      fc.property(fc.array(op, { maxLength: 80 }), (ops) => {
        const lists = new PostingLists()
        // The model: each term's postings in the order added, and each held document's terms.
        const model = new Map<string, [number, number][]>()
        const held = new Map<number, string[]>()
        let sweep: Generator<void> | undefined
        for (const [n, step] of ops.entries()) {
          if (step.kind === 'add') {
            if (held.has(step.id)) continue
            const terms = step.terms.map((t) => `t${t}`)
            held.set(step.id, terms)
            for (const term of terms) {
              lists.add(term, step.id, n + 1)
              model.set(term, [...(model.get(term) ?? []), [step.id, n + 1]])
            }
          } else if (step.kind === 'remove') {
            const terms = held.get(step.id)
            if (!terms) continue
            held.delete(step.id)
            lists.remove(step.id, terms)
            for (const term of terms)
              model.set(
                term,
                model.get(term)!.filter(([id]) => id !== step.id),
              )
          } else {
            sweep ??= lists.sweep()
            for (let i = 0; i <= step.steps && sweep; i++) if (sweep.next().done) sweep = undefined
          }
          for (let t = 0; t <= 8; t++) {
            const expected = model.get(`t${t}`) ?? []
            expect(postingsOf(lists, `t${t}`)).toEqual(expected)
            expect(lists.documents(`t${t}`)).toBe(expected.length)
          }
        }
        lists.sweepAll()
        expect(lists.sweepPending).toBe(false)
        const byTerm = (x: [string, unknown], y: [string, unknown]) => x[0].localeCompare(y[0])
        expect([...lists.saved()].sort(byTerm)).toEqual(
          [...model]
            .filter(([, postings]) => postings.length > 0)
            .map(([term, postings]): [string, number[]] => [term, postings.flat()])
            .sort(byTerm),
        )
      }),
      { numRuns: 300 },
    )
  })

  test('saved as [term, [id, count, ...]] and loaded back the same, in the form older snapshots hold', () => {
    const lists = new PostingLists()
    lists.add('alpha', 1, 1)
    lists.add('alpha', 1 << 24, 3)
    lists.add('beta', 2, 400)
    const saved = [...lists.saved()]
    expect(saved).toEqual([
      ['alpha', [1, 1, 1 << 24, 3]],
      ['beta', [2, 400]],
    ])
    const loaded = PostingLists.fromSaved(JSON.parse(JSON.stringify(saved)))
    expect([...loaded.saved()]).toEqual(saved)
    expect(loaded.documents('alpha')).toBe(2)
    loaded.add('alpha', 9, 1)
    expect(postingsOf(loaded, 'alpha')).toEqual([
      [1, 1],
      [1 << 24, 3],
      [9, 1],
    ])
    // An empty list saved by an older version is no term at all.
    expect(PostingLists.fromSaved([['gone', []]]).terms).toBe(0)
  })
})
