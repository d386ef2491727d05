/**
 * Repository import through the service (isomorphic-git fetch, checkout, analysis, and handing every file to
 * the index) against `git clone` of the same repository from the same local git smart-HTTP server, in the same
 * run; then a re-import of a small change against `git pull`. The index here only reads what it is handed, so
 * the figure is the import's own cost; indexing has its own benchmark.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createImportService, type ImportView } from '../plugins/imports/index.ts'
import { createLogger } from '../src/log.ts'
import { openDatabase } from '../src/storage/database.ts'
import { migrate } from '../src/storage/migrate.ts'
import { migrations } from '../src/storage/migrations/index.ts'
import { startGitServer, type FixtureFiles } from '../test/fakes/git-server.ts'
import { drainingIndex, git, importSettings, median, timed } from './lib/import-support.ts'
import { printTable, ratioOf, writeResults, type Row } from './lib/report.ts'

const FILES = 10_000
const ROUNDS = 3
const CHANGED_FILES = 20
/** The whole bench stops here, whatever it has measured. */
const DEADLINE_MS = 8 * 60_000

// Deterministic content: the same repository every run, files of varied size and language.
function generateRepository(count: number): FixtureFiles {
  let seed = 0x2545f491
  const random = () => (seed = (seed * 1_103_515_245 + 12_345) >>> 0) / 2 ** 32
  const kinds = [
    { ext: 'ts', line: (i: number, n: number) => `export function handle${i}_${n}(input: string): number {\n  return input.length * ${n}\n}\n` },
    { ext: 'py', line: (i: number, n: number) => `def compute_${i}_${n}(value):\n    return value * ${n}\n\n` },
    { ext: 'go', line: (i: number, n: number) => `func Value${i}x${n}() int {\n\treturn ${n}\n}\n\n` },
    { ext: 'md', line: (i: number, n: number) => `Paragraph ${n} of document ${i}: notes on the design of part ${n % 7}.\n\n` },
  ]
  const files: FixtureFiles = {
    'README.md': '# Generated\n\nA generated repository for the import benchmark.\n',
    'package.json': JSON.stringify({ name: 'generated', dependencies: { hono: '^4.0.0' } }),
  }
  for (let i = 0; i < count - 2; i++) {
    const kind = kinds[i % kinds.length]!
    const blocks = 5 + Math.floor(random() * 60)
    let content = ''
    for (let n = 0; n < blocks; n++) content += kind.line(i, n)
    files[`src/area${i % 25}/part${Math.floor(i / 25) % 20}/file${i}.${kind.ext}`] = content
  }
  return files
}

export async function run(): Promise<Row[]> {
  const deadline = performance.now() + DEADLINE_MS
  const work = mkdtempSync(join(tmpdir(), 'import-bench-'))
  const server = startGitServer()
  const db = await openDatabase({ sqliteFile: join(work, 'service.db') })
  await migrate(db, migrations)
  const imports = createImportService({
    db,
    codeIndex: drainingIndex,
    dataDir: join(work, 'data'),
    settings: importSettings(server),
    logger: createLogger({ level: 'error' }),
  })

  const importAs = async (orgId: string): Promise<ImportView> => {
    const started = await imports.start({ orgId, userId: 'bench' }, { repository: server.urlOf('bench/generated') })
    await imports.settled(started.id)
    const view = (await imports.get(orgId, started.id))!
    if (view.status !== 'succeeded') throw new Error(`import failed: ${JSON.stringify(view.error)}`)
    return view
  }

  try {
    const generated = await timed(async () => server.createRepository('bench/generated', generateRepository(FILES)))
    const repository = generated.value
    console.log(`import: ${FILES.toLocaleString('en-US')} files generated and committed in ${(generated.ms / 1000).toFixed(1)} s; server ${server.url}`)

    const native: number[] = []
    const service: number[] = []
    const phases: { clone: number; analysis: number; indexing: number }[] = []
    let lastView: ImportView | undefined
    // Alternating rounds, medians kept: a neighbour's burst of work hits both alike.
    for (let round = 0; round < ROUNDS && performance.now() < deadline; round++) {
      const target = join(work, `clone-${round}`)
      native.push((await timed(() => git(['clone', '-q', server.urlOf('bench/generated'), target]))).ms)
      const imported = await timed(() => importAs(`org-${round}`))
      service.push(imported.ms)
      lastView = imported.value
      phases.push({
        clone: imported.value.summary!.durationsMs.clone,
        analysis: imported.value.summary!.durationsMs.analysis,
        indexing: imported.value.summary!.durationsMs.indexing,
      })
      console.log(`import: round ${round + 1}: git clone ${native.at(-1)!.toFixed(0)} ms, service ${imported.ms.toFixed(0)} ms`)
    }

    // A small change: git pull in the first clone against a re-import into the first organisation.
    const changes: Record<string, string> = {}
    for (let i = 0; i < CHANGED_FILES; i++) changes[`src/area${i}/changed${i}.ts`] = `export const changed${i} = ${Date.now()}\n`
    repository.commit(changes)
    const pull = await timed(() => git(['pull', '-q', '--ff-only'], join(work, 'clone-0')))
    const reimport = await timed(() => importAs('org-0'))

    const analysis = lastView!.summary!.analysis
    const notes = [
      `${analysis.files.toLocaleString('en-US')} files, ${(analysis.bytes / 1024 / 1024).toFixed(1)} MiB in ${analysis.directories} directories; one commit`,
      'service: isomorphic-git fetch over the guarded HTTP client, checkout, streamed analysis, every file read for the index (which keeps nothing); progress events and state in SQLite',
      `median of ${native.length} alternating rounds; git and the service fetch from the same git http-backend server in this process`,
    ]
    const clonePhase = median(phases.map((p) => p.clone))
    const analysisPhase = median(phases.map((p) => p.analysis))
    return [
      {
        figure: 'import of a fresh repository',
        unit: 'ms',
        baseline: median(native),
        value: median(service),
        ratio: ratioOf(median(service), median(native)),
        target: { atMost: 2.5 },
        notes,
      },
      { figure: 'import: fetch + checkout phase', unit: 'ms', baseline: median(native), value: clonePhase, ratio: ratioOf(clonePhase, median(native)) },
      { figure: 'import: analysis phase', unit: 'ms', baseline: null, value: analysisPhase, ratio: null },
      { figure: 'import: hand-off to the index', unit: 'ms', baseline: null, value: median(phases.map((p) => p.indexing)), ratio: null },
      {
        figure: `re-import after ${CHANGED_FILES} files changed`,
        unit: 'ms',
        baseline: pull.ms,
        value: reimport.ms,
        ratio: ratioOf(reimport.ms, pull.ms),
        notes: [
          'baseline: git pull --ff-only in a clone; the service fetches the new objects, checks out the difference, analyses the whole tree again and re-indexes the changed files',
        ],
      },
    ]
  } finally {
    await imports.close()
    await db.close()
    await server.close()
    rmSync(work, { recursive: true, force: true })
  }
}

if (import.meta.main) {
  const rows = await run()
  printTable(rows)
  console.log(`results: ${writeResults('import', rows)}`)
}
