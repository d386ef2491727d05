import { afterAll, beforeEach, describe, expect, test } from 'bun:test'
import { createGuardedGitHttp } from '../../plugins/imports/guarded-git-http.ts'
import { guardRepositoryUrl, locateRepository } from '../../plugins/imports/repository-url.ts'
import { AppError } from '../../src/errors.ts'
import { startFakeServer } from '../fakes/server.ts'
import { startImportHarness } from './helpers.ts'

// Anything that reaches this server is a connection the guard should have prevented.
const tripwire = startFakeServer(() => new Response('should never be reached', { status: 500 }))
// Names resolve without a network: localhost to loopback, anything else to a public address.
const h = await startImportHarness({ lookup: async (host) => (host === 'localhost' ? ['127.0.0.1', '::1'] : ['93.184.216.34']) })
h.git.createRepository('acme/guarded', { 'a.ts': 'export {}\n' })
afterAll(async () => {
  await h.close()
  await tripwire.close()
})
beforeEach(() => {
  h.git.behaviour = { kind: 'normal' }
})

const port = tripwire.port

describe('repository URLs are refused before any connection', () => {
  test.each([
    ['hexadecimal loopback', `http://0x7f000001:${port}/acme/guarded.git`, 'loopback'],
    ['octal shortened loopback', `http://0177.1:${port}/acme/guarded.git`, 'loopback'],
    ['whole-number loopback', `http://2130706433:${port}/acme/guarded.git`, 'loopback'],
    ['IPv4-mapped IPv6 loopback', `http://[::ffff:127.0.0.1]:${port}/acme/guarded.git`, 'loopback'],
    ['IPv6 loopback', `https://[::1]:${port}/acme/guarded.git`, 'loopback'],
    ['IPv6 link-local', `https://[fe80::]:${port}/acme/guarded.git`, 'link-local'],
    ['cloud metadata', 'http://169.254.169.254/latest/meta-data', 'metadata'],
    ['private network', 'https://10.0.0.8/acme/guarded.git', 'private'],
    ['unspecified address', `http://0.0.0.0:${port}/acme/guarded.git`, 'unspecified'],
    ['the allowlisted host on another port', `http://127.0.0.1:${port}/acme/guarded.git`, 'loopback'],
    ['a name that resolves to loopback', `https://localhost:${port}/acme/guarded.git`, 'loopback'],
  ])('%s (%s)', async (_, repository, kind) => {
    const response = await h.post({ repository })
    expect(response.status).toBe(400)
    const body = await response.json()
    expect(body).toMatchObject({ code: 'repository_url_refused', errors: [{ field: 'repository' }] })
    expect(body.detail).toContain(kind === 'metadata' ? 'cloud metadata' : kind)
    expect(tripwire.requests).toHaveLength(0)
  })

  test.each([
    ['credentials in the URL', `https://user:secret@127.0.0.1:${port}/acme/guarded.git`, 'username or password'],
    ['a token as the username', `https://ghp_token@github.com/acme/guarded.git`, 'username or password'],
    ['ssh', 'ssh://git@github.com/acme/guarded.git', 'https'],
    ['scp-like ssh', 'git@github.com:acme/guarded.git', 'https'],
    ['file', 'file:///etc/passwd', 'https'],
    ['git protocol', 'git://github.com/acme/guarded.git', 'https'],
    ['plain http to a host outside the allowlist', 'http://example.com/acme/guarded.git', 'https'],
    ['a query string', `https://github.com/acme/guarded.git?x=1`, 'query'],
  ])('%s', async (_, repository, says) => {
    const response = await h.post({ repository })
    expect(response.status).toBe(400)
    const body = await response.json()
    expect(body.code).toBe('repository_url_refused')
    expect(body.detail).toContain(says)
    expect(tripwire.requests).toHaveLength(0)
  })

  test('an allowlisted server that redirects to a forbidden address fails the import without connecting there', async () => {
    for (const location of [`http://127.0.0.1:${port}`, `http://0x7f000001:${port}`, 'http://169.254.169.254', `http://[::ffff:127.0.0.1]:${port}`]) {
      h.git.behaviour = { kind: 'redirect', location }
      const view = await h.importAndWait({ repository: 'acme/guarded' })
      expect(view.status).toBe('failed')
      expect(view.error!.code).toBe('repository_url_refused')
      expect(view.error!.message).toContain('redirect target')
      expect(h.workspaceOf(view).exists).toBe(false)
    }
    expect(tripwire.requests).toHaveLength(0)
  })

  test('a redirect within the allowlisted server is followed (a renamed repository)', async () => {
    const renamed = h.git.createRepository('acme/renamed', { 'b.ts': 'export {}\n' })
    h.git.behaviour = { kind: 'rename', from: '/acme/old-name.git', to: '/acme/renamed.git' }
    const view = await h.importAndWait({ repository: `${h.git.url}/acme/old-name.git/` })
    expect(view).toMatchObject({ status: 'succeeded', commit: renamed.head() })
    expect(h.git.requests.some((r) => r.path.startsWith('/acme/renamed.git/info/refs'))).toBe(true)
  })
})

