/**
 * The world of the publishing suites: the service, a fake OAuth provider to connect GitHub through,
 * the fake GitHub REST API (GITHUB_API_URL) and a real git smart-HTTP server (CODEHOST_GIT_URL) that
 * only takes the connected user's token. Repositories live at `<root>/<owner>/<name>.git`.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { join, relative } from 'node:path'
import { createAccessTokens } from '../../src/auth/access-tokens.ts'
import { grantedScopes, type Role } from '../../src/auth/roles.ts'
import { startGitServer, runGit, type FixtureFiles, type GitServer } from '../fakes/git-server.ts'
import { defaultAccount, startFakeOAuthProvider, type FakeOAuthProvider } from '../fakes/oauth-provider.ts'
import { startFakePagesApi, type FakePagesApi, type FakeRepository } from '../fakes/pages-api.ts'
import { announceSkip, bearer, freshPostgres, makeApp, postgresUrl, tempDir, type TestApp } from '../helpers.ts'

export const PUBLIC_BASE_URL = 'https://app.example'
const CLIENT = { id: 'gh-publish-client', secret: 'gh-publish-client-secret-0123456789' }
/** The GitHub login every connection in these suites gets (the fake OAuth provider's default account). */
export const LOGIN = defaultAccount.login

export type Backend = 'sqlite' | 'postgres'
/** SQLite always; PostgreSQL when DATABASE_URL is set. */
export const BACKENDS: Backend[] = postgresUrl ? ['sqlite', 'postgres'] : ['sqlite']
if (!postgresUrl) announceSkip('PostgreSQL variants of the publishing suites', 'DATABASE_URL')

const gitEnv = (home: string) => ({
  PATH: process.env.PATH ?? '/usr/bin:/bin',
  HOME: home,
  GIT_CONFIG_NOSYSTEM: '1',
  GIT_AUTHOR_NAME: 'Test',
  GIT_AUTHOR_EMAIL: 'test@example.com',
  GIT_COMMITTER_NAME: 'Test',
  GIT_COMMITTER_EMAIL: 'test@example.com',
})

const FIRST_PUSH_SETS_HEAD = `#!/bin/sh
git rev-parse -q --verify HEAD >/dev/null && exit 0
read old new ref && git symbolic-ref HEAD "$ref"
`

export interface Member {
  userId: string
  orgId: string
  /** Bearer token for the service. */
  token: string
}

export interface PublishWorld {
  t: TestApp
  git: GitServer
  api: FakePagesApi
  oauth: FakeOAuthProvider
  /** A user of the service with `role`, its token minted directly. */
  member(role?: Role): Promise<Member>
  /** A member with GitHub connected through the OAuth flow; the git server then takes only its token. */
  connectedMember(role?: Role): Promise<Member & { githubToken: string }>
  publish(token: string, body: unknown, headers?: Record<string, string>): Promise<Response>
  /** A repository that already exists on GitHub and the git server, with `files` on `branch`. */
  existingRepository(
    owner: string,
    name: string,
    files: FixtureFiles,
    options?: { branch?: string } & Partial<Pick<FakeRepository, 'private' | 'access' | 'pages'>>,
  ): void
  /** The commit at the tip of the branch in the served repository, or undefined. */
  tip(owner: string, name: string, branch: string): string | undefined
  /** Runs git in the served bare repository. */
  gitIn(owner: string, name: string, ...args: string[]): string
  /** Someone else pushes a commit changing `files` to the branch, straight into the served repository; answers its id. */
  moveBranch(owner: string, name: string, branch: string, files: Record<string, string>): string
  /** The served repository refuses every push with `message` (a pre-receive hook, as GitHub's protected branches do). */
  refusePushes(owner: string, name: string, message: string): void
  /** `git clone` of the branch over HTTP, answered as path -> content (binary-safe). */
  clone(owner: string, name: string, branch: string): Promise<Record<string, Buffer>>
  close(): Promise<void>
}

