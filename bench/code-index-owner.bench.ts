/**
 * One code index per organisation across processes, measured on two real processes sharing PostgreSQL and
 * DATA_DIR, twice in the same run: the baseline deployment without Redis (each process loads its own copy of
 * the index and checks the database for newer snapshots every CODE_INDEX_REFRESH_MS), and the measured one with
 * Redis (one owner per organisation, searches forwarded to it, snapshots announced).
 *
 * The same scenario on each: process 1 imports a repository of real code (node_modules); process 2's first
 * search, then searches on both; each process's RSS; then a small repository imported through process 2 and
 * the time until a search through process 1 finds it. Last, on the measured deployment, the owner is killed and
 * the other process's first search (which takes over, and is answered partial while the snapshot loads) is timed,
 * beside a third process that waits for the whole load (the baseline), killed in turn; and this process loads the
 * saved snapshot itself, decoded on the Worker and on the event loop, timing its longest event-loop turn.
 * Searches made inside a process (the MCP server's search_code; chat's code_search tool and the agents call the same
 * CodeIndex.search) are timed on a process started after the import, which holds no index, with its RSS after them.
 *
 * Needs DATABASE_URL and /usr/bin/redis-server. CODE_OWNER_BENCH_CHUNKS sets the size (default 20 000 chunks).
 * The machine may be shared: wall-clock figures are noisy; RSS and the order of magnitude are what to read.
 */
import { readFileSync } from 'node:fs'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { join } from 'node:path'
import { createCodeIndex, createEmbeddings, createFileSnapshotStore, decodeSnapshot } from '../plugins/code-search/index.ts'
import { openDatabase } from '../src/storage/database.ts'
import { loadCodeCorpus } from './lib/code-corpus.ts'
import { meterLoop } from './lib/loop-meter.ts'
import { printTable, ratioOf, writeResults, type Row } from './lib/report.ts'
import { redisServerInstalled, startPrivateRedis } from '../test/event-log/private-redis.ts'
import { startGitServer, type FixtureFiles, type GitServer } from '../test/fakes/git-server.ts'
import { freshPostgres, postgresUrl, tempDir } from '../test/helpers.ts'
import { clusterAdmin, json, signIn, startServiceProcess, type ServiceProcess } from '../test/scale-out/cluster.ts'

const CHUNKS = Number(process.env.CODE_OWNER_BENCH_CHUNKS ?? 20_000)
const SEARCHES = 30
const QUERIES = ['parse the configuration file', 'retry a failed request', 'escape html entities', 'read a stream to the end', 'resolve a module path']

interface Deployment {
  importer: ServiceProcess
  other: ServiceProcess
  token: string
  env: Record<string, string>
  databaseUrl: string
  dataDir: string
  start(name: string, extra: Record<string, string>): Promise<ServiceProcess>
  close(): Promise<void>
}

async function deploy(name: string, git: GitServer, redisUrl: string | undefined): Promise<Deployment> {
  const pg = (await freshPostgres())!
  const dir = tempDir(`bench-owner-${name}-`)
  const env: Record<string, string> = {
    DATABASE_URL: pg.url,
    ...(redisUrl ? { REDIS_URL: redisUrl } : {}),
    DATA_DIR: dir.path,
    JWT_SECRET: `bench-jwt-secret-${crypto.randomUUID()}`,
    TOKEN_ENCRYPTION_KEY: Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString('base64'),
    ADMIN_EMAIL: clusterAdmin.email,
    ADMIN_PASSWORD: clusterAdmin.password,
    IMPORT_CODEHOST_URL: git.url,
    IMPORT_ALLOW_HOSTS: `127.0.0.1:${git.port}`,
    IMPORT_MAX_FILES: '1000000',
    RATE_LIMIT_BURST: '100000',
    // A process loading a large snapshot on a busy machine may miss heartbeats; the bench is not about those.
    IMPORT_HEARTBEAT_MS: '60000',
    // Without Redis, a process's first search waits for its own copy to load, as the baseline did before partial answers.
    ...(redisUrl ? {} : { CODE_INDEX_LOAD_WAIT_MS: '600000' }),
    LOG_LEVEL: 'warn',
  }
  // The listening line is at info; only the start-up waits for it.
  const importer = await startServiceProcess(`${name}-1`, { ...env, LOG_LEVEL: 'info' })
  const other = await startServiceProcess(`${name}-2`, { ...env, LOG_LEVEL: 'info' })
  const { accessToken } = await signIn(importer)
  const started = [importer, other]
  return {
    importer,
    other,
    token: accessToken,
    env,
    databaseUrl: pg.url,
    dataDir: dir.path,
    async start(name: string, extra: Record<string, string>) {
      const service = await startServiceProcess(name, { ...env, ...extra, LOG_LEVEL: 'info' })
      started.push(service)
      return service
    },
    async close() {
      await Promise.all(started.map((service) => service.kill()))
      await pg.drop()
      dir.remove()
    },
  }
}

