/**
 * Every tuned number of code search, each beside the measurement that chose it; settings an operator chooses are
 * in settings.ts. Imports nothing, so any file of the plugin and its Workers may read it.
 *
 * "The quality bench" is bench/search-quality.bench.ts: 714 questions (a doc comment's first sentence, answered by
 * its function's file) over nine repositories, five of them for tuning (axios, oauthlib, @ai-sdk/provider-utils,
 * Python's logging and importlib) and four held out (the constants before REPOSITORY_FIT were chosen then; it now holds
 * five more held-out repositories, 1,084 questions, and also asks them of all fourteen in one organisation); its
 * figures are file MRR@10 unless they say chunk. "The search
 * bench" is bench/search.bench.ts (50,000 chunks), "the stall bench" bench/import-stalls.bench.ts and "the real
 * import bench" bench/import-real.bench.ts. Their figures are in docs/search.mdx and docs/benchmarks.mdx.
 */

// Ranking: a chunk's words

/**
 * BM25 field weights of a chunk: a declared name or a path word says more than a word of the body. Symbols at 2
 * came with the fusion of scores: the two took hybrid on the first five repositories of the quality bench from
 * 0.69 (rank fusion, symbols at 3) to 0.71 (held out 0.66 to 0.71). A path word at 1 raised the tuning
 * repositories by about 0.006 each and lowered three of the four held out by 0.01 to 0.02.
 */
export const FIELD_BOOST = { symbols: 2, pathText: 2, content: 1 }

/**
 * BM25 of a chunk, Orama's k and d with a length normalisation b of 0.5 rather than 0.75: a chunk is already one
 * declaration, and at 0.75 a one-line chunk naming a word outranks the function doing the work. 0.4 to 0.6 score
 * alike on the tuning repositories of the quality bench; 0.5 raised hybrid chunk MRR@10 in all five.
 */
export const CHUNK_BM25 = { k: 1.2, b: 0.5, d: 0.5 }

/**
 * BM25 of a whole file: the usual k and b, and the names the file declares at half a word of its content (the file
 * defining what a question names holds the answer more often than those using it). Of 0.5, 0.75 and 1, each with
 * full-text shares of 0.5, 0.55 and 0.6, 0.5 with 0.6 gave the best file and chunk MRR@10 on the tuning
 * repositories of the quality bench (0.829 and 0.595) of those leaving hybrid at least the better of text and
 * vector in each; it lifted hybrid in logging from 0.952, behind text's 0.969, to above it.
 */
export const FILE_BM25 = { k: 1.2, b: 0.75, symbols: 0.5 }

/**
 * Weight of a synonym against the question's own word. Came with the dropped grammar words, the file priors and
 * a weighted fusion: together they raised hybrid on the first five repositories of the quality bench from 0.64
 * to 0.69 (held out 0.64 to 0.66). No other weight is recorded as tried.
 */
export const SYNONYM_WEIGHT = 0.4

/**
 * A synonym held by more than `chunks` chunks, and by more than one in `oneIn` of them, is skipped: its idf is low
 * and its postings long. Skipped in whole-file scores as in chunk scores, hybrid p99 on the search bench fell from
 * 31 to 10 ms.
 */
export const COMMON_SYNONYM = { chunks: 1000, oneIn: 20 }

/**
 * How a question weighs each repository of an organisation by how well its code as a whole says the question's
 * words: chunks of a repository whose per-word log-likelihood is lower by x than the best repository's weigh
 * exp(-sharpness x) in the full-text list and the whole-file scores, exp(-vectorSharpness x) in the vector list;
 * `smoothing` is the Dirichlet prior in words. With all fourteen repositories of the quality bench in one
 * organisation, the tuning repositories' summed file MRR@10 of text, vector and hybrid was 2.03, 2.43 and 3.28
 * without it; sharpness 1 gave 2.79, 2.54 and 3.27 (4 gave less in each), 1 on the full-text list alone 2.79, 2.43
 * and 3.38, and 0.4 gave 2.73, 2.66 and 3.35, the best sum. Once each repository had its own term space, the vector
 * list at 0.2 raised vector and hybrid to 2.89 and 3.41 (0.4: 2.85 and 3.38; 0.1: 2.75 and 3.43; 0.8: 2.75 and
 * 3.36; none: 2.29 and 3.42); the full-text list at 0.6 or 1 with it raised the tuning repositories' text (2.77,
 * 2.79) but lowered the held-out ones' text and hybrid, so it stayed at 0.4. Smoothing of 3,000 or 10,000 words
 * raised the tuning repositories' sums (hybrid 3.48, 3.56) but not the held-out ones', and at 10,000 put vector below
 * whole-file BM25 in the standard library again.
 */
export const REPOSITORY_FIT = { smoothing: 1000, sharpness: 0.4, vectorSharpness: 0.2 }

// Ranking: a chunk's meaning

/**
 * Share of a vector score taken from the learnt term space, the rest from the embeddings. Of 0.25, 0.3, 0.4 and
 * 0.55, 0.25 scored best on the tuning repositories of the quality bench for vector search (0.742; 0.735, 0.738,
 * 0.713) and for hybrid (0.829; 0.827, 0.825, 0.820).
 */
export const MEANING_SHARE = 0.25

/**
 * Dimensions of a learnt term space. 32 ranked vector search as well as 64 on the tuning repositories of the
 * quality bench (0.744 against 0.734), learn in a third of the time and halve the scan they add to a search.
 */
export const TERM_SPACE_DIMENSIONS = 32

// Ranking: a chunk's file

