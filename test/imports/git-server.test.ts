import { afterAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startGitServer } from '../fakes/git-server.ts'

// The fake the import and publishing suites rely on, checked against the real git client.
const server = startGitServer()
const work = mkdtempSync(join(tmpdir(), 'git-client-'))
afterAll(async () => {
  await server.close()
  rmSync(work, { recursive: true, force: true })
})

// Run asynchronously: the server answers from this same process.
async function git(cwd: string, ...args: string[]): Promise<{ code: number; stderr: string }> {
  const child = Bun.spawn(['git', '-c', 'user.name=Client', '-c', 'user.email=client@example.com', '-c', 'credential.helper=', ...args], {
    cwd,
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: work, GIT_TERMINAL_PROMPT: '0' },
    stdout: 'ignore',
    stderr: 'pipe',
  })
  return { code: await child.exited, stderr: await new Response(child.stderr).text() }
}

describe('the git smart-HTTP fake', () => {
  test('serves clones and accepts pushes', async () => {
    const repository = server.createRepository('acme/pushed', { 'README.md': '# Pushed\n' })
    const clone = join(work, 'pushed')
    expect((await git(work, 'clone', '-q', server.urlOf('acme/pushed'), clone)).code).toBe(0)
    expect(readFileSync(join(clone, 'README.md'), 'utf8')).toBe('# Pushed\n')
    writeFileSync(join(clone, 'new.txt'), 'from the client\n')
    await git(clone, 'add', 'new.txt')
    await git(clone, 'commit', '-q', '-m', 'client change')
    expect((await git(clone, 'push', '-q', 'origin', 'main')).code).toBe(0)
    const bare = join(server.root, 'acme/pushed.git')
    expect(Bun.spawnSync(['git', '--git-dir', bare, 'log', '-1', '--format=%s', 'main']).stdout.toString().trim()).toBe('client change')
    expect(repository.head()).not.toBe(Bun.spawnSync(['git', '--git-dir', bare, 'rev-parse', 'main']).stdout.toString().trim())
  })

  test('asks for basic auth when told to', async () => {
    server.createRepository('acme/guarded', { 'a.txt': 'a\n' })
    server.basicAuth = 'x-access-token:secret'
    try {
      expect((await git(work, 'clone', '-q', server.urlOf('acme/guarded'), join(work, 'anonymous'))).code).not.toBe(0)
      const withToken = server.urlOf('acme/guarded').replace('http://', 'http://x-access-token:secret@')
      expect((await git(work, 'clone', '-q', withToken, join(work, 'authorised'))).code).toBe(0)
      expect(server.requests.at(-1)!.authorization).toBe(`Basic ${Buffer.from('x-access-token:secret').toString('base64')}`)
    } finally {
      server.basicAuth = undefined
    }
  })
})
