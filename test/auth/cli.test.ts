import { afterAll, describe, expect, test } from 'bun:test'
import { runCli } from '../../src/main/cli.ts'
import { bearer, login, makeApp } from '../helpers.ts'

describe('operator command line', async () => {
  const t = await makeApp()
  afterAll(() => t.close())
  const run = async (...args: string[]) => {
    const lines: string[] = []
    const code = await runCli(args, t.deps, (l) => lines.push(l))
    return { code, lines }
  }

  test('creates an organisation and a user who can then sign in', async () => {
    const org = await run('orgs', 'create', '--name', 'Acme', '--plan', 'team')
    expect(org.code).toBe(0)
    const orgId = org.lines[0]!
    const user = await run('users', 'create', '--email', 'ops@acme.test', '--password', 'ops-password-123', '--role', 'admin', '--org', orgId)
    expect(user.code).toBe(0)
    const pair = await login(t, 'ops@acme.test', 'ops-password-123')
    const me = await (await t.request('/auth/me', { headers: bearer(pair.accessToken) })).json()
    expect(me).toMatchObject({ organizationId: orgId, role: 'admin', plan: 'team' })
  })

  test('lists, sets a plan and a role', async () => {
    const orgId = (await run('orgs', 'create', '--name', 'Beta')).lines[0]!
    expect((await run('orgs', 'set-plan', '--org', orgId, '--plan', 'enterprise')).code).toBe(0)
    expect((await run('orgs', 'list')).lines.find((l) => l.startsWith(orgId))).toContain('enterprise')
    await run('users', 'create', '--email', 'm@beta.test', '--password', 'beta-password-12', '--role', 'member', '--org', orgId)
    expect((await run('users', 'set-role', '--email', 'm@beta.test', '--role', 'viewer')).code).toBe(0)
    expect((await run('users', 'list', '--org', orgId)).lines[0]).toContain('\tviewer\tm@beta.test')
  })

  test('bad input exits 2 with a message naming the problem', async () => {
    const badRole = await run('users', 'set-role', '--email', 'm@beta.test', '--role', 'wizard')
    expect(badRole.code).toBe(2)
    expect(badRole.lines[0]).toContain('--role must be one of')
    expect((await run('orgs', 'create', '--name', 'X', '--plan', 'platinum')).lines[0]).toContain('unknown plan "platinum"')
    expect((await run('orgs', 'set-plan', '--org', 'nope', '--plan', 'pro')).code).toBe(2)
    expect((await run('reticulate', 'splines')).lines[0]).toContain('unknown command')
    expect((await run('users', 'create', '--email', 'm@beta.test', '--password', 'x'.repeat(12), '--role', 'member')).code).toBe(2)
  })
})
