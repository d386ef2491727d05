/**
 * Whether an import freezes the service for everyone else: a client on another thread polls /health every
 * 20 ms and searches continuously while a large repository of real code (bench/lib/real-repository.ts, about
 * 8,000 files with their history) is imported over git smart HTTP into an organisation already holding 50,000
 * chunks, with its snapshots saved as in production (SQLite version table, files in a temporary DATA_DIR). Every
 * poll and search is put in the phase of the import it was due in: fetch, pack indexing, checkout, analysis,
 * indexing, snapshot (the import's last save), term space (learnt again after the import), and compaction (its
 * snapshot rewritten on a Worker and claimed). Five rounds, each a new repository of the same code, each after
 * a baseline: the same client while nothing is imported. After each round the repository is removed again, with
 * the same client: the removal is a phase of its own.
 *
 * The longest stall is the longest a /health poll waited past its due time. Beside it, the CPU time the
 * service's main thread ran meanwhile: on a host shared with other processes, the wait is mostly the host's.
 */
import { cpSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createCodeIndex, createFileSnapshotStore, createHashedEmbeddings } from '../plugins/code-search/index.ts'
import { createImportService } from '../plugins/imports/index.ts'
import { createLogger } from '../src/log.ts'
import { openDatabase } from '../src/storage/database.ts'
import { migrate } from '../src/storage/migrate.ts'
import { migrations } from '../src/storage/migrations/index.ts'
import { loadCodeCorpus } from './lib/code-corpus.ts'
import { startGitServerProcess } from './lib/git-server-process.ts'
import { importSettings } from './lib/import-support.ts'
import { meterLoop, type Turn } from './lib/loop-meter.ts'
import { buildRealRepository } from './lib/real-repository.ts'
import { printTable, ratioOf, writeResults, type Row } from './lib/report.ts'
import { epochNow } from './lib/clock.ts'
import type { PollAnswer, PollRequest, Sample } from './lib/stall-poller.ts'

const SEED_CHUNKS = 50_000
const ROUNDS = Number(process.env.IMPORT_STALLS_ROUNDS ?? 5)
const BASELINE_MS = 4_000
const QUERIES = ['read file as text', 'websocket message handler', 'validate schema', 'parse arguments', 'abort controller signal']
const PHASES = ['fetch', 'pack indexing', 'checkout', 'analysis', 'indexing', 'snapshot', 'term space', 'compaction', 'removal'] as const
type Phase = (typeof PHASES)[number]

const percentile = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))] ?? 0
}

/** What the client saw while `during` ran, and the event loop's turns meanwhile. */
async function measure(url: string, during: () => Promise<unknown>): Promise<PollAnswer & { turns: Turn[] }> {
  const poller = new Worker(new URL('./lib/stall-poller.ts', import.meta.url).href)
  const meter = meterLoop()
  try {
    const answered = new Promise<PollAnswer>((resolve) => (poller.onmessage = ({ data }) => resolve(data)))
    poller.postMessage({ url, queries: QUERIES, pollMs: 20, searchPauseMs: 10 } satisfies PollRequest)
    await during()
    poller.postMessage('stop')
    return { ...(await answered), turns: meter.stop() }
  } finally {
    meter.stop()
    poller.terminate()
  }
}

/** What the client saw in one window: polls and searches, with the worst of each. */
interface Window {
  polls: number
  longestStall: number
  /** The main thread's CPU time during that longest stall. */
  longestStallCpu: number
  /** The longest turn of the event loop, in CPU time of its thread: the longest stall on a free core. */
  longestTurn: number
  searches: number
  searchP99: number
  ms: number
}

function windowOf(health: Sample[], search: Sample[], turns: Turn[], ms: number): Window {
  const longest = health.reduce<Sample | undefined>((worst, s) => (!worst || s.ms > worst.ms ? s : worst), undefined)
  return {
    polls: health.length,
    longestStall: longest?.ms ?? 0,
    longestStallCpu: longest?.cpuMs ?? 0,
    longestTurn: Math.max(0, ...turns.map((turn) => turn.cpuMs)),
    searches: search.length,
    searchP99: percentile(
      search.map((s) => s.ms),
      99,
    ),
    ms,
  }
}

/** Each phase's window: samples due from its start to the next phase's. */
function byPhase(answer: PollAnswer & { turns: Turn[] }, starts: Map<Phase, number>, end: number): Map<Phase, Window> {
  const ordered = PHASES.filter((phase) => starts.has(phase)).map((phase) => ({ phase, at: starts.get(phase)! }))
  const windows = new Map<Phase, Window>()
  for (const [i, { phase, at }] of ordered.entries()) {
    const until = ordered[i + 1]?.at ?? end
    const inside = (s: { at: number }) => s.at >= at && s.at < until
    windows.set(phase, windowOf(answer.health.filter(inside), answer.search.filter(inside), answer.turns.filter(inside), until - at))
  }
  return windows
}

