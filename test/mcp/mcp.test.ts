import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { join } from 'node:path'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js'
import pkg from '../../package.json' with { type: 'json' }
import { loadDocsSite, splitSections } from '../../plugins/docs/index.ts'
import { bearer, makeApp, userWithRole } from '../helpers.ts'
import { corpus } from '../code-search/fixtures.ts'

// The server starts first so its address can be one /mcp accepts; the links stay on PUBLIC_BASE_URL.
let handle: (request: Request) => Response | Promise<Response> = () => new Response('starting', { status: 503 })
const server = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: (request) => handle(request) })
const endpoint = new URL(`http://127.0.0.1:${server.port}/mcp`)
const t = await makeApp({ PUBLIC_BASE_URL: 'https://api.example.com', MCP_ALLOWED_HOSTS: endpoint.host })
handle = (request) => t.app.handle(request)
const member = await userWithRole(t, 'member')
const otherOrg = await t.deps.accounts.createOrganization('Other Co', 'free')
const outsider = await userWithRole(t, 'member', { orgId: otherOrg.id })
// The pages as the service carries them: the project root's docs.json and the pages it lists.
const site = loadDocsSite(join(import.meta.dir, '..', '..'))
const clients: Client[] = []

beforeAll(async () => {
  await t.deps.codeIndex.indexFiles({ orgId: member.user.orgId, repositoryId: 'repo-shop', repositoryName: 'acme/shop', files: corpus })
  await t.deps.codeIndex.indexFiles({
    orgId: otherOrg.id,
    repositoryId: 'repo-secret',
    repositoryName: 'other/secret',
    files: [
      {
        path: 'src/ledger.ts',
        language: 'TypeScript',
        content: 'export function reconcileQuarterlyLedger(entries: number[]) {\n  return entries.reduce((a, b) => a + b, 0)\n}\n',
      },
    ],
  })
})

afterAll(async () => {
  for (const client of clients) await client.close()
  server.stop(true)
  await t.close()
})

async function connect(token?: string): Promise<Client> {
  const client = new Client({ name: 'mcp-test', version: '1.0.0' })
  const transport = new StreamableHTTPClientTransport(endpoint, { requestInit: { headers: token ? bearer(token) : {} } })
  await client.connect(transport)
  clients.push(client)
  return client
}

const call = (client: Client, name: string, args: Record<string, unknown>) => client.callTool({ name, arguments: args }) as Promise<CallToolResult>
const textOf = (result: CallToolResult) => result.content.map((c) => (c.type === 'text' ? c.text : '')).join('')
const toolNames = async (client: Client) => (await client.listTools()).tools.map((tool) => tool.name).sort()

describe('session', () => {
  test('initialize names the service and its version and offers tools', async () => {
    const client = await connect()
    expect(client.getServerVersion()).toEqual({ name: pkg.name, version: pkg.version })
    expect(client.getServerCapabilities()?.tools).toBeDefined()
    expect(client.getInstructions()).toContain('search_docs')
  })

  test('anonymous callers see the documentation tools only', async () => {
    expect(await toolNames(await connect())).toEqual(['get_page', 'search_docs'])
  })

  test('a token with search:read adds search_code; one without that scope does not', async () => {
    expect(await toolNames(await connect(member.token))).toEqual(['get_page', 'search_code', 'search_docs'])
    const billing = await userWithRole(t, 'billing')
    expect(await toolNames(await connect(billing.token))).toEqual(['get_page', 'search_docs'])
  })

  test('an anonymous caller cannot call search_code', async () => {
    const result = await call(await connect(), 'search_code', { query: 'signature' })
    expect(result.isError).toBe(true)
    expect(textOf(result)).toContain('search_code')
  })
})

describe('search_docs', () => {
  test('finds a section of a page by its heading, with the page URLs', async () => {
    const page = site.pages.find((p) => p.path === 'docs/search')!
    const heading = splitSections(page.markdown).find((s) => s.heading)!.heading!
    const result = await call(await connect(), 'search_docs', { query: heading, limit: 20 })
    expect(result.isError).toBeFalsy()
    const { results } = result.structuredContent as { results: Record<string, unknown>[] }
    expect(results).toContainEqual({
      path: 'docs/search',
      title: page.title,
      section: heading,
      url: 'https://api.example.com/docs/search',
      markdownUrl: 'https://api.example.com/docs/search.md',
      snippet: expect.any(String),
      score: expect.any(Number),
    })
    expect(JSON.parse(textOf(result))).toEqual(result.structuredContent as object)
  })

  test('finds an error code on the errors page, with the code in the snippet', async () => {
    const result = await call(await connect(), 'search_docs', { query: 'payload_too_large' })
    const { results } = result.structuredContent as { results: { path: string; snippet: string }[] }
    const hit = results.find((r) => r.path === 'docs/errors')
    expect(hit?.snippet).toContain('payload_too_large')
  })

  test('words that are in no page find nothing', async () => {
    const result = await call(await connect(), 'search_docs', { query: 'xylophonequartz' })
    expect(result.structuredContent).toEqual({ query: 'xylophonequartz', results: [] })
  })

  test('a blank query is refused as a tool error', async () => {
    const result = await call(await connect(), 'search_docs', { query: '   ' })
    expect(result.isError).toBe(true)
    expect(textOf(result)).toContain('query')
  })
})