async function importRepository(via: ServiceProcess, token: string, repository: string): Promise<number> {
  const started = await via.request('/api/codehost/import', json({ repository }, token))
  if (started.status !== 202) throw new Error(`import: ${started.status} ${await started.text()}`)
  const { importId } = await started.json()
  for (;;) {
    const view = await (await via.request(`/api/codehost/imports/${importId}`, { headers: { authorization: `Bearer ${token}` } })).json()
    if (view.status === 'succeeded') return performance.now()
    if (view.status === 'failed') throw new Error(`import failed: ${JSON.stringify(view)}`)
    await Bun.sleep(20)
  }
}

async function timedSearch(via: ServiceProcess, token: string, query: string): Promise<{ ms: number; paths: string[]; partial: boolean }> {
  const started = performance.now()
  const answer = await via.request('/api/search', json({ query, mode: 'hybrid' }, token))
  const body = await answer.json()
  if (answer.status !== 200) throw new Error(`search: ${answer.status} ${JSON.stringify(body)}`)
  return { ms: performance.now() - started, paths: body.results.map((r: { path: string }) => r.path), partial: body.partial === true }
}

/** The first search through `via` after its owner died, then searches until one is answered whole (not partial). */
async function takeoverSearches(via: ServiceProcess, token: string): Promise<{ firstMs: number; firstPartial: boolean; wholeMs: number; partials: number }> {
  const started = performance.now()
  const first = await timedSearch(via, token, QUERIES[1]!)
  let partials = first.partial ? 1 : 0
  while (partials > 0 && (await timedSearch(via, token, QUERIES[1]!)).partial) partials++
  return { firstMs: first.ms, firstPartial: first.partial, wholeMs: performance.now() - started, partials }
}

/**
 * The longest event-loop turn (CPU time of its thread) while this process loads the snapshot the deployment
 * saved, as a process taking over does (decoded on the snapshot Worker, restored in slices) and, for the baseline,
 * read and decoded whole on the event loop as loads were before. Three loads of each, alternated; the longest turn
 * of each.
 */
