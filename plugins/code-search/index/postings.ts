/**
 * The inverted index of one text field: term -> the documents holding it (Orama's internal ids) and how often, in
 * the order they were added. Each term's list is one Int32Array of packed entries, so a posting takes 4 bytes
 * rather than the 16 of two numbers in a JS array, and the engine keeps one object per term, not per posting.
 *
 * A list is [words used, documents, entry, entry, ...]. An entry is one word, id × 256 + count, for counts below
 * 255 and ids below 2^23 (nearly all of them); otherwise three words: LONG, id, count.
 *
 * A removed document is taken out of its terms' document counts at once and skipped by every read from then on;
 * its entries stay in the lists until a sweep goes over the lists it touched, a step at a time. A list has no index
 * by document, so dropping its entries means scanning every list it touched, the longest holding most of the
 * index: dropped at the next read instead, that scan came after every change of a large removal.
 */

const HEADER = 2
const LONG = -1
const COUNT_LIMIT = 255
const ID_LIMIT = 1 << 23
const TRIM_STEP = 2000
/** Words a sweep scans between two of its steps, about a tenth of a millisecond, each list counted as LIST_WORDS more. */
const SWEEP_STEP_WORDS = 50_000
/** What looking up and scanning one list costs beyond its words, in words: about 0.8 µs, a word about 4 ns. */
const LIST_WORDS = 200

export type Posting = (id: number, count: number) => void

export class PostingLists {
  private readonly lists: Map<string, Int32Array>
  /** Terms whose list was widened since the last trim: only those have room to spare. */
  private readonly widened = new Set<string>()
  /** A byte per id: 1 while the id is removed and its entries may still be in the lists of `touched`. */
  private removed = new Uint8Array(0)
  private readonly removedIds: number[] = []
  /** Terms whose lists may hold entries of removed ids; every such list is here until swept. */
  private readonly touched = new Set<string>()

  constructor(lists = new Map<string, Int32Array>()) {
    this.lists = lists
  }

  /** Terms with at least one posting. */
  get terms(): number {
    return this.lists.size
  }

  /** 4-byte words the lists use, and the room they take. */
  get words(): { used: number; room: number } {
    let used = 0
    let room = 0
    for (const list of this.lists.values()) {
      used += list[0]!
      room += list.length
    }
    return { used, room }
  }

  /** How many documents hold the term. */
  documents(term: string): number {
    return this.lists.get(term)?.[1] ?? 0
  }

  has(term: string): boolean {
    return this.documents(term) > 0
  }

  /** Appends a posting to the term's list. */
  add(term: string, id: number, count: number): void {
    // An id removed and used again: its old entries must go before they could be read as the new document's.
    if (this.removed[id] === 1) this.sweepAll()
    let list = this.lists.get(term)
    const words = count < COUNT_LIMIT && id < ID_LIMIT ? 1 : 3
    if (!list) {
      list = new Int32Array(HEADER + words)
      list[0] = HEADER
      this.lists.set(term, list)
    } else if (list[0]! + words > list.length) {
      const wider = new Int32Array(Math.max(list.length * 2, list[0]! + words))
      wider.set(list.subarray(0, list[0]!))
      this.lists.set(term, (list = wider))
      this.widened.add(term)
    }
    write(list, list[0]!, id, count)
    list[0]! += words
    list[1]!++
  }

  /** Calls `visit` for each posting of the term, in the order they were added; removed ids are skipped. */
  forEach(term: string, visit: Posting): void {
    const list = this.lists.get(term)
    if (!list) return
    const end = list[0]!
    if (this.removedIds.length === 0) {
      for (let at = HEADER; at < end; ) {
        const word = list[at]!
        if (word === LONG) {
          visit(list[at + 1]!, list[at + 2]!)
          at += 3
        } else {
          visit(word >>> 8, word & 0xff)
          at++
        }
      }
      return
    }
    const removed = this.removed
    for (let at = HEADER; at < end; ) {
      const word = list[at]!
      if (word === LONG) {
        if (removed[list[at + 1]!] !== 1) visit(list[at + 1]!, list[at + 2]!)
        at += 3
      } else {
        if (removed[word >>> 8] !== 1) visit(word >>> 8, word & 0xff)
        at++
      }
    }
  }

  /**
   * Removes the document `id`, which holds `terms` (each once): it is out of their document counts and skipped by
   * reads at once, and its entries are dropped by the next sweep.
   */
  remove(id: number, terms: Iterable<string>): void {
    if (this.removed[id] === 1) return
    if (id >= this.removed.length) {
      const wider = new Uint8Array(Math.max(id + 1, this.removed.length * 2, 1024))
      wider.set(this.removed)
      this.removed = wider
    }
    this.removed[id] = 1
    this.removedIds.push(id)
    for (const term of terms) {
      const list = this.lists.get(term)
      if (!list) continue
      list[1]!--
      this.touched.add(term)
    }
    // No list held it: nothing to sweep, and nothing for reads to skip.
    this.forgetRemoved()
  }

  /** Whether removed documents' entries are still in the lists, for a sweep to drop. */
  get sweepPending(): boolean {
    return this.touched.size > 0
  }

  /**
   * Drops removed documents' entries from the lists they touched, keeping the order of the rest, giving way (yield)
   * every SWEEP_STEP_WORDS words scanned; a list left empty goes, and one that shrank to under a quarter of its room
   * is copied into one of its size. Removals made meanwhile are swept too; any step leaves the lists consistent,
   * so a sweep may be left unfinished, or run beside another.
   */
  *sweep(): Generator<void> {
    let scanned = 0
    for (const term of this.touched) {
      this.touched.delete(term)
      scanned += this.dropRemovedFrom(term) + LIST_WORDS
      if (scanned < SWEEP_STEP_WORDS) continue
      scanned = 0
      yield
    }
    this.forgetRemoved()
  }

