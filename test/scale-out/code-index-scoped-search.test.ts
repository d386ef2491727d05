/**
 * Searches made inside a process (chat's code_search tool, the MCP server's search_code, an agent's debug command:
 * CodeIndex.search) on the process that does not own the organisation's index, with two real processes sharing
 * PostgreSQL, DATA_DIR and a private Redis: they are answered by the owner and the other process loads nothing;
 * the owner's route for them answers only a request signed over its exact body within the minute; the owner killed
 * while such a search runs on it, the search is answered by the other process, which takes over.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js'
import { SCOPED_SEARCH_PATH, scopedSearchSignature } from '../../plugins/code-search/index.ts'
import { connectAgent, isFinal } from '../agents/helpers.ts'
import { chunks, readEvents } from '../chat/helpers.ts'
import { redisServerInstalled, startPrivateRedis, type PrivateRedis } from '../event-log/private-redis.ts'
import { startFakeEmbeddingsApi, type FakeEmbeddingsApi } from '../fakes/embeddings-api.ts'
import { startFakeOpenAi, type FakeOpenAi } from '../fakes/openai.ts'
import { startGitServer, type GitServer } from '../fakes/git-server.ts'
import { announceSkip, postgresUrl } from '../helpers.ts'
import { createCluster, json, signIn, type Cluster, type LogLine, type ServiceProcess } from './cluster.ts'

const ready = Boolean(postgresUrl && redisServerInstalled)
if (!ready) announceSkip('code searches of chat, agents and MCP answered by the owner', postgresUrl ? 'redis-server at /usr/bin/redis-server' : 'DATABASE_URL')

const LEDGER = {
  'ledger/reconcile.ts': 'export function reconcileLedgerEntries(entries: { amount: number }[]) {\n  return entries.reduce((sum, e) => sum + e.amount, 0)\n}\n',
  'README.md': '# Ledger\n',
}
// /mcp answers only Host values it was told of; every process is told this one.
const MCP_HOST = 'mcp.cluster.test'

/** Imports `repository` through `via`, waits for it to succeed and answers the import's id. */
async function importRepository(via: ServiceProcess, token: string, repository: string): Promise<string> {
  const started = await via.request('/api/codehost/import', json({ repository }, token))
  expect(started.status).toBe(202)
  const { importId } = await started.json()
  for (let i = 0; i < 600; i++) {
    const view = await (await via.request(`/api/codehost/imports/${importId}`, { headers: { authorization: `Bearer ${token}` } })).json()
    if (view.status === 'succeeded') return importId
    if (view.status === 'failed') throw new Error(`import failed: ${JSON.stringify(view)}`)
    await Bun.sleep(50)
  }
  throw new Error('import did not end')
}

async function pathsOf(answer: Response): Promise<string[]> {
  const body = await answer.text()
  if (answer.status !== 200) throw new Error(`search answered ${answer.status}: ${body}`)
  return (JSON.parse(body).results as { path: string }[]).map((r) => r.path)
}

const loaded = (p: ServiceProcess, orgId: string) => p.logs.some((line) => line.msg === 'code index loaded' && line.orgId === orgId)
// The owner's access log line for each scoped search it answered (written a moment after the answer).
const scopedSearchesServed = (p: ServiceProcess) =>
  p.logs.filter((line: LogLine) => line.msg === 'request' && line.route === SCOPED_SEARCH_PATH && line.status === 200)

