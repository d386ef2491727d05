/**
 * The changes the file tools made, per file, most recent last, so undo_edit can take them back one by one. Each
 * record holds what the file held before (null: it did not exist) and a hash of what the tool left, so an undo
 * can say when a command changed the file since. Commands' own changes are not recorded.
 */

/** Changes kept per file. */
export const UNDO_LEVELS = 5
/** A file larger than this (in characters) before a change is not kept: that change cannot be undone. */
export const MAX_UNDO_CHARS = 1024 * 1024

export interface EditRecord {
  /** The tool that made the change. */
  tool: string
  /** The file before it; null when the change created it. */
  before: string | null
  /** Hash of what the change left (null: it deleted the file). */
  left: bigint
}

const hashOf = (text: string | null) => BigInt(text === null ? -1 : Bun.hash(text))

export class EditHistory {
  private readonly byPath = new Map<string, EditRecord[]>()

  /**
   * Records a change of `path` (already normalised). False when it cannot be undone (the file was too large to
   * keep); then the earlier records go too, since undoing them would silently undo this change as well.
   */
  record(path: string, tool: string, before: string | null, after: string | null): boolean {
    if (before !== null && before.length > MAX_UNDO_CHARS) {
      this.byPath.delete(path)
      return false
    }
    const records = this.byPath.get(path) ?? []
    records.push({ tool, before, left: hashOf(after) })
    if (records.length > UNDO_LEVELS) records.shift()
    this.byPath.set(path, records)
    return true
  }

  /** The last change of `path`, removed from the history. */
  take(path: string): EditRecord | undefined {
    const records = this.byPath.get(path)
    const last = records?.pop()
    if (records && records.length === 0) this.byPath.delete(path)
    return last
  }

  /** Changes of `path` that can still be undone. */
  levels(path: string): number {
    return this.byPath.get(path)?.length ?? 0
  }

  /** Whether `current` (null: absent) is what the record's change left. */
  static unchangedSince(record: EditRecord, current: string | null): boolean {
    return record.left === hashOf(current)
  }
}
