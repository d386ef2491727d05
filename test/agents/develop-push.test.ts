/**
 * develop with `push: true`: the change is committed on a new branch whose parent is the imported commit,
 * pushed over git HTTP with the user's GitHub connection, and a pull request is opened at the code-host API.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { startGitServer, runGit, type GitServer } from '../fakes/git-server.ts'
import { defaultAccount, startFakeOAuthProvider, type FakeOAuthProvider } from '../fakes/oauth-provider.ts'
import { startFakePagesApi, type FakePagesApi } from '../fakes/pages-api.ts'
import { tempDir } from '../helpers.ts'
import { agentHarness, importRepository, call, isFinal, type AgentHarness } from './helpers.ts'
import { join } from 'node:path'

const PUBLIC_BASE_URL = 'https://app.example'
const CLIENT = { id: 'gh-develop-client', secret: 'gh-develop-client-secret-0123456789' }
const OWNER = 'acme'
const BROKEN = 'export const sum = (a: number, b: number) => a - b\n'
const FIXED = 'export const sum = (a: number, b: number) => a + b\n'

describe('develop with push', () => {
  let git: GitServer
  let oauth: FakeOAuthProvider
  let api: FakePagesApi
  let h: AgentHarness
  let importId: string
  let importedCommit: string
  const home = tempDir('develop-push-')
  const gitIn = (...args: string[]) =>
    runGit(join(git.root, OWNER, 'calc.git'), { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: home.path, GIT_CONFIG_NOSYSTEM: '1' }, args)

  const hasBranch = (branch: string) => {
    try {
      gitIn('rev-parse', '--verify', '--quiet', `refs/heads/${branch}`)
      return true
    } catch {
      return false
    }
  }

  beforeAll(async () => {
    git = startGitServer()
    oauth = startFakeOAuthProvider({ [CLIENT.id]: { secret: CLIENT.secret, redirectUri: `${PUBLIC_BASE_URL}/api/integrations/github/callback` } })
    api = startFakePagesApi({
      accountOf: (token) => (oauth.issuedTokens.includes(token) ? { login: oauth.account.login, id: oauth.account.id } : undefined),
      branchExists: (repository, branch) => repository.name === 'calc' && hasBranch(branch),
    })
    h = await agentHarness({
      PUBLIC_BASE_URL,
      GITHUB_CLIENT_ID: CLIENT.id,
      GITHUB_CLIENT_SECRET: CLIENT.secret,
      GITHUB_AUTHORIZE_URL: `${oauth.url}/login/oauth/authorize`,
      GITHUB_TOKEN_URL: `${oauth.url}/login/oauth/access_token`,
      GITHUB_API_URL: api.url,
      CODEHOST_GIT_URL: git.url,
      IMPORT_ALLOW_HOSTS: `127.0.0.1:${git.port}`,
    })
    git.createRepository(`${OWNER}/calc`, { 'README.md': '# Calc\n', 'src/sum.ts': BROKEN, 'src/old.ts': 'export {}\n' })
    // The account may push to the organisation's repository, as a collaborator.
    api.addRepository(OWNER, 'calc', { access: { [defaultAccount.login]: 'push' } })
    ;({ id: importId, commit: importedCommit } = await importRepository(h, git.urlOf(`${OWNER}/calc`)))
    // The main branch moves on after the import: the pushed branch must still start from the imported commit.
    const work = join(home.path, 'work')
    const env = {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      HOME: home.path,
      GIT_CONFIG_NOSYSTEM: '1',
      GIT_AUTHOR_NAME: 'T',
      GIT_AUTHOR_EMAIL: 't@example.com',
      GIT_COMMITTER_NAME: 'T',
      GIT_COMMITTER_EMAIL: 't@example.com',
    }
    runGit(home.path, env, ['clone', '-q', join(git.root, OWNER, 'calc.git'), work])
    await Bun.write(join(work, 'CHANGELOG.md'), 'later\n')
    runGit(work, env, ['add', '-A'])
    runGit(work, env, ['commit', '-q', '-m', 'later'])
    runGit(work, env, ['push', '-q', 'origin', 'HEAD:main'])

    const integrations = h.t.deps.integrations
    const flow = await integrations.begin(h.user.id, 'github')
    const back = new URL(await oauth.authorize(flow.authorizationUrl))
    const outcome = await integrations.complete(
      'github',
      { state: back.searchParams.get('state') ?? undefined, code: back.searchParams.get('code') ?? undefined },
      flow.binding,
    )
    if (!outcome.connected) throw new Error(`GitHub connection failed: ${outcome.error}`)
    // From now on the git server takes only the connected account's token.
    git.basicAuth = `x-access-token:${await integrations.tokenFor(h.user.id, 'github')}`
  })
  afterAll(async () => {
    await h.close()
    await api.close()
    await oauth.close()
    await git.close()
    home.remove()
  })

  test('the branch reaches the git server on top of the imported commit and a pull request into the imported branch is opened', async () => {
    h.model.queue = [
      call('edit_file', { path: 'src/sum.ts', old_text: 'a - b', new_text: 'a + b' }),
      call('delete_file', { path: 'src/old.ts' }),
      call('finish', { summary: 'sum now adds.' }),
    ]
    const client = await h.connect()
    const taskId = await h.run(client, 'develop', { importId, instruction: 'Fix sum', branch: 'fix/sum', push: true })
    const final = await client.next(isFinal(taskId), 60_000)
    expect(final.type).toBe('result')
    const output = final.output
    const pulls = api.repository(OWNER, 'calc')!.pulls
    expect(pulls).toHaveLength(1)
    expect(pulls[0]).toMatchObject({ head: 'fix/sum', base: 'main', title: 'Fix sum', user: defaultAccount.login })
    expect(pulls[0]!.body).toContain('sum now adds.')
    expect(pulls[0]!.draft).toBe(false)
    expect(output.pullRequest).toEqual({ number: pulls[0]!.number, url: pulls[0]!.htmlUrl, draft: false })
    expect(output.pushed).toMatchObject({ repository: `${OWNER}/calc`, branch: 'fix/sum', base: { branch: 'main', commit: importedCommit } })

    const tip = gitIn('rev-parse', 'refs/heads/fix/sum')
    expect(tip).toBe(output.pushed.commit)
    expect(gitIn('rev-parse', `${tip}^`)).toBe(importedCommit)
    expect(`${gitIn('show', `${tip}:src/sum.ts`)}\n`).toBe(FIXED)
    expect(gitIn('diff', '--name-status', importedCommit, tip).split('\n').sort()).toEqual(['D\tsrc/old.ts', 'M\tsrc/sum.ts'])
    expect(gitIn('log', '-1', '--format=%an', tip)).toBe(defaultAccount.login)
    client.close()
  })

  test('a branch the repository has already is refused with branch_exists before the model is asked anything, and nothing is pushed', async () => {
    const before = gitIn('rev-parse', 'refs/heads/fix/sum')
    const asked = h.model.completions.length
    h.model.queue = [call('write_file', { path: 'NOTES.md', content: 'notes\n' }), call('finish', { summary: 'notes' })]
    const client = await h.connect()
    const taskId = await h.run(client, 'develop', { importId, instruction: 'Add notes', branch: 'fix/sum', push: true })
    const final = await client.next(isFinal(taskId), 60_000)
    expect(final).toMatchObject({ type: 'error', code: 'branch_exists' })
    expect(final.message).toContain('fix/sum')
    expect(h.model.completions.length).toBe(asked)
    expect(gitIn('rev-parse', 'refs/heads/fix/sum')).toBe(before)
    expect(api.repository(OWNER, 'calc')!.pulls).toHaveLength(1)
    h.model.queue = []
    client.close()
  })

  test('over a failing check nothing is pushed and no pull request is opened; the result says why', async () => {
    h.model.queue = [call('write_file', { path: 'NOTES.md', content: 'notes\n' }), call('finish', { summary: 'I am sure it works.' })]
    const client = await h.connect()
    const taskId = await h.run(client, 'develop', {
      importId,
      instruction: 'Add notes',
      branch: 'notes/failing',
      push: true,
      checks: ['test -f NOTES.md', 'false'],
    })
    const final = await client.next(isFinal(taskId), 60_000)
    expect(final.type).toBe('result')
    expect(final.output.pushed).toBeUndefined()
    expect(final.output.pullRequest).toBeUndefined()
    expect(final.output.pushRefused).toMatchObject({ code: 'checks_failed' })
    expect(final.output.pushRefused.message).toContain('`false` failed')
    expect(final.output.checks.map((c: { passed: boolean }) => c.passed)).toEqual([true, false])
    expect(hasBranch('notes/failing')).toBe(false)
    expect(api.repository(OWNER, 'calc')!.pulls).toHaveLength(1)
    client.close()
  })

  test('with draft, a draft pull request is opened over a failing check, and its body lists each check with its verdict', async () => {
    h.model.queue = [call('write_file', { path: 'NOTES.md', content: 'notes\n' }), call('finish', { summary: 'Notes added; lint still fails.' })]
    const client = await h.connect()
    const taskId = await h.run(client, 'develop', {
      importId,
      instruction: 'Add notes',
      branch: 'notes/draft',
      push: true,
      draft: true,
      checks: ['test -f NOTES.md', 'exit 3'],
    })
    const final = await client.next(isFinal(taskId), 60_000)
    expect(final.type).toBe('result')
    const pull = api.repository(OWNER, 'calc')!.pulls.find((p) => p.head === 'notes/draft')!
    expect(pull.draft).toBe(true)
    expect(pull.body).toContain('Notes added; lint still fails.')
    expect(pull.body).toContain('- ✅ `test -f NOTES.md`: passed')
    expect(pull.body).toContain('- ❌ `exit 3`: failed (exit 3)')
    expect(final.output.pullRequest).toEqual({ number: pull.number, url: pull.htmlUrl, draft: true })
    expect(hasBranch('notes/draft')).toBe(true)
    client.close()
  })

  test('push without an import is refused before any work', async () => {
    const client = await h.connect()
    const taskId = await h.run(client, 'develop', { instruction: 'New project', push: true })
    const final = await client.next(isFinal(taskId), 30_000)
    expect(final).toMatchObject({ type: 'error', code: 'validation_failed' })
    client.close()
  })
})
