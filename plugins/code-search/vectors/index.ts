/**
 * Chunk vectors: the store searched by exact nearest neighbour (vectors.ts), and the term space learnt from an
 * organisation's own code (term-space.ts), learnt on a Worker (term-space-learner.ts, term-space-worker.ts).
 */
export { nearestSteps, runToEnd, VectorStore, type ScoredSlot, type ScoringPart, type VectorQuery } from './vectors.ts'
export { embedCountedInTermSpace, embedInTermSpace, type TermSpace } from './term-space.ts'
export { Meaning } from './meaning.ts'
export { termSpaceLearner, type MeaningBatch } from './term-space-learner.ts'
