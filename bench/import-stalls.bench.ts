/**
 * Whether an import freezes the service for everyone else: a client on another thread polls /health every
 * 20 ms and searches continuously while a repository of real code (from node_modules) is imported over git
 * smart HTTP into an organisation already holding 50,000 chunks, with its snapshots saved as in production
 * (SQLite version table, files in a temporary DATA_DIR). Then the same while a large repository (the real
 * repository of bench/import-real.bench.ts, about 8,000 files, at depth 1) is imported into an empty
 * organisation: an import that size is prepared on a Worker. Baseline: the same client while nothing is
 * imported. The longest stall is the longest a /health poll waited past its due time.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createCodeIndex, createFileSnapshotStore, createHashedEmbeddings } from '../plugins/code-search/index.ts'
import { createImportService } from '../plugins/imports/index.ts'
import { createLogger } from '../src/log.ts'
import { openDatabase } from '../src/storage/database.ts'
import { migrate } from '../src/storage/migrate.ts'
import { migrations } from '../src/storage/migrations/index.ts'
import { startGitServer, type FixtureFiles } from '../test/fakes/git-server.ts'
import { loadCodeCorpus } from './lib/code-corpus.ts'
import { buildRealRepository } from './lib/real-repository.ts'
import type { PollAnswer, PollRequest } from './lib/stall-poller.ts'
import { printTable, ratioOf, writeResults, type Row } from './lib/report.ts'

const SEED_CHUNKS = 50_000
const IMPORT_FILES = 600
const BASELINE_MS = 5_000
const QUERIES = ['read file as text', 'websocket message handler', 'validate schema', 'parse arguments', 'abort controller signal']

const percentile = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))] ?? 0
}

/** Files of real code for the imported repository, from the end of node_modules (the seed takes the start). */
async function importedFiles(): Promise<{ files: FixtureFiles; count: number; bytes: number }> {
  const root = join(import.meta.dir, '..', 'node_modules')
  const paths = [...new Bun.Glob('**/*.{ts,js,md}').scanSync({ cwd: root, followSymlinks: false })].sort().reverse()
  const files: FixtureFiles = {}
  let count = 0
  let bytes = 0
  for (const path of paths) {
    if (count >= IMPORT_FILES) break
    const handle = Bun.file(join(root, path))
    if (handle.size > 256 * 1024 || handle.size === 0) continue
    files[path] = await handle.text()
    count++
    bytes += handle.size
  }
  return { files, count, bytes }
}

async function measure(url: string, during: () => Promise<unknown>): Promise<PollAnswer & { ms: number }> {
  const poller = new Worker(new URL('./lib/stall-poller.ts', import.meta.url).href)
  try {
    const answered = new Promise<PollAnswer>((resolve) => (poller.onmessage = ({ data }) => resolve(data)))
    poller.postMessage({ url, queries: QUERIES, pollMs: 20, searchPauseMs: 10 } satisfies PollRequest)
    const started = performance.now()
    await during()
    const ms = performance.now() - started
    poller.postMessage('stop')
    return { ...(await answered), ms }
  } finally {
    poller.terminate()
  }
}

