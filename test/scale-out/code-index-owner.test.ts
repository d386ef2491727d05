/**
 * One owner process per organisation's code index, with two real processes sharing PostgreSQL, DATA_DIR and a
 * private Redis: searches reaching the other process are forwarded to the owner (authorised there again), a
 * finished import is found without waiting for the version check, the owner killed mid-search is taken over
 * and searches keep answering (partial, not an error, while its snapshot cannot be read), and with a tiny memory budget using one organisation drops another's index,
 * which still answers afterwards.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { readdirSync, renameSync } from 'node:fs'
import { join } from 'node:path'
import { orgDirName } from '../../plugins/code-search/index.ts'
import { redisServerInstalled, startPrivateRedis, type PrivateRedis } from '../event-log/private-redis.ts'
import { startFakeOpenAi, type FakeOpenAi } from '../fakes/openai.ts'
import { startGitServer, type GitServer } from '../fakes/git-server.ts'
import { announceSkip, postgresUrl } from '../helpers.ts'
import { createCluster, json, signIn, type Cluster, type ServiceProcess } from './cluster.ts'

const ready = Boolean(postgresUrl && redisServerInstalled)
if (!ready) announceSkip('one code index owner per organisation', postgresUrl ? 'redis-server at /usr/bin/redis-server' : 'DATABASE_URL')

const LEDGER = {
  'ledger/reconcile.ts': 'export function reconcileLedgerEntries(entries: { amount: number }[]) {\n  return entries.reduce((sum, e) => sum + e.amount, 0)\n}\n',
  'README.md': '# Ledger\n',
}
const INVOICES = {
  'billing/invoice.ts': 'export function renderInvoicePdf(invoice: { lines: string[] }) {\n  return invoice.lines.join("\\n")\n}\n',
}

const clusterEnv = (git: GitServer, extra: Record<string, string> = {}) => ({
  IMPORT_CODEHOST_URL: git.url,
  IMPORT_ALLOW_HOSTS: `127.0.0.1:${git.port}`,
  CODE_INDEX_SNAPSHOT_DELAY_MS: '100',
  // Far beyond the test: a process sees another's import only if it is told of it.
  CODE_INDEX_REFRESH_MS: '600000',
  ALLOW_REGISTRATION: 'true',
  RATE_LIMIT_BURST: '10000',
  ...extra,
})

/** Imports `repository` through `via` and waits for the import to succeed. */
async function importRepository(via: ServiceProcess, token: string, repository: string) {
  const started = await via.request('/api/codehost/import', json({ repository }, token))
  expect(started.status).toBe(202)
  const { importId } = await started.json()
  for (let i = 0; i < 600; i++) {
    const view = await (await via.request(`/api/codehost/imports/${importId}`, { headers: { authorization: `Bearer ${token}` } })).json()
    if (view.status === 'succeeded') return
    if (view.status === 'failed') throw new Error(`import failed: ${JSON.stringify(view)}`)
    await Bun.sleep(50)
  }
  throw new Error('import did not end')
}

const search = (via: ServiceProcess, token: string, query: string, extra: Record<string, unknown> = {}) =>
  via.request('/api/search', json({ query, mode: 'text', ...extra }, token))

/** The paths of the answer's results, after checking it is a 200. */
async function pathsOf(answer: Response): Promise<string[]> {
  const body = await answer.text()
  if (answer.status !== 200) throw new Error(`search answered ${answer.status}: ${body}`)
  return (JSON.parse(body).results as { path: string }[]).map((r) => r.path)
}

/** A new account (its own organisation), registered and signed in through `via`. */
async function newAccount(via: ServiceProcess) {
  const credentials = { email: `user-${crypto.randomUUID().slice(0, 8)}@cluster.example`, password: 'user-password-1234' }
  const registered = await via.request('/auth/register', json(credentials))
  if (registered.status !== 201 && registered.status !== 200) throw new Error(`register: ${registered.status} ${await registered.text()}`)
  return signIn(via, credentials)
}

// A log line is read a moment after the answer it went with.
const ownedHere = (p: ServiceProcess, orgId: string) =>
  p
    .waitForLog((line) => line.msg === 'code index owned here' && line.orgId === orgId, 10_000)
    .then(
      () => true,
      () => false,
    )

