import { describe, expect, test } from 'bun:test'
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

  test('dropping ids keeps the rest in order, removes emptied terms, and the lists take new postings after', () => {
    const lists = new PostingLists()
    for (let id = 1; id <= 100; id++) lists.add('common', id, id % 3 === 0 ? 1000 : 2)
    lists.add('rare', 50, 1)
    lists.add('untouched', 50, 1)
    const dropped = new Set(Array.from({ length: 90 }, (_, i) => i + 1))
    lists.drop(dropped, ['common', 'rare'])
    expect(postingsOf(lists, 'common')).toEqual(Array.from({ length: 10 }, (_, i) => [91 + i, (91 + i) % 3 === 0 ? 1000 : 2]))
    expect(lists.documents('common')).toBe(10)
    expect(lists.has('rare')).toBe(false)
    // Only the terms named are touched.
    expect(postingsOf(lists, 'untouched')).toEqual([[50, 1]])
    // A dropped id comes back (its slot reused) at the end of the list.
    lists.add('common', 5, 7)
    lists.add('rare', 5, 1)
    expect(postingsOf(lists, 'common').at(-1)).toEqual([5, 7])
    expect(lists.documents('common')).toBe(11)
    expect(postingsOf(lists, 'rare')).toEqual([[5, 1]])
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
