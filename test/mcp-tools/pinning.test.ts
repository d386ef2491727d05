/**
 * The fetch the MCP client is handed connects to the address its check resolved: a name that would resolve
 * differently a moment later (DNS rebinding) is never looked up again, and the server still sees its own name.
 */
import { afterAll, describe, expect, test } from 'bun:test'
import { guardedFetch } from '../../plugins/mcp-tools/remote.ts'
import { createHttpClient } from '../../src/http.ts'

const seen: { host: string | null }[] = []
const server = Bun.serve({
  hostname: '127.0.0.1',
  port: 0,
  fetch(request) {
    seen.push({ host: request.headers.get('host') })
    return Response.json({ ok: true })
  },
})
afterAll(() => server.stop(true))

describe('the MCP fetch pins the checked address', () => {
  test('a name only the check can resolve is reached at the address it resolved, with its own Host header', async () => {
    const host = `mcp.rebind.test:${server.port}`
    let lookups = 0
    const fetchMcp = guardedFetch(createHttpClient(), {
      allowHosts: [host],
      lookup: async () => {
        lookups++
        return ['127.0.0.1']
      },
      responseMaxBytes: 1 << 20,
      timeoutMs: 5000,
    })
    const response = await fetchMcp(`http://${host}/mcp`, { method: 'POST', body: '{}' })
    expect(response.status).toBe(200)
    expect(await response.json()).toEqual({ ok: true })
    expect(seen.at(-1)).toEqual({ host })
    // One lookup, the check's: the connection did not resolve the name again.
    expect(lookups).toBe(1)
  })

  test('a public name that resolves to loopback is refused before anything connects', async () => {
    const before = seen.length
    const fetchMcp = guardedFetch(createHttpClient(), {
      allowHosts: [],
      lookup: async () => ['127.0.0.1'],
      responseMaxBytes: 1 << 20,
      timeoutMs: 5000,
    })
    await expect(fetchMcp(`https://tools.example.com:${server.port}/mcp`, { method: 'POST', body: '{}' })).rejects.toMatchObject({
      code: 'mcp_server_url_refused',
    })
    expect(seen.length).toBe(before)
  })
})