export async function run(): Promise<Row[]> {
  const work = mkdtempSync(join(tmpdir(), 'import-stalls-bench-'))
  const gitServer = startGitServer()
  const db = await openDatabase({ sqliteFile: join(work, 'service.db') })
  await migrate(db, migrations)
  const logger = createLogger({ level: 'error' })
  const snapshots = createFileSnapshotStore({ db, dir: join(work, 'code-index') })
  const codeIndex = createCodeIndex({ embeddings: createHashedEmbeddings(), snapshots, logger })
  const imports = createImportService({
    db,
    codeIndex,
    dataDir: join(work, 'data'),
    settings: {
      codehostUrl: gitServer.url,
      codehostProvider: 'github',
      allowHosts: [`127.0.0.1:${gitServer.port}`],
      maxRepositoryBytes: 2 * 1024 ** 3,
      maxFiles: 1_000_000,
      maxFileBytes: 100 * 1024 ** 2,
      cloneTimeoutMs: 600_000,
    },
    logger,
  })
  const orgId = 'org-stalls'
  const server = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    async fetch(request) {
      const url = new URL(request.url)
      if (url.pathname === '/health') return Response.json({ status: 'ok' })
      if (url.pathname === '/search') return Response.json(await codeIndex.search({ orgId }, { query: url.searchParams.get('q') ?? 'x', limit: 10 }))
      return new Response('not found', { status: 404 })
    },
  })
  const url = `http://127.0.0.1:${server.port}`
  try {
    const corpus = await loadCodeCorpus(SEED_CHUNKS)
    const seedStarted = performance.now()
    for (const repository of corpus.repositories)
      await codeIndex.indexFiles({ orgId, repositoryId: repository.id, repositoryName: repository.name, files: repository.files })
    console.log(`import-stalls: seeded ${corpus.chunks.toLocaleString('en-US')} chunks in ${((performance.now() - seedStarted) / 1000).toFixed(1)} s`)
    const { files, count, bytes } = await importedFiles()
    gitServer.createRepository('bench/real-code', files)
    // A compaction the seed started (a new version, claimed when its Worker is done) is not what is measured.
    const seeded = (await snapshots.current(orgId))?.version
    const compacts = 'compact' in snapshots
    for (let waited = 0; compacts && waited < 120_000 && (await snapshots.current(orgId))?.version === seeded; waited += 500) await Bun.sleep(500)
    // Nor is the term space the seed's chunks are being learnt into, on its Worker.
    const seedLearning = performance.now()
    await codeIndex.meaningLearnt?.(orgId)
    console.log(`import-stalls: the seed's term space learnt ${((performance.now() - seedLearning) / 1000).toFixed(1)} s after the compaction`)
    await Bun.sleep(1_000)

    // Every query once first: compiling the search path is not a stall the import causes.
    for (const query of QUERIES) await fetch(`${url}/search?q=${encodeURIComponent(query)}`).then((r) => r.arrayBuffer())
    // The seed's garbage collected now rather than during the baseline.
    Bun.gc(true)
    const baseline = await measure(url, () => Bun.sleep(BASELINE_MS))
    let chunks = 0
    const during = await measure(url, async () => {
      const started = await imports.start({ orgId, userId: 'bench' }, { repository: gitServer.urlOf('bench/real-code') })
      await imports.settled(started.id)
      const view = (await imports.get(orgId, started.id))!
      if (view.status !== 'succeeded') throw new Error(`import failed: ${JSON.stringify(view.error)}`)
      chunks = view.summary?.index.chunks ?? 0
    })
    console.log(
      `import-stalls: import of ${count} files took ${(during.ms / 1000).toFixed(1)} s; ${during.health.length} polls, ${during.search.length} searches`,
    )
    // The import ends by learning the organisation's term space again, on a Worker: the service meanwhile.
    const learning = await measure(url, () => codeIndex.meaningLearnt!(orgId))
    console.log(
      `import-stalls: the term space of ${(SEED_CHUNKS + chunks).toLocaleString('en-US')} chunks learnt in ${(learning.ms / 1000).toFixed(1)} s after the import; ${learning.health.length} polls, ${learning.search.length} searches`,
    )

    // A large import into an empty organisation; the client still searches the seeded one.
    const large = await buildRealRepository(join(gitServer.root, 'bench/large.git'))
    let largeChunks = 0
    const duringLarge = await measure(url, async () => {
      const started = await imports.start({ orgId: 'org-empty', userId: 'bench' }, { repository: gitServer.urlOf('bench/large'), depth: 1 })
      await imports.settled(started.id)
      const view = (await imports.get('org-empty', started.id))!
      if (view.status !== 'succeeded') throw new Error(`import failed: ${JSON.stringify(view.error)}`)
      largeChunks = view.summary?.index.chunks ?? 0
    })
    console.log(
      `import-stalls: import of ${large.files.toLocaleString('en-US')} files (${(large.bytes / 1024 ** 2).toFixed(1)} MiB, ${largeChunks.toLocaleString('en-US')} chunks) into an empty organisation took ${(duringLarge.ms / 1000).toFixed(1)} s; ${duringLarge.health.length} polls, ${duringLarge.search.length} searches`,
    )
    const failures = baseline.failures + during.failures + learning.failures + duringLarge.failures
    const warning = failures > 0 ? `${failures} requests failed` : undefined
    const notes = [
      `${SEED_CHUNKS.toLocaleString('en-US')} chunks of node_modules code already indexed; imported: ${count} files (${(bytes / 1024 / 1024).toFixed(1)} MiB) of node_modules as one commit, ${chunks.toLocaleString('en-US')} chunks, hashed embeddings`,
      'client on a Worker thread: GET /health due every 20 ms, searches one after another 10 ms apart (hybrid, limit 10, codeIndex.search behind a bare Bun.serve route); baseline: the same client, no import',
    ]
    const longest = (answer: PollAnswer) => Math.max(0, ...answer.health)
    return [
      {
        figure: 'longest /health stall during an import',
        unit: 'ms',
        baseline: longest(baseline),
        value: longest(during),
        ratio: ratioOf(longest(during), longest(baseline)),
        limit: { atMost: 50 },
        notes,
        warning,
      },
      {
        figure: '/health p99 during an import',
        unit: 'ms',
        baseline: percentile(baseline.health, 99),
        value: percentile(during.health, 99),
        ratio: ratioOf(percentile(during.health, 99), percentile(baseline.health, 99)),
      },
      {
        figure: 'search p50 during an import',
        unit: 'ms',
        baseline: percentile(baseline.search, 50),
        value: percentile(during.search, 50),
        ratio: ratioOf(percentile(during.search, 50), percentile(baseline.search, 50)),
      },
      {
        figure: 'search p99 during an import',
        unit: 'ms',
        baseline: percentile(baseline.search, 99),
        value: percentile(during.search, 99),
        ratio: ratioOf(percentile(during.search, 99), percentile(baseline.search, 99)),
        limit: { atMost: 50 },
      },
      {
        figure: 'longest /health stall while the term space is learnt',
        unit: 'ms',
        baseline: longest(baseline),
        value: longest(learning),
        ratio: ratioOf(longest(learning), longest(baseline)),
        limit: { atMost: 50 },
      },
      {
        figure: 'longest /health stall during a large import into an empty organisation',
        unit: 'ms',
        baseline: longest(baseline),
        value: longest(duringLarge),
        ratio: ratioOf(longest(duringLarge), longest(baseline)),
        limit: { atMost: 50 },
        notes: [
          `${large.files.toLocaleString('en-US')} files (${(large.bytes / 1024 ** 2).toFixed(1)} MiB) of real code at depth 1 (bench/lib/real-repository.ts), ${largeChunks.toLocaleString('en-US')} chunks, prepared on a Worker; the client searches the seeded organisation meanwhile`,
        ],
      },
      {
        figure: 'search p99 during a large import into an empty organisation',
        unit: 'ms',
        baseline: percentile(baseline.search, 99),
        value: percentile(duringLarge.search, 99),
        ratio: ratioOf(percentile(duringLarge.search, 99), percentile(baseline.search, 99)),
        limit: { atMost: 50 },
      },
      {
        figure: 'search p99 while the term space is learnt',
        unit: 'ms',
        baseline: percentile(baseline.search, 99),
        value: percentile(learning.search, 99),
        ratio: ratioOf(percentile(learning.search, 99), percentile(baseline.search, 99)),
        limit: { atMost: 50 },
      },
    ]
  } finally {
    server.stop(true)
    await imports.close()
    await codeIndex.close()
    await db.close()
    await gitServer.close()
    rmSync(work, { recursive: true, force: true })
  }
}

if (import.meta.main) {
  const rows = await run()
  printTable(rows)
  console.log(`results: ${writeResults('import-stalls', rows)}`)
}
