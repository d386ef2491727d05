/**
 * A develop task offered the tools of its organisation's MCP servers (a real one, built with the SDK): the model
 * sees them beside the workspace's own, namespaced; a call reaches the server with the allow list applied, its
 * result comes back to the model as untrusted data, and the call is in the audit log. A tool off the allow list
 * is neither offered nor run.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { startGitServer, type GitServer } from '../fakes/git-server.ts'
import { startOpenMcpServer, type FakeMcpServer } from '../fakes/mcp-servers.ts'
import { userWithRole } from '../helpers.ts'
import { agentHarness, call, importRepository, isFinal, type AgentHarness } from './helpers.ts'

describe('develop tasks with MCP tools', () => {
  let git: GitServer
  let mcp: FakeMcpServer
  let h: AgentHarness
  let importId: string
  beforeAll(async () => {
    git = startGitServer()
    mcp = startOpenMcpServer()
    h = await agentHarness({ IMPORT_ALLOW_HOSTS: `127.0.0.1:${git.port}`, MCP_TOOLS_ALLOW_HOSTS: '127.0.0.1' })
    git.createRepository('acme/notes', { 'README.md': '# Notes\n' })
    importId = (await importRepository(h, git.urlOf('acme/notes'))).id
    const owner = await userWithRole(h.t, 'owner', { orgId: h.user.orgId })
    const added = await fetch(`${h.url}/api/mcp-servers`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${owner.token}` },
      body: JSON.stringify({ name: 'notes', url: mcp.url, allowedTools: ['echo'] }),
    })
    expect(added.status).toBe(201)
  })
  afterAll(async () => {
    await h.close()
    await git.close()
    mcp.close()
  })

  test('the model calls an allowed MCP tool: the server runs it, the model reads its result, the audit log records it; a forged call to another tool is refused', async () => {
    h.model.queue = [
      call('mcp__notes__echo', { text: 'from the develop task' }),
      call('mcp__notes__secret', {}),
      call('finish', { summary: 'asked the notes server' }),
    ]
    const client = await h.connect()
    const taskId = await h.run(client, 'develop', { importId, instruction: 'Ask the notes server to echo', checks: [] })
    const final = await client.next(isFinal(taskId), 60_000)
    expect(final).toMatchObject({ type: 'result', output: { summary: 'asked the notes server', finished: true } })

    // Offered beside the workspace's tools; the tool off the allow list is not.
    const offered = h.model.completions.at(-1)!.tools.map((t: { function: { name: string } }) => t.function.name)
    expect(offered).toContain('mcp__notes__echo')
    expect(offered).toContain('run_command')
    expect(offered).not.toContain('mcp__notes__secret')
    // The server ran the allowed call only, for the task's user.
    expect(mcp.calls.map((c) => c.tool)).toEqual(['echo'])
    expect(mcp.calls[0]!.args).toEqual({ text: 'from the develop task' })
    // What the model was told after each call.
    const answers = h.model.completions.slice(-2).map((body) => String(body.messages.at(-1).content))
    expect(answers[0]).toContain('from the develop task')
    expect(answers[0]).toContain('untrusted')
    expect(JSON.parse(answers[1]!)).toMatchObject({ isError: true, content: 'Refused: mcp__notes__secret is not a tool offered in this conversation' })

    // Both calls are in the audit log, the refused one as refused; never the arguments.
    const audit = await h.t.deps.db.sql`SELECT details FROM audit_log WHERE action = 'mcp.tool_call' ORDER BY seq`
    const details = audit.map((row: { details: string | object }) => (typeof row.details === 'string' ? JSON.parse(row.details) : row.details))
    expect(details).toMatchObject([
      { server: 'notes', tool: 'echo', outcome: 'ok' },
      { server: 'notes', tool: 'secret', outcome: 'refused' },
    ])
    expect(JSON.stringify(details)).not.toContain('from the develop task')
  })
})
