/**
 * MCP tools in chat, end to end: the fake model calls a tool of a real MCP server (built with the SDK) and the UI
 * message stream carries the tool-input and tool-output parts; each call lands in the audit log. Hostile servers
 * first: a 10 MB result is capped and the chat ends, HTML and prompt injection pass as inert text, a server that
 * hangs is timed out, one that fails is a tool error part, and a tool off the allow list is neither offered nor run.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { HOSTILE_TEXT, HUGE_BYTES } from '../fakes/mcp-servers.ts'
import { chunks, readEvents } from '../chat/helpers.ts'
import { forEachMcpBackend, type McpHarness } from './tools-support.ts'

const ask = (h: McpHarness, text: string, options: Record<string, unknown> = {}) =>
  h.post({ messages: [{ role: 'user', content: text }], options }).then(async (response) => {
    expect(response.status).toBe(200)
    return chunks(await readEvents(response))
  })

/** The model calls `tool` with `args`, then answers `done` once it has read the result. */
const script = (h: McpHarness, tool: string, args: Record<string, unknown> = {}) => {
  h.model.queue = [{ toolCalls: [{ name: tool, arguments: JSON.stringify(args) }], finishReason: 'tool_calls' }, { text: 'done' }]
}

const toolMessage = (h: McpHarness) => {
  const messages = h.model.completions.at(-1)!.messages as { role: string; content: string }[]
  return messages.find((m) => m.role === 'tool')!.content
}

