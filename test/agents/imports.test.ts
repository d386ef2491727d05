/** The commands that work on an imported repository: analyze, index, and debug with repository context. */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { startGitServer, type GitServer } from '../fakes/git-server.ts'
import { queryUsage } from '../../src/usage/meter.ts'
import { userWithRole } from '../helpers.ts'
import { agentHarness, importRepository, expectContiguous, isFinal, type AgentHarness } from './helpers.ts'

describe('agent commands on an import', () => {
  let git: GitServer
  let h: AgentHarness
  let importId: string
  beforeAll(async () => {
    git = startGitServer()
    h = await agentHarness({ IMPORT_ALLOW_HOSTS: `127.0.0.1:${git.port}` })
    git.createRepository('acme/ledger', {
      'README.md': '# Ledger\n\nDouble-entry bookkeeping in TypeScript.\n',
      'package.json': '{"name":"ledger","dependencies":{"decimal.js":"10.4.3"}}\n',
      'src/balance.ts': 'export function balanceOf(entries: number[]) {\n  return entries.reduce((sum, e) => sum - e, 0)\n}\n',
      'src/journal.ts': 'export const journal: number[] = []\n',
    })
    importId = (await importRepository(h, git.urlOf('acme/ledger'))).id
  })
  afterAll(async () => {
    await h.close()
    await git.close()
  })

  test('the import and every agent task are metered for the organisation', async () => {
    const client = await h.connect()
    await client.next(isFinal(await h.run(client, 'status')))
    client.close()
    await h.t.deps.meter.flush()
    const usage = await queryUsage(h.t.deps.db, { orgId: h.user.orgId, from: 0, to: Date.now() + 1000, bucket: 'day' })
    const totals = Object.fromEntries(usage.totals.map((row: { kind: string; quantity: number }) => [row.kind, Number(row.quantity)]))
    expect(totals.import).toBe(1)
    expect(totals.agent_run).toBeGreaterThanOrEqual(1)
  })

  test("analyze summarises the import with the model, from the import's analysis", async () => {
    h.model.queue = [{ text: 'Ledger is a small double-entry bookkeeping library.' }]
    const client = await h.connect()
    const taskId = await h.run(client, 'analyze', { importId })
    const final = await client.next(isFinal(taskId))
    expect(final).toMatchObject({
      type: 'result',
      output: { summary: 'Ledger is a small double-entry bookkeeping library.', repository: { name: 'acme/ledger' } },
    })
    expect(final.output.analysis.manifests[0].dependencies.map((d: { name: string }) => d.name)).toContain('decimal.js')
    // The model was given the analysis.
    expect(h.model.completions.at(-1)!.messages.at(-1).content).toContain('decimal.js')
    expect(client.taskMessages(taskId).find((m) => m.type === 'log')!.message).toContain('acme/ledger at')
    client.close()
  })

  test("index rebuilds the repository's search index from the import's commit", async () => {
    const index = h.t.deps.codeIndex
    await index.removeRepository(h.user.orgId, (await h.t.deps.imports.get(h.user.orgId, importId))!.repository.id)
    expect(await index.search({ orgId: h.user.orgId }, { query: 'balanceOf' })).toEqual([])
    const client = await h.connect()
    const taskId = await h.run(client, 'index', { importId })
    const final = await client.next(isFinal(taskId))
    expect(final).toMatchObject({ type: 'result', output: { files: 4 } })
    expect(final.output.chunks).toBeGreaterThanOrEqual(4)
    const steps = client
      .taskMessages(taskId)
      .filter((m) => m.step)
      .map((m) => m.step)
    expect(steps).toEqual(['Reading files', 'Indexing 4 files'])
    expectContiguous(client.taskMessages(taskId))
    const hits = await index.search({ orgId: h.user.orgId }, { query: 'balanceOf' })
    expect(hits.map((hit) => hit.path)).toContain('src/balance.ts')
    client.close()
  })

  test('debug with an import searches it for code related to the error and gives it to the model', async () => {
    h.model.queue = [{ text: '{"steps": ["Read balanceOf"]}' }, { text: 'balanceOf subtracts every entry; it should add them.' }]
    const client = await h.connect()
    const taskId = await h.run(client, 'debug', { importId, error: 'balanceOf([1, 2]) returned -3' })
    expect(await client.next(isFinal(taskId))).toMatchObject({ type: 'result', output: { fix: null, passed: false } })
    const planRequest = h.model.completions
      .at(-2)!
      .messages.map((m: { content: string }) => m.content)
      .join('\n')
    expect(planRequest).toContain('src/balance.ts')
    expect(planRequest).toContain('sum - e')
    // Plain source text, as the file holds it: not HTML-escaped.
    expect(planRequest).toContain('(sum, e) => sum - e')
    expect(planRequest).not.toContain('&gt;')
    expect(client.taskMessages(taskId).find((m) => m.type === 'log')!.message).toMatch(/^Found [1-9]\d* related snippets? in acme\/ledger$/)
    client.close()
  })

  test("another organisation's import, or one that did not succeed, fails the task with a code", async () => {
    const stranger = await userWithRole(h.t, 'member')
    const client = await h.connect(stranger.token)
    const taskId = await h.run(client, 'index', { importId })
    expect(await client.next(isFinal(taskId))).toMatchObject({ type: 'error', status: 'failed', code: 'not_found' })
    client.close()
  })
})
