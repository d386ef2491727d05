/**
 * /api/mcp-servers from outside, with openapi-fetch against the listening service and real MCP servers built with
 * the SDK: adding (probe, allow list, oauth_required), who may manage, the address guard, and the per-user OAuth
 * flow with its hostile cases (a tampered state, a missing binding cookie, one user's token never used for another).
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { forEachMcpBackend, type McpHarness } from './tools-support.ts'

/** Follows the authorization URL as a browser would, and answers the service's callback path with its query. */
async function authorize(h: McpHarness, authorizationUrl: string): Promise<string> {
  const answer = await fetch(authorizationUrl, { redirect: 'manual' })
  expect(answer.status).toBe(302)
  const back = new URL(answer.headers.get('location')!)
  return `${back.pathname}${back.search}`
}

const flowCookie = (response: Response) => /mcp_flow=([^;]*)/.exec(response.headers.get('set-cookie') ?? '')?.[1] ?? ''

forEachMcpBackend((backend) => {
  describe(`MCP servers (${backend.name})`, () => {
    let h: McpHarness
    beforeAll(async () => {
      h = await backend.start()
    })
    afterAll(async () => h.close())

    test('anonymous callers are refused with 401, before anything of the body is read', async () => {
      const anonymous = h.apiAs()
      expect((await anonymous.GET('/api/mcp-servers', {})).response.status).toBe(401)
      expect((await anonymous.POST('/api/mcp-servers', { body: { name: 'x', url: h.open.url } })).response.status).toBe(401)
    })

    test('a member may list but not add, change or remove servers (403)', async () => {
      const member = h.apiAs((await h.member()).token)
      expect((await member.GET('/api/mcp-servers', {})).response.status).toBe(200)
      const added = await member.POST('/api/mcp-servers', { body: { name: 'nope', url: h.open.url } })
      expect(added.response.status).toBe(403)
      expect(added.error.code).toBe('forbidden')
      expect((await member.DELETE('/api/mcp-servers/{id}', { params: { path: { id: 'mcps_x' } } })).response.status).toBe(403)
    })

    test('a URL naming a private, loopback or metadata address is refused with 400 unless its host is allow-listed', async () => {
      for (const url of [
        'http://10.0.0.8/mcp',
        'http://localhost:9/mcp',
        'http://169.254.169.254/latest',
        'http://[::1]:9/mcp',
        'http://0x0a000001/mcp',
        'ftp://example.com/mcp',
      ]) {
        const { response, error } = await h.api.POST('/api/mcp-servers', { body: { name: 'private', url } })
        expect(response.status).toBe(400)
        expect(error.code).toBe('mcp_server_url_refused')
      }
      const listed = await h.api.GET('/api/mcp-servers', {})
      expect(listed.data.servers.find((s: { name: string }) => s.name === 'private')).toBeUndefined()
    })

    test('an open server is probed at add: its tools are listed and the allow list marks which are offered', async () => {
      const { response, data } = await h.api.POST('/api/mcp-servers', {
        body: { name: 'open', url: h.open.url, allowedTools: ['echo', 'huge', 'hostile', 'hang', 'fail'] },
      })
      expect(response.status).toBe(201)
      expect(data.auth).toBe('none')
      expect(data.connection).toBeNull()
      const byName = Object.fromEntries(data.tools.map((t: { name: string; allowed: boolean; exposedName: string }) => [t.name, t]))
      expect(byName.echo).toMatchObject({ allowed: true, exposedName: 'mcp__open__echo' })
      expect(byName.secret.allowed).toBe(false)
      const again = await h.api.POST('/api/mcp-servers', { body: { name: 'open', url: h.open.url } })
      expect(again.response.status).toBe(409)
      const changed = await h.api.PATCH('/api/mcp-servers/{id}', { params: { path: { id: data.id } }, body: { allowedTools: ['echo'] } })
      expect(changed.data.tools.filter((t: { allowed: boolean }) => t.allowed).map((t: { name: string }) => t.name)).toEqual(['echo'])
      const entries = await h.t.deps.payments.listAudit({
        orgId: (await h.t.deps.accounts.userByEmail('owner@example.com'))!.orgId,
        action: 'mcp.server_added',
        limit: 10,
      })
      expect(entries.entries.some((e) => e.details.server === 'open')).toBe(true)
      expect((await h.api.DELETE('/api/mcp-servers/{id}', { params: { path: { id: data.id } } })).data).toEqual({ id: data.id, deleted: true })
    })

    test('a server that answers 401 with WWW-Authenticate is added as oauth_required; each user connects with PKCE and their own tokens', async () => {
      const { data: server } = await h.api.POST('/api/mcp-servers', { body: { name: 'guarded', url: h.oauth.url } })
      expect(server.auth).toBe('oauth_required')
      expect(server.connection).toEqual({ connected: false, expiresAt: null, connectedAt: null })

      h.oauth.nextUser = 'alice'
      const started = await h.api.POST('/api/mcp-servers/{id}/auth', { params: { path: { id: server.id } } })
      expect(started.response.status).toBe(200)
      const authorizationUrl = new URL(started.data.authorizationUrl)
      expect(authorizationUrl.searchParams.get('code_challenge_method')).toBe('S256')
      expect(authorizationUrl.searchParams.get('resource')).toBe(h.oauth.url)
      expect(h.oauth.clients.size).toBe(1)
      const cookie = flowCookie(started.response)
      expect(started.response.headers.get('set-cookie')).toContain('HttpOnly')
      const callback = await authorize(h, started.data.authorizationUrl)

      // The callback without the browser's binding cookie: refused, nothing stored, and the state is spent.
      const noCookie = await fetch(`${h.url}${callback}`, { redirect: 'manual' })
      expect(noCookie.status).toBe(303)
      expect(new URL(noCookie.headers.get('location')!).searchParams.get('error')).toBe('state_mismatch')
      expect((await h.api.GET('/api/mcp-servers/{id}', { params: { path: { id: server.id } } })).data.connection.connected).toBe(false)

      // Again, with the cookie: connected, and the tools are listed with the new token.
      const second = await h.api.POST('/api/mcp-servers/{id}/auth', { params: { path: { id: server.id } } })
      const done = await fetch(`${h.url}${await authorize(h, second.data.authorizationUrl)}`, {
        redirect: 'manual',
        headers: { cookie: `mcp_flow=${flowCookie(second.response)}` },
      })
      expect(new URL(done.headers.get('location')!).searchParams.get('status')).toBe('connected')
      const connected = (await h.api.GET('/api/mcp-servers/{id}', { params: { path: { id: server.id } } })).data
      expect(connected.connection.connected).toBe(true)
      expect(connected.tools.map((t: { name: string }) => t.name)).toContain('whoami')
      const tokenRow = await h.t.deps.db.sql`SELECT access_token, refresh_token FROM mcp_connections WHERE server_id = ${server.id}`
      expect(tokenRow[0].access_token.startsWith('sb1.')).toBe(true)
      expect(JSON.stringify(tokenRow)).not.toContain('at-alice')
      expect(cookie).not.toBe('')

      // Another user of the organisation is not connected, and gets no tool from this server.
      const member = await h.member()
      const memberView = (await h.apiAs(member.token).GET('/api/mcp-servers/{id}', { params: { path: { id: server.id } } })).data
      expect(memberView.connection.connected).toBe(false)
      const memberTools = await h.t.deps.mcpServers.tools.forCaller({ userId: member.userId, orgId: (await h.t.deps.accounts.userById(member.userId))!.orgId })
      expect(memberTools.definitions.map((d) => (d as { function: { name: string } }).function.name)).not.toContain('mcp__guarded__whoami')
      const forged = await memberTools.call('mcp__guarded__whoami', {}, AbortSignal.timeout(5000))
      expect(forged.isError).toBe(true)
      expect(h.oauth.calls.filter((c) => c.tool === 'whoami')).toHaveLength(0)

      // The owner's own call carries the owner's token: the server sees alice.
      const owner = (await h.t.deps.accounts.userByEmail('owner@example.com'))!
      const ownerTools = await h.t.deps.mcpServers.tools.forCaller({ userId: owner.id, orgId: owner.orgId })
      const answer = await ownerTools.call('mcp__guarded__whoami', {}, AbortSignal.timeout(5000))
      expect(answer.output.content).toBe('alice')
      expect(h.oauth.calls.every((c) => c.user === 'alice')).toBe(true)
    })

    test('a tampered or replayed state is refused with a clear code and nothing is stored', async () => {
      const { data: server } = await h.api.POST('/api/mcp-servers', { body: { name: 'tamper', url: h.oauth.url } })
      const started = await h.api.POST('/api/mcp-servers/{id}/auth', { params: { path: { id: server.id } } })
      const cookie = `mcp_flow=${flowCookie(started.response)}`
      const callback = new URL(`${h.url}${await authorize(h, started.data.authorizationUrl)}`)
      const state = callback.searchParams.get('state')!
      callback.searchParams.set('state', `${state.slice(0, -2)}xx`)
      const tampered = await fetch(callback, { redirect: 'manual', headers: { cookie } })
      expect(tampered.status).toBe(303)
      expect(new URL(tampered.headers.get('location')!).searchParams.get('error')).toBe('invalid_state')
      const before = h.oauth.tokenRequests.length
      // No state at all, and a state of another server's flow: the same.
      const none = await fetch(`${h.url}/api/mcp-servers/${server.id}/callback?code=abc`, { redirect: 'manual', headers: { cookie } })
      expect(new URL(none.headers.get('location')!).searchParams.get('error')).toBe('invalid_state')
      expect(h.oauth.tokenRequests.length).toBe(before)
      const rows = await h.t.deps.db.sql`SELECT * FROM mcp_connections WHERE server_id = ${server.id}`
      expect(rows).toHaveLength(0)
      // The real state still works once, with its cookie; a replay is refused.
      callback.searchParams.set('state', state)
      const real = await fetch(callback, { redirect: 'manual', headers: { cookie } })
      expect(new URL(real.headers.get('location')!).searchParams.get('status')).toBe('connected')
      const replay = await fetch(callback, { redirect: 'manual', headers: { cookie } })
      expect(new URL(replay.headers.get('location')!).searchParams.get('error')).toBe('invalid_state')
    })

    test('a token about to expire is refreshed before use', async () => {
      h.oauth.expiresIn = 30
      const { data: server } = await h.api.POST('/api/mcp-servers', { body: { name: 'short', url: h.oauth.url } })
      const started = await h.api.POST('/api/mcp-servers/{id}/auth', { params: { path: { id: server.id } } })
      await fetch(`${h.url}${await authorize(h, started.data.authorizationUrl)}`, {
        redirect: 'manual',
        headers: { cookie: `mcp_flow=${flowCookie(started.response)}` },
      })
      h.oauth.expiresIn = 3600
      const owner = (await h.t.deps.accounts.userByEmail('owner@example.com'))!
      const refreshes = () => h.oauth.tokenRequests.filter((r) => r.grant_type === 'refresh_token').length
      const before = refreshes()
      const tools = await h.t.deps.mcpServers.tools.forCaller({ userId: owner.id, orgId: owner.orgId }, { servers: ['short'] })
      expect(refreshes()).toBe(before + 1)
      expect((await tools.call('mcp__short__whoami', {}, AbortSignal.timeout(5000))).output.content).toBe('alice')
    })

    test('a server that is not MCP fails the add with 502 mcp_probe_failed', async () => {
      const { response, error } = await h.api.POST('/api/mcp-servers', { body: { name: 'notmcp', url: `${h.open.base}/elsewhere` } })
      expect(response.status).toBe(502)
      expect(error.code).toBe('mcp_probe_failed')
    })
  })
})