  /** A whole sweep at once. */
  sweepAll(): void {
    for (const term of this.touched) this.dropRemovedFrom(term)
    this.touched.clear()
    this.forgetRemoved()
  }

  /** Once no list holds a removed id's entries, the ids are plain ids again, which may come back. */
  private forgetRemoved(): void {
    if (this.touched.size > 0) return
    for (const id of this.removedIds) this.removed[id] = 0
    this.removedIds.length = 0
  }

  /** Drops the removed ids' entries from the term's list; answers the words scanned. */
  private dropRemovedFrom(term: string): number {
    const list = this.lists.get(term)
    if (!list) return 0
    const removed = this.removed
    const end = list[0]!
    let kept = HEADER
    let documents = 0
    for (let at = HEADER; at < end; ) {
      const long: boolean = list[at] === LONG
      const id: number = long ? list[at + 1]! : list[at]! >>> 8
      const words = long ? 3 : 1
      if (removed[id] !== 1) {
        for (let w = 0; w < words; w++) list[kept + w] = list[at + w]!
        kept += words
        documents++
      }
      at += words
    }
    list[0] = kept
    list[1] = documents
    if (documents === 0) this.lists.delete(term)
    else if (kept * 4 < list.length) this.lists.set(term, list.slice(0, kept))
    return end
  }

  /**
   * Copies each list widened since into one of its size, giving way (yield) every TRIM_STEP lists. A list
   * grows by doubling, so after an import a third of the lists' room is unused; the next posting added to a
   * trimmed list grows it again.
   */
  *trim(): Generator<void> {
    let seen = 0
    for (const term of this.widened) {
      this.widened.delete(term)
      const list = this.lists.get(term)
      if (list && list[0]! < list.length) this.lists.set(term, list.slice(0, list[0]!))
      if (++seen % TRIM_STEP === 0) yield
    }
  }

  /** Every list as [term, [id, count, id, count, ...]], as snapshots store them. */
  *saved(): Generator<[string, number[]]> {
    for (const term of this.lists.keys()) {
      const pairs: number[] = []
      this.forEach(term, (id, count) => pairs.push(id, count))
      if (pairs.length > 0) yield [term, pairs]
    }
  }

  /** Lists from their saved form, each in an array of its size, written there directly. */
  static fromSaved(saved: Iterable<[string, readonly number[]]>): PostingLists {
    const lists = new Map<string, Int32Array>()
    for (const [term, pairs] of saved) {
      if (pairs.length === 0) continue
      const list = new Int32Array(savedWords(pairs))
      writeSaved(list, 0, pairs)
      lists.set(term, list)
    }
    return new PostingLists(lists)
  }

  /**
   * Lists in their saved form packed as fromSaved would hold them, one after the other in one array: built where
   * the snapshot is decoded (a Worker), so that taking them in (addPacked) is only copying.
   */
  static pack(saved: Iterable<[string, readonly number[]]>): PackedPostings {
    const terms: string[] = []
    const sizes: number[] = []
    let total = 0
    const entries = Array.isArray(saved) ? (saved as [string, readonly number[]][]) : [...saved]
    for (const [term, pairs] of entries) {
      if (pairs.length === 0) continue
      const words = savedWords(pairs)
      terms.push(term)
      sizes.push(words)
      total += words
    }
    const offsets = new Int32Array(terms.length + 1)
    const words = new Int32Array(total)
    let term = 0
    for (const [, pairs] of entries) {
      if (pairs.length === 0) continue
      writeSaved(words, offsets[term]!, pairs)
      offsets[term + 1] = offsets[term]! + sizes[term]!
      term++
    }
    return { terms, offsets, words }
  }

  /** Takes in lists packed by pack, each copied into an array of its size; a term held already is replaced. */
  addPacked({ terms, offsets, words }: PackedPostings): void {
    for (let i = 0; i < terms.length; i++) this.lists.set(terms[i]!, words.slice(offsets[i]!, offsets[i + 1]!))
  }
}

/** Words a list in its saved form ([id, count, id, count, ...]) takes, its header with it. */
function savedWords(pairs: readonly number[]): number {
  let words = HEADER
  for (let i = 0; i < pairs.length; i += 2) words += pairs[i + 1]! < COUNT_LIMIT && pairs[i]! < ID_LIMIT ? 1 : 3
  return words
}

/** Writes a list in its saved form at `start` of `target`, its header first. */
function writeSaved(target: Int32Array, start: number, pairs: readonly number[]): void {
  let at = start + HEADER
  for (let i = 0; i < pairs.length; i += 2) at += write(target, at, pairs[i]!, pairs[i + 1]!)
  target[start] = at - start
  target[start + 1] = pairs.length / 2
}

/** Posting lists packed one after the other: term i's list is words[offsets[i]] up to words[offsets[i + 1]]. */
export interface PackedPostings {
  terms: string[]
  offsets: Int32Array
  words: Int32Array
}

/** Writes one entry at `at`; answers the words it took. */
function write(list: Int32Array, at: number, id: number, count: number): number {
  if (count < COUNT_LIMIT && id < ID_LIMIT) {
    list[at] = id * 256 + count
    return 1
  }
  list[at] = LONG
  list[at + 1] = id
  list[at + 2] = count
  return 3
}