/**
 * How much a file's kind weighs on its chunks' scores. Came with the synonym weight, the dropped grammar words
 * and a weighted fusion: together they raised hybrid on the first five repositories of the quality bench from
 * 0.64 to 0.69. No other weights are recorded as tried.
 */
export const FILE_PRIOR = {
  source: 1,
  /** Code that uses the library rather than defines it. */
  example: 0.7,
  /** Tests, unless the question asks for them (then 1). */
  test: 0.5,
  /** README and other prose, and type declarations, which name what is implemented elsewhere. */
  proseOrDeclarations: 0.5,
  /** Licences, changelogs and the like, and the pages of a generated documentation site. */
  housekeeping: 0.4,
  /** Built, vendored and minified files. */
  vendored: 0.4,
}

// Ranking: fusing lists

/**
 * Share of the full-text list in hybrid's fusion of scores, the rest the vector list's. 0.5 to 0.7 score alike on
 * the tuning repositories of the quality bench (0.822 to 0.826 with the term space at 0.4); at 0.6 hybrid ranks
 * at least as well as the better of text and vector in each of the nine repositories, files and chunks.
 */
export const TEXT_SHARE = 0.6

/**
 * Share of the whole-file score (the best file of the answer 1) added to each of its chunks' hybrid score. 0.4 to
 * 0.8 score alike on the tuning repositories of the quality bench; 0.6 raised their summed file MRR@10 from 3.94 to
 * 4.12 and chunk MRR@10 from 2.85 to 2.96, and the standard library's hybrid from 0.508 to 0.588.
 */
export const FILE_SHARE = 0.6

/**
 * Share of the ranking of a model's code for the question (CODE_SEARCH_EXPANSION_MODEL), the rest the question's.
 * Not tuned: no model answers where the quality bench runs. Half each trusts the model as much as the question;
 * with the test suite's fake model, which answers every question alike, hybrid fell from 0.76 to 0.60.
 */
export const EXPANSION_SHARE = 0.5

/**
 * How deep each list is taken: this many times the results asked for, at least `least`, so that fusion and the
 * file priors can lift a chunk from below the answer. Not measured: the first version's choice.
 */
export const RANKING_DEPTH = { perResult: 3, least: 30 }

// Sharing the event loop

/**
 * Milliseconds a search runs before other work may run between its steps. At 6 the search bench's hybrid p99 came
 * back to 14 to 16 ms from 19 to 21, but the stall bench's longest /health stall in a large import rose to 44.5 ms.
 */
export const SEARCH_SLICE_MS = 3

/**
 * Milliseconds of indexing between two turns of the event loop. With it, the stall bench's longest /health stall
 * during an import into 50,000 chunks was 13.0 to 14.4 ms in three runs (bound 50). No other slice is recorded as
 * tried.
 */
export const INDEX_SLICE_MS = 4

/**
 * Chunks one change of a removal drops (a repository's, or the paths an import deleted), with a turn of the event
 * loop between changes: a chunk's removal counts its words again to find its postings, about 34 µs a chunk on the
 * stall bench, where removing its imported repository of 43,863 chunks as one change held the event loop for
 * 1,485 ms. 100 keeps a change near 3.5 ms, when its chunks are of the usual size (REMOVAL_BATCH_CHARS).
 */
export const REMOVAL_BATCH_CHUNKS = 100

/**
 * Characters of content one change of a removal drops at most, beside REMOVAL_BATCH_CHUNKS: counting the words
 * again costs by the character (33 ns each, on real code), and chunks run from one line to 4,000 characters, so
 * changes of 100 chunks took from 1 to 28 ms. 100,000 is the average 100 chunks (1,160 characters each).
 */
export const REMOVAL_BATCH_CHARS = 100_000

/**
 * Quiet time after the last change that removed chunks before their entries are swept out of the full-text
 * postings (reads skip them meanwhile): a removal of many chunks goes in changes a few milliseconds apart, and one
 * sweep after them scans each list once rather than once a change.
 */
export const SWEEP_DELAY_MS = 100

/**
 * Longest wait of indexing for the searches under way, so a stream of them cannot stop an import. With it, the
 * stall bench's search p99 during an import was 22.4 to 30.9 ms in three runs (bound 50). No other wait is
 * recorded as tried.
 */
export const SEARCH_PRIORITY_MS = 20

/**
 * Characters of chunk text per message to the term-space Worker. Handed over this way, the space of 53,000 chunks
 * is learnt with a longest /health stall of 20 to 26 ms on the stall bench.
 */
export const TERM_SPACE_BATCH_CHARS = 64 * 1024

/** Terms of a learnt space's table built per turn of the event loop: 30,000 at once held it 11 ms. */
export const TERMS_PER_TURN = 4096

// Preparing large imports on a Worker

/**
 * Bytes of files from which an import is chunked and embedded on the preparation Worker. For an import of 9 MB in
 * a fresh process the Worker cost about a tenth more than it saved (1.17 against 1.05 s, real import bench):
 * below this, copying to and from it costs what it saves.
 */
export const PREPARE_IN_WORKER_FROM = 16 * 1024 ** 2

/**
 * Characters of files per message to the preparation Worker, and messages sent and not yet inserted (so the Worker
 * always has one waiting while the event loop reads files and inserts). With these, the real import bench indexed
 * 10,025 and 10,049 chunks/s against 9,310 on the event loop alone. No other sizes are recorded as tried.
 */
export const PREPARE_BATCH_CHARS = 256 * 1024
export const PREPARE_IN_FLIGHT = 4

// Saving

/**
 * Bytes of segments appended to a snapshot beyond which a Worker rewrites it as one base (also once they outweigh
 * half the base). Not measured: it bounds how much a load replays.
 */
export const COMPACT_AFTER_BYTES = 8 * 1024 ** 2