describe('the guarded client', () => {
  test('resolves a name once, connects to that address, and keeps the name in Host', async () => {
    const seen: string[] = []
    const lookups: string[] = []
    const server = startFakeServer((request) => {
      seen.push(request.headers.get('host')!)
      return new Response('ok')
    })
    try {
      const policy = {
        allowHosts: [`git.internal.test:${server.port}`],
        lookup: async (host: string) => {
          lookups.push(host)
          return ['127.0.0.1']
        },
      }
      const http = createGuardedGitHttp({ policy, maxBytes: 1000, signal: new AbortController().signal })
      for (let i = 0; i < 2; i++) {
        const response = await http.request({ url: `http://git.internal.test:${server.port}/repo.git/info/refs`, headers: {} })
        expect(response.statusCode).toBe(200)
        for await (const _ of response.body!) void _
      }
      expect(lookups).toEqual(['git.internal.test'])
      expect(seen).toEqual([`git.internal.test:${server.port}`, `git.internal.test:${server.port}`])
    } finally {
      await server.close()
    }
  })

  test('a public name that resolves to an internal address is refused', async () => {
    const policy = { allowHosts: [], lookup: async () => ['93.184.216.34', '10.1.2.3'] }
    const refused = await guardRepositoryUrl(new URL('https://mixed.example/repo.git'), policy).catch((error) => error)
    expect(refused).toBeInstanceOf(AppError)
    expect(refused.code).toBe('repository_url_refused')
    expect(refused.message).toContain('private network address (10.1.2.3)')
  })

  test('sends Authorization only to the credential origin, and never to a redirect target elsewhere', async () => {
    const other = startFakeServer((request) => new Response(request.headers.get('authorization') ?? 'none'))
    const origin = startFakeServer(() => new Response(null, { status: 302, headers: { location: `${other.url}/landing` } }))
    try {
      const policy = { allowHosts: [`127.0.0.1:${origin.port}`, `127.0.0.1:${other.port}`] }
      const http = createGuardedGitHttp({ policy, maxBytes: 1000, signal: new AbortController().signal, credentialOrigin: origin.url })
      const response = await http.request({ url: `${origin.url}/repo.git/info/refs`, headers: { Authorization: 'Basic c2VjcmV0' } })
      expect(response.url).toBe(`${other.url}/landing`)
      const text = Buffer.concat(await Array.fromAsync(response.body!)).toString()
      expect(text).toBe('none')
      expect(origin.requests[0]!.headers.authorization).toBe('Basic c2VjcmV0')
      expect(other.requests[0]!.headers.authorization).toBeUndefined()
    } finally {
      await other.close()
      await origin.close()
    }
  })

  test('the owner/name shorthand points at the code-hosting provider', () => {
    expect(locateRepository('octocat/Hello-World', 'https://github.com')).toEqual({
      cloneUrl: new URL('https://github.com/octocat/Hello-World.git'),
      key: 'https://github.com/octocat/Hello-World',
      name: 'octocat/Hello-World',
    })
    expect(locateRepository('https://GitHub.com/octocat/Hello-World/', 'https://github.com').key).toBe('https://github.com/octocat/Hello-World')
    expect(() => locateRepository('../etc', 'https://github.com')).toThrow()
  })
})
