/**
 * One organisation's index: in memory (org-index.ts, with Orama in orama.ts), the changes made to it (changes.ts),
 * its snapshots on disk and in the database (persistence.ts, compacted on a Worker by compaction-worker.ts), and its
 * life from load to close (lifecycle.ts).
 */
export { encodeFileChange } from './changes.ts'
export { IndexLifecycle, type OrgState } from './lifecycle.ts'
export type { OrgIndex, ChunkFilter, FileChunks, IndexedChunk } from './org-index.ts'
export { createFileSnapshotStore, decodeSnapshot, orgDirName, type SnapshotStore } from './persistence.ts'