async function loadStalls(deployment: Deployment): Promise<{ workerMs: number[]; loopMs: number[]; orgId: string }> {
  const db = await openDatabase({ databaseUrl: deployment.databaseUrl, dataDir: deployment.dataDir })
  try {
    const [row] = await db.sql`SELECT org_id FROM code_index_versions ORDER BY version DESC LIMIT 1`
    const orgId = String(row!.org_id)
    const workerMs: number[] = []
    const loopMs: number[] = []
    const snapshots = createFileSnapshotStore({ db, dir: join(deployment.dataDir, 'code-index') })
    for (let round = 0; round < 3; round++) {
      for (const asNow of [true, false]) {
        const index = createCodeIndex({ embeddings: createEmbeddings({ kind: 'hashed', dimensions: 256 }), snapshots, loadWaitMs: 600_000 })
        Bun.gc(true)
        const meter = meterLoop(1)
        if (asNow) await index.readiness!(orgId)
        else decodeSnapshot(await snapshots.read(orgId, (await snapshots.current(orgId))!))
        // The turn that ran the load's end is noted at the timer's next run.
        await Bun.sleep(20)
        const longest = Math.max(0, ...meter.stop().map((turn) => turn.cpuMs))
        ;(asNow ? workerMs : loopMs).push(longest)
        // Not closed: that would close the store the next round uses.
      }
    }
    snapshots.close?.()
    return { workerMs, loopMs, orgId }
  } finally {
    await db.close()
  }
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!
const rssMb = (pid: number) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024

interface Figures {
  firstSearchOtherMs: number
  localMs: number
  otherMs: number
  importerRssMb: number
  otherRssMb: number
  freshnessMs: number
}

async function scenario(deployment: Deployment, repository: string, fresh: { name: string; token: string }): Promise<Figures> {
  const { importer, other, token } = deployment
  await importRepository(importer, token, repository)
  // The importer's first search compiles the search path, and the other's first request its own: neither is what
  // the other process's first search is about.
  await timedSearch(importer, token, QUERIES[0]!)
  await (await other.request('/auth/me', { headers: { authorization: `Bearer ${token}` } })).arrayBuffer()
  const firstSearchOtherMs = (await timedSearch(other, token, QUERIES[0]!)).ms
  const local: number[] = []
  const elsewhere: number[] = []
  for (let i = 0; i < SEARCHES; i++) {
    const query = QUERIES[i % QUERIES.length]!
    local.push((await timedSearch(importer, token, query)).ms)
    elsewhere.push((await timedSearch(other, token, query)).ms)
  }
  const importerRssMb = rssMb(importer.pid)
  const otherRssMb = rssMb(other.pid)
  const finished = await importRepository(other, token, fresh.name)
  let freshnessMs = Number.NaN
  for (let i = 0; i < 2000; i++) {
    if ((await timedSearch(importer, token, fresh.token)).paths.includes('fresh/marker.ts')) {
      freshnessMs = performance.now() - finished
      break
    }
    await Bun.sleep(10)
  }
  return { firstSearchOtherMs, localMs: median(local), otherMs: median(elsewhere), importerRssMb, otherRssMb, freshnessMs }
}

// /mcp answers only Host values it was told of.
const MCP_HOST = 'mcp.bench.test'

/**
 * A process started after the import, holding no index: its first search_code over MCP (the connection and the tool
 * list set up before, so the time is the search's), the median of 10 more, and its RSS after them.
 */
async function inProcessSearches(deployment: Deployment, name: string): Promise<{ firstMs: number; medianMs: number; rssMb: number }> {
  const service = await deployment.start(name, { MCP_ALLOWED_HOSTS: MCP_HOST })
  const client = new Client({ name: 'bench', version: '1.0.0' })
  try {
    await client.connect(
      new StreamableHTTPClientTransport(new URL('/mcp', service.url), {
        requestInit: { headers: { host: MCP_HOST, authorization: `Bearer ${deployment.token}` } },
      }),
    )
    await client.listTools()
    const search = async (query: string) => {
      const started = performance.now()
      const result = await client.callTool({ name: 'search_code', arguments: { query } }, undefined, { timeout: 600_000 })
      if (result.isError) throw new Error(`search_code: ${JSON.stringify(result.content)}`)
      return performance.now() - started
    }
    const firstMs = await search(QUERIES[0]!)
    const next: number[] = []
    for (let i = 1; i <= 10; i++) next.push(await search(QUERIES[i % QUERIES.length]!))
    return { firstMs, medianMs: median(next), rssMb: rssMb(service.pid) }
  } finally {
    await client.close().catch(() => undefined)
    await service.kill()
  }
}

export async function run(): Promise<Row[]> {
  if (!postgresUrl || !redisServerInstalled) {
    console.log('code-index-owner: skipped (needs DATABASE_URL and /usr/bin/redis-server)')
    return []
  }
  const corpus = await loadCodeCorpus(CHUNKS)
  const files: FixtureFiles = {}
  for (const file of corpus.repositories[0]!.files) files[file.path] = file.content
  const git = startGitServer()
  const redis = await startPrivateRedis()
  git.createRepository('bench/code', files)
  const marker = (word: string) => ({ 'fresh/marker.ts': `export function ${word}() {\n  return '${word}'\n}\n` })
  git.createRepository('bench/fresh-polling', marker('zanzibarPollingMarker'))
  git.createRepository('bench/fresh-owner', marker('zanzibarOwnerMarker'))
  const deployments: Deployment[] = []
  try {
    const polling = await deploy('polling', git, undefined)
    deployments.push(polling)
    const before = await scenario(polling, 'bench/code', { name: 'bench/fresh-polling', token: 'zanzibarPollingMarker' })
    const inProcessBefore = await inProcessSearches(polling, 'polling-mcp')
    await polling.close()
    deployments.length = 0
    const owned = await deploy('owner', git, redis.url)
    deployments.push(owned)
    const after = await scenario(owned, 'bench/code', { name: 'bench/fresh-owner', token: 'zanzibarOwnerMarker' })
    const inProcessAfter = await inProcessSearches(owned, 'owner-mcp')
    // A third process that waits for a whole load before answering (the service before partial answers); it
    // forwards to the owner until then.
    const waiting = await owned.start('owner-3', { CODE_INDEX_LOAD_WAIT_MS: '600000' })
    await timedSearch(waiting, owned.token, QUERIES[0]!)
    // The owner (the importing process) dies: the other's first search takes over, and loads the snapshot meanwhile.
    await owned.importer.kill()
    const takeover = await takeoverSearches(owned.other, owned.token)
    const afterTakeover: number[] = []
    for (let i = 0; i < 10; i++) afterTakeover.push((await timedSearch(owned.other, owned.token, QUERIES[i % QUERIES.length]!)).ms)
    // The new owner dies too: the waiting process takes over and answers only once the whole snapshot is loaded.
    await owned.other.kill()
    const takeoverWaiting = await takeoverSearches(waiting, owned.token)
    const stalls = await loadStalls(owned)
    console.log(
      `code-index-owner: ${corpus.chunks.toLocaleString('en-US')} chunks; polling ${JSON.stringify(before)}; owner ${JSON.stringify(after)}; takeover ${JSON.stringify(takeover)}; waiting for the load ${JSON.stringify(takeoverWaiting)}; load stalls ${JSON.stringify(stalls)}; MCP search_code without Redis ${JSON.stringify(inProcessBefore)}, with ${JSON.stringify(inProcessAfter)}`,
    )
    const size = `${corpus.chunks.toLocaleString('en-US')} chunks of node_modules`
    const noisy = 'wall clock on a machine possibly shared with other work; medians of searches alternated between the two processes'
    return [
      {
        figure: `search through the other process (forwarded to the owner), median of ${SEARCHES}`,
        unit: 'ms',
        baseline: after.localMs,
        value: after.otherMs,
        ratio: ratioOf(after.otherMs, after.localMs),
        notes: [`baseline: the same searches on the owner itself; ${size}`, noisy],
      },
      {
        figure: 'first search on the process that did not import',
        unit: 'ms',
        baseline: before.firstSearchOtherMs,
        value: after.firstSearchOtherMs,
        ratio: ratioOf(after.firstSearchOtherMs, before.firstSearchOtherMs),
        limit: { atMost: 200 },
        notes: [`baseline: without Redis, that process loads its own copy of the snapshot; ${size}`],
      },
      {
        figure: 'RSS of the process that did not import, after its searches',
        unit: 'MB',
        baseline: before.otherRssMb,
        value: after.otherRssMb,
        ratio: ratioOf(after.otherRssMb, before.otherRssMb),
        notes: [
          `baseline: without Redis (its own copy of the index); the importing process holds ${before.importerRssMb.toFixed(0)} MB there, ${after.importerRssMb.toFixed(0)} MB with an owner`,
        ],
      },
      {
        figure: 'first search made inside a process holding no index (MCP search_code)',
        unit: 'ms',
        baseline: inProcessBefore.firstMs,
        value: inProcessAfter.firstMs,
        ratio: ratioOf(inProcessAfter.firstMs, inProcessBefore.firstMs),
        notes: [
          `baseline: without Redis, that process loads its own copy of the snapshot, as chat's code_search tool, the agents and MCP did with Redis too before they were sent to the owner; ${size}`,
          `the next 10: median ${inProcessBefore.medianMs.toFixed(1)} ms on its own copy, ${inProcessAfter.medianMs.toFixed(1)} ms through the owner`,
        ],
      },
      {
        figure: 'RSS of that process after its 11 searches',
        unit: 'MB',
        baseline: inProcessBefore.rssMb,
        value: inProcessAfter.rssMb,
        ratio: ratioOf(inProcessAfter.rssMb, inProcessBefore.rssMb),
        notes: ['baseline: without Redis (its own copy of the index)'],
      },
      {
        figure: 'import finished on one process → found by a search on the other',
        unit: 'ms',
        baseline: before.freshnessMs,
        value: after.freshnessMs,
        ratio: ratioOf(after.freshnessMs, before.freshnessMs),
        limit: { atMost: 1000 },
        notes: ['baseline: without Redis, the other process finds a newer snapshot at its next check (CODE_INDEX_REFRESH_MS, 2000 ms)', noisy],
      },
      {
        figure: 'first search after the owner is killed (takeover; answered partial while the snapshot loads)',
        unit: 'ms',
        baseline: takeoverWaiting.firstMs,
        value: takeover.firstMs,
        ratio: ratioOf(takeover.firstMs, takeoverWaiting.firstMs),
        limit: { atMost: 200 },
        notes: [
          `baseline: the same takeover on a process that waits for the whole load (CODE_INDEX_LOAD_WAIT_MS=600000), as every search did before partial answers; a search on the live owner: ${after.localMs.toFixed(0)} ms`,
          `the first answer was ${takeover.firstPartial ? 'partial (loading)' : 'whole'}; ${takeover.partials} partial answer(s) before the first whole one, ${takeover.wholeMs.toFixed(0)} ms after the first search (baseline process: ${takeoverWaiting.wholeMs.toFixed(0)} ms); the next 10 searches: median ${median(afterTakeover).toFixed(0)} ms`,
        ],
      },
      {
        figure: 'longest event-loop turn while a process loads the snapshot (takeover)',
        unit: 'ms',
        baseline: Math.max(...stalls.loopMs),
        value: Math.max(...stalls.workerMs),
        ratio: ratioOf(Math.max(...stalls.workerMs), Math.max(...stalls.loopMs)),
        limit: { atMost: 50 },
        notes: [
          `CPU time of the loading thread; baseline: the snapshot read and decoded whole on the event loop (decodeSnapshot, as loads were before the snapshot Worker); three loads each, alternated: as now ${stalls.workerMs.map((ms) => ms.toFixed(0)).join(', ')} ms, baseline ${stalls.loopMs.map((ms) => ms.toFixed(0)).join(', ')} ms`,
          "what is left on the event loop: taking the decoded state from the Worker a bounded piece a turn (document ids, stored chunks, postings packed there, field lengths, enum filters; each piece asked for once the one before is taken), the vectors a block at a time, Orama's load of the tables so built, the index's tables in slices",
        ],
      },
    ]
  } finally {
    for (const deployment of deployments) await deployment.close()
    await Promise.all([git.close(), redis.stop()])
  }
}

if (import.meta.main) {
  const rows = await run()
  printTable(rows)
  console.log(`results: ${writeResults('code-index-owner', rows)}`)
  // As npm run bench does: a Worker left referenced would keep the process running (and, after
  // this bench, busy) once its figures are written.
  process.exit()
}
