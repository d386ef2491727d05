import { afterAll, describe, expect, test } from 'bun:test'
import { mcpAddresses } from '../../plugins/mcp/addresses.ts'
import { loadConfig } from '../../src/main/config.ts'
import { makeApp, tempDir } from '../helpers.ts'

const t = await makeApp({ PUBLIC_BASE_URL: 'https://api.example.com', MCP_ALLOWED_HOSTS: 'mcp.internal:8080' })
afterAll(() => t.close())

const ping = (headers: Record<string, string>) =>
  t.send('POST', '/mcp', { jsonrpc: '2.0', id: 1, method: 'ping' }, { accept: 'application/json, text/event-stream', ...headers })

async function expectServed(headers: Record<string, string>) {
  const res = await ping(headers)
  expect(res.status, JSON.stringify(headers)).toBe(200)
  expect(await res.json()).toEqual({ jsonrpc: '2.0', id: 1, result: {} })
}

async function expectRefused(headers: Record<string, string>, message: string) {
  const res = await ping(headers)
  expect(res.status, JSON.stringify(headers)).toBe(403)
  expect(res.headers.get('content-type')).toBe('application/problem+json')
  expect(await res.json()).toMatchObject({ status: 403, code: 'forbidden', detail: message, jsonrpc: '2.0', error: { code: -32000, message }, id: null })
}

describe('DNS rebinding protection of /mcp', () => {
  test('a page on another name is refused: Host evil.example with Origin http://evil.example is 403', async () => {
    await expectRefused({ host: 'evil.example', origin: 'http://evil.example' }, 'Invalid Host header: evil.example')
    await expectRefused({ host: 'evil.example' }, 'Invalid Host header: evil.example')
  })

  test("PUBLIC_BASE_URL's host with its own origin is served", async () => {
    await expectServed({ host: 'api.example.com', origin: 'https://api.example.com' })
    await expectServed({ host: 'api.example.com:443', origin: 'https://api.example.com' })
  })

  test('a client that is not a browser sends no Origin and needs only an accepted Host', async () => {
    await expectServed({ host: 'api.example.com' })
  })

  test('an Origin of another page is refused even on an accepted Host', async () => {
    await expectRefused({ host: 'api.example.com', origin: 'http://evil.example' }, 'Invalid Origin header: http://evil.example')
    await expectRefused({ host: 'api.example.com', origin: 'http://api.example.com' }, 'Invalid Origin header: http://api.example.com')
    await expectRefused({ host: 'api.example.com', origin: 'null' }, 'Invalid Origin header: null')
  })

  test('a request without a Host header is refused', async () => {
    await expectRefused({}, 'Invalid Host header: null')
  })

  test('MCP_ALLOWED_HOSTS entries are accepted exactly as given, with the origins of their pages', async () => {
    await expectServed({ host: 'mcp.internal:8080', origin: 'http://mcp.internal:8080' })
    await expectServed({ host: 'mcp.internal:8080', origin: 'https://mcp.internal:8080' })
    await expectRefused({ host: 'mcp.internal' }, 'Invalid Host header: mcp.internal')
    await expectRefused({ host: 'mcp.internal:8081' }, 'Invalid Host header: mcp.internal:8081')
  })

  test('the loopback names on PORT are accepted by default, and no other port of theirs', async () => {
    const local = await makeApp({ PUBLIC_BASE_URL: 'https://api.example.com', PORT: '8123' })
    try {
      const call = (host: string) =>
        local.send('POST', '/mcp', { jsonrpc: '2.0', id: 1, method: 'ping' }, { host, accept: 'application/json, text/event-stream' })
      for (const host of ['localhost:8123', '127.0.0.1:8123', '[::1]:8123']) expect((await call(host)).status, host).toBe(200)
      for (const host of ['localhost:8124', '127.0.0.1', 'localhost.evil.example:8123']) expect((await call(host)).status, host).toBe(403)
    } finally {
      await local.close()
    }
  })
})

describe('the addresses /mcp accepts', () => {
  test("PUBLIC_BASE_URL's host is accepted with its port, without it (nginx's $host) and with the default port written out", () => {
    expect(mcpAddresses('http://localhost:8080')).toEqual({ hosts: ['localhost:8080', 'localhost'], origins: ['http://localhost:8080'] })
    expect(mcpAddresses('https://api.example.com/base')).toEqual({ hosts: ['api.example.com', 'api.example.com:443'], origins: ['https://api.example.com'] })
  })

  test('an extra host brings its http and https origins, written as browsers send them', () => {
    expect(mcpAddresses('https://api.example.com', ['MCP.internal:443']).origins).toEqual([
      'https://api.example.com',
      'http://mcp.internal:443',
      'https://mcp.internal',
    ])
  })

  test('MCP_ALLOWED_HOSTS takes host or host:port entries and refuses URLs, paths and wildcards at start-up', () => {
    const dir = tempDir()
    try {
      const config = loadConfig({ DATA_DIR: dir.path, MCP_ALLOWED_HOSTS: 'MCP.Example.com, 10.0.0.5:3000,[::1]:3000' })
      expect(config.mcp.allowedHosts).toEqual(['mcp.example.com', '10.0.0.5:3000', '[::1]:3000'])
      for (const bad of ['https://mcp.example.com', 'mcp.example.com/mcp', '*.example.com', 'user@mcp.example.com'])
        expect(() => loadConfig({ DATA_DIR: dir.path, MCP_ALLOWED_HOSTS: bad }), bad).toThrow('MCP_ALLOWED_HOSTS entries must be host or host:port')
      expect(loadConfig({ DATA_DIR: dir.path, PORT: '4000' }).mcp.allowedHosts).toEqual(['localhost:4000', '127.0.0.1:4000', '[::1]:4000'])
    } finally {
      dir.remove()
    }
  })
})