export async function run(): Promise<Row[]> {
  const work = mkdtempSync(join(tmpdir(), 'import-stalls-bench-'))
  const gitServer = await startGitServerProcess()
  const db = await openDatabase({ sqliteFile: join(work, 'service.db') })
  await migrate(db, migrations)
  const logger = createLogger({ level: 'error' })
  const snapshots = createFileSnapshotStore({ db, dir: join(work, 'code-index') })
  // Compactions under way, so a round ends once its snapshot is rewritten and claimed.
  const compactions = new Set<Promise<unknown>>()
  if (snapshots.compact) {
    const compact = snapshots.compact.bind(snapshots)
    snapshots.compact = (...args) => {
      const running = compact(...args)
      const tracked = running.catch(() => undefined).finally(() => compactions.delete(tracked))
      compactions.add(tracked)
      return running
    }
  }
  const compacted = async () => {
    while (compactions.size > 0) await Promise.all(compactions)
    // The claim runs after the Worker's answer, queued behind the index's saves.
    await Bun.sleep(500)
  }
  const codeIndex = createCodeIndex({ embeddings: createHashedEmbeddings(), snapshots, logger })
  const imports = createImportService({ db, codeIndex, dataDir: join(work, 'data'), settings: importSettings(gitServer), logger })
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
    await codeIndex.meaningLearnt?.(orgId)
    await compacted()
    console.log(`import-stalls: seeded ${corpus.chunks.toLocaleString('en-US')} chunks in ${((performance.now() - seedStarted) / 1000).toFixed(1)} s`)
    const large = await buildRealRepository(join(gitServer.root, 'bench/large.git'))

    // Every query once first: compiling the search path is not a stall the import causes.
    for (const query of QUERIES) await fetch(`${url}/search?q=${encodeURIComponent(query)}`).then((r) => r.arrayBuffer())

    const rounds: { baseline: Window; phases: Map<Phase, Window>; chunks: number; seconds: number }[] = []
    for (let round = 1; round <= ROUNDS; round++) {
      // A repository the organisation has not seen: the import fetches, checks out and indexes all of it.
      const name = `bench/large-${round}`
      cpSync(join(gitServer.root, 'bench/large.git'), join(gitServer.root, `${name}.git`), { recursive: true })
      Bun.gc(true)
      const baseline = await measure(url, () => Bun.sleep(BASELINE_MS))
      const starts = new Map<Phase, number>()
      const mark = (phase: Phase) => {
        if (!starts.has(phase)) starts.set(phase, epochNow())
      }
      let chunks = 0
      let repositoryId = ''
      let end = 0
      const answer = await measure(url, async () => {
        mark('fetch')
        const started = await imports.start({ orgId, userId: 'bench' }, { repository: gitServer.urlOf(name) })
        repositoryId = started.repository.id
        const stopFollowing = new AbortController()
        const following = (async () => {
          for await (const { event, data } of (await imports.follow(orgId, started.id, { signal: stopFollowing.signal }))!) {
            const phase = (data as { phase?: string; status?: string }).phase
            if (event === 'clone' && (phase === 'Receiving objects' || phase === 'Resolving deltas')) mark('pack indexing')
            else if (event === 'clone' && phase === 'Checking out files') mark('checkout')
            else if (event === 'status' && (data as { status: string }).status === 'analysing') mark('analysis')
            else if (event === 'status' && (data as { status: string }).status === 'indexing') mark('indexing')
            else if (event === 'indexing') {
              // Every file applied: what is left is the import's last save.
              const { filesIndexed, files } = data as { filesIndexed: number; files: number }
              if (filesIndexed === files) mark('snapshot')
            } else if (event === 'summary' || event === 'error') return
          }
        })()
        await imports.settled(started.id)
        await following
        stopFollowing.abort()
        const view = (await imports.get(orgId, started.id))!
        if (view.status !== 'succeeded') throw new Error(`import failed: ${JSON.stringify(view.error)}`)
        chunks = view.summary?.index.chunks ?? 0
        mark('term space')
        await codeIndex.meaningLearnt!(orgId)
        mark('compaction')
        await compacted()
        end = epochNow()
      })
      const phases = byPhase(answer, starts, end)
      // Back to the seeded organisation for the next round.
      const removalStarted = epochNow()
      const removal = await measure(url, () => codeIndex.removeRepository(orgId, repositoryId))
      phases.set('removal', windowOf(removal.health, removal.search, removal.turns, epochNow() - removalStarted))
      // The longest turns, to set beside a CPU profile (bun --cpu-prof, whose sample times are on the same clock).
      if (process.env.IMPORT_STALLS_TURNS) {
        const longest = [...answer.turns, ...removal.turns].sort((a, b) => b.cpuMs - a.cpuMs).slice(0, 40)
        writeFileSync(
          `${process.env.IMPORT_STALLS_TURNS}-${round}.json`,
          JSON.stringify({ starts: { ...Object.fromEntries(starts), removal: removalStarted }, longest }),
        )
      }
      const seconds = (end - starts.get('fetch')!) / 1000
      rounds.push({ baseline: windowOf(baseline.health, baseline.search, baseline.turns, BASELINE_MS), phases, chunks, seconds })
      const failures = baseline.failures + answer.failures
      console.log(
        `import-stalls: round ${round}: ${large.files.toLocaleString('en-US')} files, ${chunks.toLocaleString('en-US')} chunks, ${seconds.toFixed(1)} s from the start to the compaction${failures ? `; ${failures} REQUESTS FAILED` : ''}`,
      )
      printRound(rounds.at(-1)!)
      await fetch(`${url}/search?q=${encodeURIComponent(QUERIES[0]!)}`).then((r) => r.arrayBuffer())
      await codeIndex.meaningLearnt!(orgId)
      await compacted()
    }

    const notes = [
      `${SEED_CHUNKS.toLocaleString('en-US')} chunks of node_modules code already indexed and saved; imported: ${large.files.toLocaleString('en-US')} files (${(large.bytes / 1024 ** 2).toFixed(1)} MiB) of real code with its history (bench/lib/real-repository.ts, ${large.commits} commits), ${rounds[0]?.chunks.toLocaleString('en-US')} chunks, prepared on a Worker; the git server in a process of its own`,
      'client on a Worker thread: GET /health due every 20 ms, searches one after another 10 ms apart (hybrid, limit 10, codeIndex.search behind a bare Bun.serve route); baseline: the same client for 4 s with no import, before each round',
      `value: the worst of ${ROUNDS} rounds (each round in the table above); baseline: the worst of the rounds' baselines`,
    ]
    const worst = (pick: (w: Window) => number, windows: (Window | undefined)[]) => Math.max(0, ...windows.filter((w) => w !== undefined).map(pick))
    const baselines = rounds.map((r) => r.baseline)
    const rows: Row[] = []
    for (const phase of PHASES) {
      const windows = rounds.map((r) => r.phases.get(phase))
      const eachRound = (pick: (w: Window) => number) => `rounds: ${windows.map((w) => (w ? pick(w).toFixed(1) : '-')).join(', ')}`
      const row = (figure: string, pick: (w: Window) => number, limit?: number): Row => {
        const value = worst(pick, windows)
        const baseline = worst(pick, baselines)
        return {
          figure: `${phase}: ${figure}`,
          unit: 'ms',
          baseline,
          value,
          ratio: ratioOf(value, baseline),
          limit: limit ? { atMost: limit } : undefined,
          notes: [...notes, `${phase}, ${figure}: ${eachRound(pick)}`],
        }
      }
      rows.push(row('longest /health stall', (w) => w.longestStall, 50))
      rows.push(row('longest event-loop turn (CPU)', (w) => w.longestTurn, 50))
      rows.push(row('search p99', (w) => w.searchP99, 50))
    }
    return rows
  } finally {
    server.stop(true)
    await imports.close()
    await codeIndex.close()
    await db.close()
    await gitServer.close()
    rmSync(work, { recursive: true, force: true })
  }
}

/** One round, phase by phase, beside its baseline. */
function printRound({ baseline, phases }: { baseline: Window; phases: Map<Phase, Window> }): void {
  const line = (name: string, w: Window) =>
    console.log(
      `  ${name.padEnd(14)} ${(w.ms / 1000).toFixed(1).padStart(6)} s  ${String(w.polls).padStart(5)} polls  longest stall ${w.longestStall.toFixed(1).padStart(7)} ms (CPU ${w.longestStallCpu.toFixed(1).padStart(5)})  longest turn ${w.longestTurn.toFixed(1).padStart(6)} ms CPU  ${String(w.searches).padStart(4)} searches  p99 ${w.searchP99.toFixed(1).padStart(7)} ms`,
    )
  line('baseline', baseline)
  for (const [phase, w] of phases) line(phase, w)
}

if (import.meta.main) {
  const rows = await run()
  printTable(rows)
  console.log(`results: ${writeResults('import-stalls', rows)}`)
  // As npm run bench does: a Worker left referenced would keep the process running (and, after
  // this bench, busy) once its figures are written.
  process.exit()
}
