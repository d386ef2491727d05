/**
 * Indexing an import (indexing.ts): its files cut into chunks (chunker.ts, with the declarations languages.ts knows),
 * prepared on a Worker when the import is large (preparation.ts, prepare-worker.ts), and applied to the index.
 */
export { chunkFile, type ChunkerOptions } from './chunker.ts'
export { indexedCommit, indexFiles, removeRepository, type IndexingOptions } from './indexing.ts'