describe('get_page', () => {
  test('answers the page as Markdown under its title', async () => {
    const page = site.pages.find((p) => p.path === 'docs/errors')!
    const text = textOf(await call(await connect(), 'get_page', { path: 'docs/errors' }))
    expect(text).toStartWith(`# ${page.title}\n`)
    expect(text).toContain(page.markdown.trim())
  })

  test('also finds a page by its site path or .md URL', async () => {
    const client = await connect()
    const byPath = textOf(await call(client, 'get_page', { path: 'docs/search' }))
    expect(textOf(await call(client, 'get_page', { path: '/docs/search' }))).toBe(byPath)
    expect(textOf(await call(client, 'get_page', { path: 'https://api.example.com/docs/search.md' }))).toBe(byPath)
  })

  test('an unknown path is a tool error naming it', async () => {
    const result = await call(await connect(), 'get_page', { path: 'docs/no-such-page' })
    expect(result.isError).toBe(true)
    expect(textOf(result)).toContain('"docs/no-such-page"')
  })
})

describe('search_code', () => {
  test("finds code of the caller's organisation", async () => {
    const result = await call(await connect(member.token), 'search_code', { query: 'evict least recently used entry', limit: 3 })
    expect(result.isError).toBeFalsy()
    const { results } = result.structuredContent as { results: Record<string, unknown>[] }
    expect(results).toHaveLength(3)
    expect(results[0]).toEqual({
      repositoryId: 'repo-shop',
      repositoryName: 'acme/shop',
      path: 'internal/cache/lru.go',
      language: 'Go',
      startLine: expect.any(Number),
      endLine: expect.any(Number),
      snippet: expect.stringContaining('<mark>'),
      score: expect.any(Number),
    })
  })

  test("never answers from another organisation's repositories", async () => {
    const mine = await call(await connect(member.token), 'search_code', { query: 'reconcileQuarterlyLedger', repositoryIds: ['repo-secret'] })
    expect((mine.structuredContent as { results: unknown[] }).results).toEqual([])
    const theirs = await call(await connect(outsider.token), 'search_code', { query: 'reconcileQuarterlyLedger' })
    expect((theirs.structuredContent as { results: { repositoryId: string }[] }).results.map((r) => r.repositoryId)).toEqual(['repo-secret'])
    const shop = await call(await connect(outsider.token), 'search_code', { query: 'evict least recently used entry' })
    expect((shop.structuredContent as { results: { repositoryId: string }[] }).results.every((r) => r.repositoryId === 'repo-secret')).toBe(true)
  })

  test('the repository filter limits the results', async () => {
    const result = await call(await connect(member.token), 'search_code', { query: 'signature', repositoryIds: ['repo-elsewhere'] })
    expect(result.structuredContent).toEqual({ query: 'signature', results: [] })
  })
})

describe('HTTP', () => {
  const post = (body: string, headers: Record<string, string> = {}) =>
    fetch(endpoint, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers }, body })
  const initialize = JSON.stringify({
    jsonrpc: '2.0',
    id: 1,
    method: 'initialize',
    params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
  })

  test('an invalid token is 401, not an anonymous session', async () => {
    const res = await post(initialize, bearer('not-a-token'))
    expect(res.status).toBe(401)
    expect(res.headers.get('www-authenticate')).toStartWith('Bearer')
    expect(await res.json()).toMatchObject({ code: 'invalid_token' })
    const client = new Client({ name: 'mcp-test', version: '1.0.0' })
    const transport = new StreamableHTTPClientTransport(endpoint, { requestInit: { headers: bearer('not-a-token') } })
    await expect(client.connect(transport)).rejects.toMatchObject({ code: 401 })
  })

  test('an Authorization header that is not a bearer token is 401 too', async () => {
    const res = await post(initialize, { authorization: 'Basic dXNlcjpwYXNz' })
    expect(res.status).toBe(401)
  })

  test('malformed JSON is a 400 problem, not a server error', async () => {
    const res = await post('{"jsonrpc": "2.0", "id": 1, "method": ')
    expect(res.status).toBe(400)
    expect(res.headers.get('content-type')).toBe('application/problem+json')
    expect(await res.json()).toMatchObject({ code: 'invalid_json' })
  })

  test('JSON that is not a JSON-RPC message is a JSON-RPC parse error', async () => {
    for (const body of ['{"hello": "world"}', '42', 'null', '[{"jsonrpc": "2.0"}]']) {
      const res = await post(body)
      expect(res.status, body).toBe(400)
      expect(await res.json(), body).toMatchObject({ jsonrpc: '2.0', error: { code: -32700 }, id: null })
    }
  })

  test('a body over the service limit is 413', async () => {
    const res = await post(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping', params: { pad: 'x'.repeat(t.config.bodyLimitBytes) } }))
    expect(res.status).toBe(413)
  })

  test('answers carry the request id, the rate limit and no-store', async () => {
    const res = await post(initialize)
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toContain('application/json')
    expect(res.headers.get('x-request-id')).toBeTruthy()
    expect(res.headers.get('ratelimit-policy')).toContain('"search"')
    expect(res.headers.get('cache-control')).toBe('private, no-store')
  })

  test('GET and DELETE are 405: no sessions and no server-initiated stream', async () => {
    for (const method of ['GET', 'DELETE']) {
      const res = await fetch(endpoint, { method, headers: { accept: 'text/event-stream' } })
      expect(res.status, method).toBe(405)
      expect(res.headers.get('allow')).toBe('POST')
      await res.body?.cancel()
    }
  })
})