describe.skipIf(!ready)('one code index owner per organisation', () => {
  let redis: PrivateRedis
  let git: GitServer
  let model: FakeOpenAi
  let cluster: Cluster
  let a: ServiceProcess
  let b: ServiceProcess
  let token: string
  let orgId: string

  beforeAll(async () => {
    redis = await startPrivateRedis()
    git = startGitServer()
    model = startFakeOpenAi()
    cluster = await createCluster(
      redis.url,
      clusterEnv(git, {
        OPENAI_BASE_URL: model.baseUrl,
        CHAT_MODEL: 'fake-model',
        CODE_SEARCH_EXPANSION_MODEL: 'fake-model',
        CODE_SEARCH_EXPANSION_TIMEOUT_MS: '30000',
      }),
    )
    ;[a, b] = await Promise.all([cluster.start('a'), cluster.start('b')])
    const pair = await signIn(a)
    token = pair.accessToken
    orgId = pair.user.organizationId
    git.createRepository('acme/ledger', LEDGER)
  })

  afterAll(async () => {
    await cluster?.close()
    await Promise.all([git?.close(), model?.close(), redis?.stop()])
  })

  test('an import finished on A is found by a search on B, the owner, without waiting for its version check', async () => {
    // B searches first, so B owns the (empty) index and holds it before the import.
    expect(await pathsOf(await search(b, token, 'reconcile ledger entries', { expand: false }))).toEqual([])
    expect(await ownedHere(b, orgId)).toBe(true)
    await importRepository(a, token, 'acme/ledger')
    // B checks the database for a newer version only every 600 s: it finds the import because A announced it.
    let paths: string[] = []
    for (let i = 0; i < 200 && paths[0] !== 'ledger/reconcile.ts'; i++) {
      paths = await pathsOf(await search(b, token, 'reconcile ledger entries', { expand: false }))
      if (paths[0] !== 'ledger/reconcile.ts') await Bun.sleep(50)
    }
    expect(paths[0]).toBe('ledger/reconcile.ts')
    expect(a.logs.some((line) => line.msg === 'code index owned here' && line.orgId === orgId)).toBe(false)
  })

  test("A forwards searches to B: the same answers, the same refusals, and the owner's route is closed to callers", async () => {
    // A changed the index for its import and dropped it once saved, B being the owner.
    await a.waitForLog((line) => line.msg === 'code index left to its owner' && line.orgId === orgId)
    const seen = a.logs.length
    expect(await pathsOf(await search(a, token, 'reconcile ledger entries', { expand: false }))).toEqual(
      await pathsOf(await search(b, token, 'reconcile ledger entries', { expand: false })),
    )
    // A did not load it again: its searches went to B.
    expect(a.logs.slice(seen).some((line) => line.msg === 'code index loaded' && line.orgId === orgId)).toBe(false)
    for (const via of [a, b]) {
      expect((await search(via, token, '   ')).status).toBe(422)
      expect((await search(via, token, 'x', { limit: 10_000 })).status).toBe(422)
      expect((await via.request('/api/search', json({ query: 'reconcile' }))).status).toBe(401)
      expect((await search(via, 'not-a-token', 'reconcile')).status).toBe(401)
    }
    // Another organisation's user, through the same process, finds nothing of this one.
    const stranger = await newAccount(a)
    expect(await pathsOf(await search(a, stranger.accessToken, 'reconcile ledger entries', { expand: false }))).toEqual([])
    // The owner's route answers only requests a process of the deployment signed.
    const direct = (headers: Record<string, string>) =>
      b.request('/internal/code-search/search', {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${token}`, ...headers },
        body: JSON.stringify({ query: 'reconcile', mode: 'text' }),
      })
    expect((await direct({})).status).toBe(404)
    expect((await direct({ 'x-code-search-forwarded': `${Date.now()}.forged` })).status).toBe(404)
  })

  test('the owner killed while a search forwarded to it runs: the search and the next ones are answered by A, which takes over', async () => {
    // The search's question is written as code by a slow model: the search is still running on B when B dies.
    model.fallback = () => ({ text: Array.from({ length: 6 }, () => 'reconcileLedgerEntries '), delayMs: 300 })
    const asked = model.requests.length
    const inFlight = search(a, token, 'reconcile ledger entries', { expand: true })
    for (let i = 0; i < 400 && model.requests.length === asked; i++) await Bun.sleep(25)
    expect(model.requests.length).toBeGreaterThan(asked)
    await b.kill()
    expect((await pathsOf(await inFlight))[0]).toBe('ledger/reconcile.ts')
    await a.waitForLog((line) => line.msg === 'code index owner did not answer a forwarded search; searching here' && line.orgId === orgId)
    expect(await ownedHere(a, orgId)).toBe(true)
    for (let i = 0; i < 3; i++) expect((await pathsOf(await search(a, token, 'reconcile ledger entries', { expand: false })))[0]).toBe('ledger/reconcile.ts')
    // A process started afterwards forwards to the new owner.
    const c = await cluster.start('c')
    expect((await pathsOf(await search(c, token, 'reconcile ledger entries', { expand: false })))[0]).toBe('ledger/reconcile.ts')
    expect(c.logs.some((line) => line.msg === 'code index loaded' && line.orgId === orgId)).toBe(false)
  })

  test('the owner killed with its snapshot file gone: the process taking over answers partial, not an error, and whole once the file is back', async () => {
    const c = cluster.processes.find((p) => p.name === 'c')!
    await a.kill()
    const folder = join(cluster.dataDir, 'code-index', orgDirName(orgId))
    const file = join(folder, readdirSync(folder).find((entry) => entry.endsWith('.snapshot'))!)
    renameSync(file, `${file}.away`)
    const answer = await search(c, token, 'reconcile ledger entries', { expand: false })
    expect(answer.status).toBe(200)
    expect(answer.headers.get('x-code-search-partial')).toBe('unavailable')
    expect(answer.headers.get('cache-control')).toBe('no-store')
    expect(await answer.json()).toEqual({ query: 'reconcile ledger entries', mode: 'text', results: [], partial: true })
    await c.waitForLog((line) => line.msg === 'code index owner did not answer a forwarded search; searching here' && line.orgId === orgId)
    // Not wedged: once the file can be read, the next search loads it.
    renameSync(`${file}.away`, file)
    const whole = await search(c, token, 'reconcile ledger entries', { expand: false })
    expect(whole.headers.get('x-code-search-partial')).toBeNull()
    expect((await pathsOf(whole))[0]).toBe('ledger/reconcile.ts')
  })
})

describe.skipIf(!ready)('a code index memory budget', () => {
  let redis: PrivateRedis
  let git: GitServer
  let cluster: Cluster
  let a: ServiceProcess
  let b: ServiceProcess

  beforeAll(async () => {
    redis = await startPrivateRedis()
    git = startGitServer()
    // About one kilobyte: any second index is over it.
    cluster = await createCluster(redis.url, clusterEnv(git, { CODE_INDEX_MEMORY_BUDGET_MB: '0.001' }))
    ;[a, b] = await Promise.all([cluster.start('a'), cluster.start('b')])
    git.createRepository('acme/ledger', LEDGER)
    git.createRepository('acme/invoices', INVOICES)
  })

  afterAll(async () => {
    await cluster?.close()
    await Promise.all([git?.close(), redis?.stop()])
  })

  test("using a second organisation drops the first one's index, which still answers afterwards", async () => {
    const first = await signIn(a)
    const second = await newAccount(a)
    await importRepository(a, first.accessToken, 'acme/ledger')
    await importRepository(a, second.accessToken, 'acme/invoices')
    const dropped = await a.waitForLog((line) => line.msg === 'code index dropped to stay within the memory budget' && line.orgId === first.user.organizationId)
    expect(dropped.orgId).toBe(first.user.organizationId)
    // Dropped with its ownership: the next search loads it again, on whichever process gets to it first.
    expect((await pathsOf(await search(b, first.accessToken, 'reconcile ledger entries')))[0]).toBe('ledger/reconcile.ts')
    expect((await pathsOf(await search(a, first.accessToken, 'reconcile ledger entries')))[0]).toBe('ledger/reconcile.ts')
    expect((await pathsOf(await search(a, second.accessToken, 'render invoice pdf')))[0]).toBe('billing/invoice.ts')
    expect((await pathsOf(await search(b, second.accessToken, 'render invoice pdf')))[0]).toBe('billing/invoice.ts')
  })
})