export async function startWorld(backend: Backend = 'sqlite', env: Record<string, string> = {}): Promise<PublishWorld> {
  const home = tempDir('publish-world-')
  const git = startGitServer()
  const oauth = startFakeOAuthProvider({ [CLIENT.id]: { secret: CLIENT.secret, redirectUri: `${PUBLIC_BASE_URL}/api/integrations/github/callback` } })
  const bareOf = (owner: string, name: string) => join(git.root, owner, `${name}.git`)
  const run = (cwd: string, ...args: string[]) => runGit(cwd, gitEnv(home.path), args)
  const hasBranch = (owner: string, name: string, branch: string) =>
    existsSync(bareOf(owner, name)) &&
    Bun.spawnSync(['git', 'rev-parse', '--verify', '--quiet', `refs/heads/${branch}`], { cwd: bareOf(owner, name), env: gitEnv(home.path) }).exitCode === 0
  const api = startFakePagesApi({
    accountOf: (token) => (oauth.issuedTokens.includes(token) ? { login: oauth.account.login, id: oauth.account.id } : undefined),
    // GitHub creates an empty repository (no auto_init); so does the git side.
    onCreate: (repository) => {
      const bare = bareOf(repository.owner, repository.name)
      mkdirSync(bare, { recursive: true })
      run(bare, 'init', '-q', '--bare', '-b', 'main')
      run(bare, 'config', 'http.receivepack', 'true')
      // GitHub makes the first branch pushed to an empty repository its default branch (HEAD).
      writeFileSync(join(bare, 'hooks', 'post-receive'), FIRST_PUSH_SETS_HEAD, { mode: 0o755 })
    },
    branchExists: (repository, branch) => hasBranch(repository.owner, repository.name, branch),
  })
  const pg = backend === 'postgres' ? await freshPostgres() : undefined
  const t = await makeApp({
    PUBLIC_BASE_URL,
    GITHUB_CLIENT_ID: CLIENT.id,
    GITHUB_CLIENT_SECRET: CLIENT.secret,
    GITHUB_AUTHORIZE_URL: `${oauth.url}/login/oauth/authorize`,
    GITHUB_TOKEN_URL: `${oauth.url}/login/oauth/access_token`,
    GITHUB_API_URL: api.url,
    CODEHOST_GIT_URL: git.url,
    // Sites can also be published from an import of a repository on the same git server.
    IMPORT_CODEHOST_URL: git.url,
    IMPORT_ALLOW_HOSTS: `127.0.0.1:${git.port}`,
    ...(pg ? { DATABASE_URL: pg.url } : {}),
    ...env,
  })
  const tokens = createAccessTokens({ secret: t.config.secrets.jwtSecret, issuer: t.config.tokens.issuer, audience: t.config.tokens.audience })

  async function member(role: Role = 'member'): Promise<Member> {
    const org = await t.deps.accounts.createOrganization('publishing test', t.config.plans.ids[0]!)
    const user = (await t.deps.accounts.createUser({ orgId: org.id, email: `${role}-${crypto.randomUUID()}@example.com`, role }))!
    const { token } = await tokens.issue({ userId: user.id, orgId: org.id, role, scopes: grantedScopes(role) })
    return { userId: user.id, orgId: org.id, token }
  }

  return {
    t,
    git,
    api,
    oauth,
    member,
    async connectedMember(role = 'member') {
      const m = await member(role)
      const integrations = t.deps.integrations
      const flow = await integrations.begin(m.userId, 'github')
      const back = new URL(await oauth.authorize(flow.authorizationUrl))
      const outcome = await integrations.complete(
        'github',
        { state: back.searchParams.get('state') ?? undefined, code: back.searchParams.get('code') ?? undefined },
        flow.binding,
      )
      if (!outcome.connected) throw new Error(`GitHub connection failed: ${outcome.error}`)
      const githubToken = await integrations.tokenFor(m.userId, 'github')
      if (!githubToken) throw new Error('no GitHub token after connecting')
      // The git server, like GitHub, takes the token as basic auth with any user name; the service sends x-access-token.
      git.basicAuth = `x-access-token:${githubToken}`
      return { ...m, githubToken }
    },
    publish: (token, body, headers = {}) => t.send('POST', '/api/publish-codehost-pages', body, { ...bearer(token), ...headers }),
    existingRepository(owner, name, files, options = {}) {
      git.createRepository(`${owner}/${name}`, files, { branch: options.branch ?? 'main' })
      api.addRepository(owner, name, { private: options.private, access: options.access, pages: options.pages })
    },
    tip(owner, name, branch) {
      if (!hasBranch(owner, name, branch)) return undefined
      return run(bareOf(owner, name), 'rev-parse', `refs/heads/${branch}`)
    },
    gitIn: (owner, name, ...args) => run(bareOf(owner, name), ...args),
    moveBranch(owner, name, branch, files) {
      // Through the file system, not HTTP: a synchronous git call must not wait on this process's server.
      const work = join(home.path, `work-${crypto.randomUUID()}`)
      run(home.path, 'clone', '-q', '--branch', branch, bareOf(owner, name), work)
      for (const [path, content] of Object.entries(files)) writeIn(work, path, content)
      run(work, 'add', '-A')
      run(work, 'commit', '-q', '-m', 'someone else')
      run(work, 'push', '-q', 'origin', `HEAD:refs/heads/${branch}`)
      return run(work, 'rev-parse', 'HEAD')
    },
    refusePushes(owner, name, message) {
      writeFileSync(join(bareOf(owner, name), 'hooks', 'pre-receive'), `#!/bin/sh\necho "${message}" >&2\nexit 1\n`, { mode: 0o755 })
    },
    async clone(owner, name, branch) {
      const target = join(home.path, `clone-${crypto.randomUUID()}`)
      const url = new URL(git.urlOf(`${owner}/${name}`))
      if (git.basicAuth) {
        const [user, password] = git.basicAuth.split(':') as [string, string]
        url.username = user
        url.password = password
      }
      // Not spawnSync: the git server answers from this very process.
      const child = Bun.spawn(['git', 'clone', '-q', '--branch', branch, url.toString(), target], { cwd: home.path, env: gitEnv(home.path), stderr: 'pipe' })
      if ((await child.exited) !== 0) throw new Error(`git clone failed: ${await new Response(child.stderr).text()}`)
      const files: Record<string, Buffer> = {}
      const walk = (dir: string) => {
        for (const entry of readdirSync(dir)) {
          const full = join(dir, entry)
          if (dir === target && entry === '.git') continue
          if (statSync(full).isDirectory()) walk(full)
          else files[relative(target, full)] = readFileSync(full)
        }
      }
      walk(target)
      return files
    },
    async close() {
      await t.close()
      await pg?.drop()
      await api.close()
      await oauth.close()
      await git.close()
      home.remove()
    },
  }
}

/** Content of a file as the clone holds it, as text. */
export const text = (files: Record<string, Buffer>, path: string) => files[path]?.toString('utf8')

/** A small site: index.html, a nested page, a stylesheet and a binary image. */
export function sampleSite(variant = 'first') {
  const png = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0xff, 0x10, 0x80])
  return {
    png,
    files: [
      { path: 'index.html', content: `<!doctype html><title>${variant}</title><h1>Hello ${variant}</h1>` },
      { path: 'docs/guide/intro.html', content: '<p>Guide ✓ — ünïcode</p>' },
      { path: 'assets/site.css', content: 'body { margin: 0 }\n' },
      { path: 'assets/logo.png', content: png.toString('base64'), encoding: 'base64' as const },
    ],
  }
}

/** Writes `content` to a file of a local working copy (for commits made around the service). */
export function writeIn(dir: string, path: string, content: string) {
  mkdirSync(join(dir, path, '..'), { recursive: true })
  writeFileSync(join(dir, path), content)
}