describe.skipIf(!ready)('searches made inside a process, answered by the owner of the index', () => {
  let redis: PrivateRedis
  let git: GitServer
  let model: FakeOpenAi
  let embeddings: FakeEmbeddingsApi
  let cluster: Cluster
  let a: ServiceProcess
  let b: ServiceProcess
  let token: string
  let orgId: string
  let expected: string[]
  let importId: string
  const clients: Client[] = []

  /** A connected MCP client of `via`, as `token`'s user. */
  async function mcp(via: ServiceProcess): Promise<Client> {
    const client = new Client({ name: 'scale-out-test', version: '1.0.0' })
    const transport = new StreamableHTTPClientTransport(new URL('/mcp', via.url), {
      requestInit: { headers: { host: MCP_HOST, authorization: `Bearer ${token}` } },
    })
    await client.connect(transport)
    clients.push(client)
    return client
  }
  const searchCode = async (client: Client, query: string) => {
    const result = (await client.callTool({ name: 'search_code', arguments: { query } })) as CallToolResult
    if (result.isError) throw new Error(`search_code failed: ${JSON.stringify(result.content)}`)
    return (result.structuredContent as { results: { path: string }[] }).results.map((r) => r.path)
  }

  /** Sends B's scoped-search route `body` with `headers`, over the socket as any client could. */
  const direct = (body: unknown, headers: Record<string, string>, raw = JSON.stringify(body)) =>
    b.request(SCOPED_SEARCH_PATH, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: raw })

  beforeAll(async () => {
    redis = await startPrivateRedis()
    git = startGitServer()
    model = startFakeOpenAi()
    embeddings = startFakeEmbeddingsApi({ apiKey: 'sk-test' })
    cluster = await createCluster(redis.url, {
      IMPORT_CODEHOST_URL: git.url,
      IMPORT_ALLOW_HOSTS: `127.0.0.1:${git.port}`,
      CODE_INDEX_SNAPSHOT_DELAY_MS: '100',
      CODE_INDEX_REFRESH_MS: '600000',
      RATE_LIMIT_BURST: '10000',
      RATE_LIMIT_CHAT_PER_MINUTE: '10000',
      OPENAI_BASE_URL: model.baseUrl,
      CHAT_MODEL: 'fake-model',
      EMBEDDINGS_MODEL: 'text-embedding-3-small',
      EMBEDDINGS_BASE_URL: embeddings.url,
      EMBEDDINGS_API_KEY: 'sk-test',
      MCP_ALLOWED_HOSTS: MCP_HOST,
    })
    ;[a, b] = await Promise.all([cluster.start('a'), cluster.start('b')])
    const pair = await signIn(a)
    token = pair.accessToken
    orgId = pair.user.organizationId
    git.createRepository('acme/ledger', LEDGER)
    // Imported through B, which owns the index from then on; A never holds it.
    importId = await importRepository(b, token, 'acme/ledger')
    await b.waitForLog((line) => line.msg === 'code index owned here' && line.orgId === orgId)
    expected = await pathsOf(await b.request('/api/search', json({ query: 'reconcile ledger entries', expand: false }, token)))
    expect(expected[0]).toBe('ledger/reconcile.ts')
  })

  afterAll(async () => {
    for (const client of clients) await client.close().catch(() => undefined)
    await cluster?.close()
    await Promise.all([git?.close(), model?.close(), redis?.stop()])
    embeddings?.close()
  })

  test("chat's code_search tool on A answers B's results, and A does not load the index", async () => {
    const served = scopedSearchesServed(b).length
    model.queue = [{ toolCalls: [{ name: 'code_search', arguments: JSON.stringify({ query: 'reconcile ledger entries', limit: 10 }) }] }, { text: 'Found it.' }]
    const answer = await a.request('/api/chat', json({ messages: [{ role: 'user', content: 'where are ledger entries reconciled?' }] }, token))
    expect(answer.status).toBe(200)
    const output = chunks(await readEvents(answer)).find((c) => c.type === 'tool-output-available')!.output
    expect(output.results.map((r: { path: string }) => r.path)).toEqual(expected)
    expect(loaded(a, orgId)).toBe(false)
    await b.waitForLog(() => scopedSearchesServed(b).length > served, 10_000)
  })

  test("the MCP server's search_code on A answers B's results, and A does not load the index", async () => {
    const served = scopedSearchesServed(b).length
    expect(await searchCode(await mcp(a), 'reconcile ledger entries')).toEqual(expected)
    expect(loaded(a, orgId)).toBe(false)
    await b.waitForLog(() => scopedSearchesServed(b).length > served, 10_000)
    expect(a.logs.some((line) => line.msg === 'code index owned here' && line.orgId === orgId)).toBe(false)
  })

  test("an agent's debug command on A (a task with no caller token to forward) searches the import through B; A does not load the index", async () => {
    const error = 'reconcileLedgerEntries returned NaN for the ledger entries'
    // What B finds for the command's search (its error, 5 results, no model's code), searched on B itself.
    const found = (await pathsOf(await b.request('/api/search', json({ query: error, limit: 5, expand: false }, token)))).length
    expect(found).toBeGreaterThan(0)
    const served = scopedSearchesServed(b).length
    const agent = await connectAgent(`${a.url.replace('http', 'ws')}/ws/agent`, token)
    try {
      agent.send({ type: 'agent_command', id: 'debug', command: 'debug', params: { error, importId } })
      const taskId = (await agent.next((m) => m.id === 'debug')).taskId as string
      const log = await agent.next((m) => m.taskId === taskId && m.type === 'log' && /related snippet/.test(String(m.message)), 60_000)
      expect(log.message).toBe(`Found ${found} related snippet${found === 1 ? '' : 's'} in acme/ledger`)
      expect(loaded(a, orgId)).toBe(false)
      await b.waitForLog(() => scopedSearchesServed(b).length > served, 10_000)
      await agent.next(isFinal(taskId), 60_000)
    } finally {
      agent.close()
    }
  })

  test("B's scoped-search route answers only a request signed over its exact body within the minute; no other runs a search", async () => {
    const secret = cluster.env.JWT_SECRET!
    // Each query is new to B, so a search that runs embeds it once (B keeps the vectors of texts it has searched).
    let n = 0
    const body = (org = orgId) => ({ scope: { orgId: org }, query: { query: `reconcile ledger entries ${++n}`, mode: 'hybrid', expand: false } })
    const refused = async (answer: Response) => {
      expect(answer.status).toBe(404)
      expect(await answer.json()).toMatchObject({ code: 'not_found', detail: 'No such route' })
    }

    // Signed as a process of the deployment signs it: answered, and a search ran.
    let calls = embeddings.calls
    const good = body()
    expect((await pathsOf(await direct(good, scopedSearchSignature(secret, JSON.stringify(good)))))[0]).toBe('ledger/reconcile.ts')
    expect(embeddings.calls).toBe(calls + 1)

    calls = embeddings.calls
    // No signature; a made-up one; one of this minute for another body (another organisation's, its orgId changed);
    // the right signature over this body, but 61 s old, or 61 s ahead.
    await refused(await direct(body(), {}))
    await refused(await direct(body(), { 'x-code-search-forwarded': `${Date.now()}.${'A'.repeat(43)}` }))
    const theirs = body('org-of-the-caller')
    const captured = scopedSearchSignature(secret, JSON.stringify(theirs))
    await refused(await direct({ ...theirs, scope: { orgId } }, captured))
    const stale = body()
    await refused(await direct(stale, scopedSearchSignature(secret, JSON.stringify(stale), Date.now() - 61_000)))
    const early = body()
    await refused(await direct(early, scopedSearchSignature(secret, JSON.stringify(early), Date.now() + 61_000)))
    // The same bytes re-spaced, or signed with another secret.
    const spaced = body()
    await refused(await direct(spaced, scopedSearchSignature(secret, JSON.stringify(spaced)), JSON.stringify(spaced, null, 1)))
    const other = body()
    await refused(await direct(other, scopedSearchSignature('another-secret', JSON.stringify(other))))
    // Unsigned, nothing about the body is answered: not its JSON, not its schema.
    await refused(await direct(undefined, {}, '{"scope": '))
    await refused(await direct({ nonsense: true }, {}))
    // A stamp of this minute with a made-up signature: still nothing about the body's JSON, type or size.
    const madeUp = { 'x-code-search-forwarded': `${Date.now()}.${'A'.repeat(43)}` }
    await refused(await direct(undefined, madeUp, '{"scope": '))
    await refused(await b.request(SCOPED_SEARCH_PATH, { method: 'POST', headers: { 'content-type': 'text/plain', ...madeUp }, body: 'hello' }))
    await refused(await direct(undefined, madeUp, `"${'x'.repeat(2 * 1024 * 1024)}"`))
    expect(embeddings.calls).toBe(calls)
    // The signature checked, the body is still validated.
    const invalid = { scope: { orgId }, query: { query: 'x', limit: 1000 } }
    expect((await direct(invalid, scopedSearchSignature(secret, JSON.stringify(invalid)))).status).toBe(422)
    expect(embeddings.calls).toBe(calls)
  })

  test('the owner killed while a search made on A runs on it: the search is answered by A, which takes over', async () => {
    // B's search of a new question waits for its embedding, which the endpoint holds back until B is gone.
    embeddings.behaviour = { kind: 'silent' }
    const asked = embeddings.calls
    const inFlight = mcp(a).then((client) => searchCode(client, 'entries of the ledger reconciled'))
    for (let i = 0; i < 400 && embeddings.calls === asked; i++) await Bun.sleep(25)
    expect(embeddings.calls).toBeGreaterThan(asked)
    embeddings.behaviour = { kind: 'vectors' }
    await b.kill()
    expect((await inFlight)[0]).toBe('ledger/reconcile.ts')
    await a.waitForLog((line) => line.msg === 'code index owner did not answer a forwarded search; searching here' && line.orgId === orgId)
    await a.waitForLog((line) => line.msg === 'code index owned here' && line.orgId === orgId)
    expect(await searchCode(await mcp(a), 'reconcile ledger entries')).toEqual(expected)
  })
})
