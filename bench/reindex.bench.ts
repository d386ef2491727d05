/**
 * Re-indexing changed files: an organisation's index holds 100,000 chunks of real code (the project's
 * node_modules, bench/lib/code-corpus.ts) when the files of its last import are indexed again with a line changed,
 * each file's old chunks removed and its new ones stored. The baseline is that last import itself, the same files
 * new to the index, in the same round: what storing those chunks costs with nothing to remove.
 *
 * A removed chunk's slot is taken again only once the sweep has dropped its postings entries (OrgIndex): taken at
 * once, each changed file's first chunk swept every list the removal touched, the longest holding most of the index.
 */
import { createCodeIndex, createHashedEmbeddings, type RepositoryFile } from '../plugins/code-search/index.ts'
import { loadCodeCorpus } from './lib/code-corpus.ts'
import { median } from './lib/import-support.ts'
import { meterLoop } from './lib/loop-meter.ts'
import { quickOr } from './lib/mode.ts'
import { printTable, ratioOf, spreadOf, writeResults, type Row } from './lib/report.ts'

const CHUNKS = quickOr(100_000, 40_000)
const ROUNDS = quickOr(3, 1)
/** The share of the files imported last, then changed. */
const CHANGED_SHARE = 0.1

interface Import {
  usPerChunk: number
  longestTurnMs: number
}

async function timedImport(index: ReturnType<typeof createCodeIndex>, files: RepositoryFile[]): Promise<Import> {
  const meter = meterLoop(1)
  const started = performance.now()
  const { chunks } = await index.indexFiles({ orgId: 'bench', repositoryId: 'bench-repo', repositoryName: 'bench/repo', files })
  const ms = performance.now() - started
  const turns = meter.stop()
  return { usPerChunk: (1000 * ms) / chunks, longestTurnMs: Math.max(0, ...turns.map((turn) => turn.cpuMs)) }
}

export async function run(): Promise<Row[]> {
  const corpus = await loadCodeCorpus(CHUNKS)
  const files = corpus.repositories.flatMap((repository) => repository.files)
  const last = files.slice(Math.floor(files.length * (1 - CHANGED_SHARE)))
  const changed = last.map((file) => ({ path: file.path, content: `${file.content}\n// changed\n` }))
  const fresh: Import[] = []
  const again: Import[] = []
  for (let round = 0; round < ROUNDS; round++) {
    const index = createCodeIndex({ embeddings: createHashedEmbeddings() })
    await index.indexFiles({ orgId: 'bench', repositoryId: 'bench-repo', repositoryName: 'bench/repo', files: files.slice(0, files.length - last.length) })
    fresh.push(await timedImport(index, last))
    again.push(await timedImport(index, changed))
    await index.close()
    console.log(
      `reindex round ${round + 1}: new ${fresh.at(-1)!.usPerChunk.toFixed(1)} µs/chunk (longest turn ${fresh.at(-1)!.longestTurnMs.toFixed(1)} ms), ` +
        `changed ${again.at(-1)!.usPerChunk.toFixed(1)} µs/chunk (longest turn ${again.at(-1)!.longestTurnMs.toFixed(1)} ms)`,
    )
  }
  const notes = [
    `${corpus.chunks.toLocaleString('en')} chunks of node_modules in one repository; ${last.length.toLocaleString('en')} files imported last, then changed`,
    `baseline: the same files imported new, the round before they change; median of ${ROUNDS} rounds`,
  ]
  const rows: Row[] = []
  for (const [figure, unit, of] of [
    ['re-indexing changed files, per chunk', 'µs', (i: Import) => i.usPerChunk],
    ['longest event-loop turn while re-indexing changed files (CPU)', 'ms', (i: Import) => i.longestTurnMs],
  ] as const) {
    const baseline = median(fresh.map(of))
    const value = median(again.map(of))
    rows.push({ figure, unit, baseline, value, ratio: ratioOf(value, baseline), notes, spread: spreadOf(again.map(of)) })
  }
  return rows
}

if (import.meta.main) {
  const rows = await run()
  printTable(rows)
  console.log(`results: ${writeResults('reindex', rows)}`)
}