forEachMcpBackend((backend) => {
  describe(`MCP tools in chat (${backend.name})`, () => {
    let h: McpHarness
    let orgId: string
    beforeAll(async () => {
      h = await backend.start({ MCP_TOOLS_RESULT_MAX_BYTES: String(64 * 1024) })
      orgId = (await h.t.deps.accounts.userByEmail('owner@example.com'))!.orgId
      const { response } = await h.api.POST('/api/mcp-servers', {
        body: { name: 'open', url: h.open.url, allowedTools: ['echo', 'huge', 'hostile', 'hang', 'fail'] },
      })
      expect(response.status).toBe(201)
    })
    afterAll(async () => h.close())

    test('a 10 MB result is capped to MCP_TOOLS_RESULT_MAX_BYTES with a marker, and the chat still ends', async () => {
      script(h, 'mcp__open__huge')
      const parts = await ask(h, 'big please')
      const output = parts.find((c) => c.type === 'tool-output-available')!
      expect(output.output.truncated).toEqual({ shownBytes: 64 * 1024, totalBytes: HUGE_BYTES })
      expect(output.output.content).toContain('[truncated by the service')
      expect(Buffer.byteLength(toolMessage(h))).toBeLessThan(70 * 1024)
      expect(parts.at(-1)!.type).toBe('finish')
      expect(
        parts
          .filter((c) => c.type === 'text-delta')
          .map((c) => c.delta)
          .join(''),
      ).toBe('done')
    })

    test('HTML, script and prompt injection in a result reach the model and the stream as inert, labelled text', async () => {
      script(h, 'mcp__open__hostile')
      const parts = await ask(h, 'hostile please')
      const output = parts.find((c) => c.type === 'tool-output-available')!.output
      expect(output.untrusted).toBe(true)
      expect(output.content).toContain(HOSTILE_TEXT)
      expect(output.content).toContain('[image content: image/png')
      // The model reads a JSON value labelled untrusted, and the secret tool it was told to call is not even offered.
      expect(JSON.parse(toolMessage(h))).toMatchObject({ untrusted: true, server: 'open', tool: 'hostile' })
      expect(h.open.calls.some((c) => c.tool === 'secret')).toBe(false)
    })

    test('the model calls an allowed tool: tool-input and tool-output parts stream, the call is audit-logged without its arguments', async () => {
      script(h, 'mcp__open__echo', { text: 'sk-secret-argument hello' })
      const parts = await ask(h, 'echo please')
      const offered = (h.model.completions.at(-1)!.tools as { function: { name: string; parameters: unknown } }[]).map((t) => t.function.name)
      expect(offered).toContain('mcp__open__echo')
      expect(offered).not.toContain('mcp__open__secret')
      const echo = (h.model.completions.at(-1)!.tools as { function: { name: string; parameters: any } }[]).find((t) => t.function.name === 'mcp__open__echo')!
      expect(echo.function.parameters.properties.text.type).toBe('string')
      expect(parts.find((c) => c.type === 'tool-input-available')).toMatchObject({ toolName: 'mcp__open__echo', input: { text: 'sk-secret-argument hello' } })
      expect(parts.find((c) => c.type === 'tool-output-available')!.output).toMatchObject({ content: 'sk-secret-argument hello', isError: false })
      const { entries } = await h.t.deps.payments.listAudit({ orgId, action: 'mcp.tool_call', limit: 50 })
      const entry = entries.find((e) => e.details.tool === 'echo')!
      expect(entry.details).toMatchObject({ server: 'open', outcome: 'ok', resultBytes: 24 })
      expect(entry.actor.startsWith('user:')).toBe(true)
      expect(JSON.stringify(entries)).not.toContain('sk-secret-argument')
    })

    test('arguments that do not match the server schema are refused before any call', async () => {
      const before = h.open.calls.length
      script(h, 'mcp__open__echo', { text: 42 })
      const parts = await ask(h, 'bad args')
      expect(parts.find((c) => c.type === 'tool-output-error')!.errorText).toContain('Invalid arguments')
      expect(h.open.calls.length).toBe(before)
    })

    test('a forged call to a tool off the allow list is refused, recorded, and never reaches the server', async () => {
      script(h, 'mcp__open__secret')
      const parts = await ask(h, 'secret please')
      expect(parts.find((c) => c.type === 'tool-output-error')!.errorText).toContain('Refused')
      expect(h.open.calls.some((c) => c.tool === 'secret')).toBe(false)
      const { entries } = await h.t.deps.payments.listAudit({ orgId, action: 'mcp.tool_call', limit: 50 })
      expect(entries.some((e) => e.details.tool === 'secret' && e.details.outcome === 'refused')).toBe(true)
      expect(parts.at(-1)!.type).toBe('finish')
    })

    test('a server that hangs is timed out and a failing tool is a tool error part; the chat ends either way', async () => {
      script(h, 'mcp__open__hang')
      const hung = await ask(h, 'hang please')
      expect(hung.find((c) => c.type === 'tool-output-error')!.errorText).toContain('did not answer')
      expect(hung.at(-1)!.type).toBe('finish')
      script(h, 'mcp__open__fail')
      const failed = await ask(h, 'fail please')
      expect(failed.find((c) => c.type === 'tool-output-error')!.errorText).toContain('the database is on fire')
      expect(failed.at(-1)!.type).toBe('finish')
      const { entries } = await h.t.deps.payments.listAudit({ orgId, action: 'mcp.tool_call', limit: 50 })
      expect(entries.some((e) => e.details.tool === 'hang' && e.details.outcome === 'timeout')).toBe(true)
      expect(entries.some((e) => e.details.tool === 'fail' && e.details.outcome === 'tool_error')).toBe(true)
    })

    test('options.mcpServers selects the servers offered; [] offers none', async () => {
      h.model.queue = [{ text: 'plain' }]
      await ask(h, 'no tools', { mcpServers: [] })
      const offered = ((h.model.completions.at(-1)!.tools ?? []) as { function: { name: string } }[]).map((t) => t.function.name)
      expect(offered.some((name) => name.startsWith('mcp__'))).toBe(false)
    })

    test('the audit chain still verifies after the calls', async () => {
      expect((await h.t.deps.payments.verifyAudit()).valid).toBe(true)
    })
  })
})
