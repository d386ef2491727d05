/**
 * A real git smart-HTTP server on 127.0.0.1: Debian's `git http-backend` run as CGI behind Bun.serve.
 * It serves clones and fetches, accepts pushes (http.receivepack), can ask for basic auth, and can
 * misbehave on purpose (trickle, endless ref list, huge pack, redirect) for the safety tests.
 * Fixture repositories are made with real `git` commands in a temporary directory.
 */
import type { Server } from 'bun'
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'

const HTTP_BACKEND = '/usr/lib/git-core/git-http-backend'

/** How the server answers; set `behaviour` between requests to change it. */
export type GitServerBehaviour =
  | { kind: 'normal' }
  /** Sends every response in `chunkBytes` pieces with `delayMs` between them. */
  | { kind: 'trickle'; chunkBytes: number; delayMs: number }
  /** Answers the ref advertisement with refs that never end. */
  | { kind: 'endless-refs' }
  /** Answers the pack request with a side-band stream of `bytes` pack bytes (endless when undefined). */
  | { kind: 'huge-pack'; bytes?: number }
  /** Answers every request with a redirect to `location` (the path and query are appended). */
  | { kind: 'redirect'; location: string; status?: number }
  /** Redirects paths under `from` to the same path under `to` on this server, as a host does for a renamed repository. */
  | { kind: 'rename'; from: string; to: string }

export interface GitServer {
  readonly url: string
  readonly port: number
  /** Directory holding the served repositories (`<root>/<name>.git`). */
  readonly root: string
  behaviour: GitServerBehaviour
  /** `user:password` required by basic auth on every request; undefined serves anonymously. */
  basicAuth: string | undefined
  /** Every request seen, in order, with the Authorization header it carried. */
  readonly requests: { method: string; path: string; authorization: string | null }[]
  /** URL of a served repository. */
  urlOf(name: string): string
  /** Creates `<name>.git` with one commit holding `files`; answers a handle to change it. */
  createRepository(name: string, files: FixtureFiles, options?: { branch?: string }): FixtureRepository
  close(): Promise<void>
}

/** Path -> text content, or a symlink target. */
export type FixtureFiles = Record<string, string | Uint8Array | { symlink: string } | { executable: string }>

export interface FixtureRepository {
  /** Working copy the commits are made in. */
  readonly workdir: string
  /** Writes (or deletes, with null) files and commits them; answers the new commit id. */
  commit(changes: Record<string, FixtureFiles[string] | null>, message?: string): string
  /** Commits a tree built with `git mktree` from raw entries, which may hold names git would refuse. */
  commitRawTree(entries: RawTreeEntry[], message?: string): string
  /** Runs git in the working copy and answers its output. */
  git(...args: string[]): string
  head(): string
}

/** A tree entry written verbatim: `name` may be `..`, `.git` or anything else a hostile server sends. */
export type RawTreeEntry = { name: string } & ({ blob: string | { symlink: string } } | { tree: RawTreeEntry[] })

const gitEnv = (home: string) => ({
  PATH: process.env.PATH ?? '/usr/bin:/bin',
  HOME: home,
  GIT_CONFIG_NOSYSTEM: '1',
  GIT_AUTHOR_NAME: 'Fixture',
  GIT_AUTHOR_EMAIL: 'fixture@example.com',
  GIT_COMMITTER_NAME: 'Fixture',
  GIT_COMMITTER_EMAIL: 'fixture@example.com',
})

export function runGit(cwd: string, env: Record<string, string>, args: string[], input?: string): string {
  const result = Bun.spawnSync(['git', ...args], { cwd, env, stdin: input === undefined ? 'ignore' : Buffer.from(input) })
  if (result.exitCode !== 0) throw new Error(`git ${args.join(' ')} failed: ${result.stderr.toString()}`)
  return result.stdout.toString().trim()
}

function writeFixture(workdir: string, path: string, content: FixtureFiles[string]) {
  const target = join(workdir, path)
  mkdirSync(dirname(target), { recursive: true })
  rmSync(target, { force: true })
  if (typeof content === 'string' || content instanceof Uint8Array) writeFileSync(target, content)
  else if ('symlink' in content) symlinkSync(content.symlink, target)
  else writeFileSync(target, content.executable, { mode: 0o755 })
}

export function startGitServer(options: { basicAuth?: string } = {}): GitServer {
  const home = mkdtempSync(join(tmpdir(), 'git-server-'))
  const root = join(home, 'repositories')
  const work = join(home, 'work')
  mkdirSync(root)
  mkdirSync(work)
  const env = gitEnv(home)
  const requests: GitServer['requests'] = []

  const state = {
    behaviour: { kind: 'normal' } as GitServerBehaviour,
    basicAuth: options.basicAuth,
  }

  const server: Server<unknown> = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    idleTimeout: 0,
    async fetch(request) {
      const url = new URL(request.url)
      requests.push({ method: request.method, path: url.pathname + url.search, authorization: request.headers.get('authorization') })
      if (state.basicAuth !== undefined) {
        const expected = `Basic ${Buffer.from(state.basicAuth).toString('base64')}`
        if (request.headers.get('authorization') !== expected)
          return new Response('authentication required', { status: 401, headers: { 'www-authenticate': 'Basic realm="git"' } })
      }
      const behaviour = state.behaviour
      if (behaviour.kind === 'redirect')
        return new Response(null, { status: behaviour.status ?? 302, headers: { location: behaviour.location + url.pathname + url.search } })
      if (behaviour.kind === 'rename' && url.pathname.startsWith(behaviour.from))
        return new Response(null, { status: 301, headers: { location: behaviour.to + url.pathname.slice(behaviour.from.length) + url.search } })
      if (behaviour.kind === 'endless-refs' && url.pathname.endsWith('/info/refs')) return endlessRefs()
      if (behaviour.kind === 'huge-pack' && url.pathname.endsWith('/git-upload-pack')) return hugePack(behaviour.bytes)
      const response = await cgi(request, url)
      if (behaviour.kind === 'trickle' && response.body) return trickle(response, behaviour.chunkBytes, behaviour.delayMs)
      return response
    },
  })

  async function cgi(request: Request, url: URL): Promise<Response> {
    const body = request.body ? new Uint8Array(await request.arrayBuffer()) : undefined
    const child = Bun.spawn([HTTP_BACKEND], {
      env: {
        ...env,
        GIT_PROJECT_ROOT: root,
        GIT_HTTP_EXPORT_ALL: '1',
        // http-backend enables receive-pack for authenticated users only; the fake trusts everyone.
        REMOTE_USER: 'fixture',
        REMOTE_ADDR: '127.0.0.1',
        REQUEST_METHOD: request.method,
        PATH_INFO: decodeURIComponent(url.pathname),
        QUERY_STRING: url.search.slice(1),
        CONTENT_TYPE: request.headers.get('content-type') ?? '',
        CONTENT_LENGTH: String(body?.byteLength ?? 0),
        HTTP_CONTENT_ENCODING: request.headers.get('content-encoding') ?? '',
        GIT_PROTOCOL: request.headers.get('git-protocol') ?? '',
      },
      stdin: body ?? 'ignore',
      stdout: 'pipe',
      stderr: 'ignore',
    })
    const output = new Uint8Array(await new Response(child.stdout).arrayBuffer())
    await child.exited
    return parseCgiOutput(output)
  }

  const git = (cwd: string, ...args: string[]) => runGit(cwd, env, args)

  return {
    url: `http://127.0.0.1:${server.port}`,
    port: server.port!,
    root,
    requests,
    get behaviour() {
      return state.behaviour
    },
    set behaviour(value) {
      state.behaviour = value
    },
    get basicAuth() {
      return state.basicAuth
    },
    set basicAuth(value) {
      state.basicAuth = value
    },
    urlOf: (name) => `http://127.0.0.1:${server.port}/${name}.git`,
    createRepository(name, files, { branch = 'main' } = {}) {
      const workdir = join(work, name)
      const bare = join(root, `${name}.git`)
      mkdirSync(workdir, { recursive: true })
      git(workdir, 'init', '-q', '-b', branch)
      for (const [path, content] of Object.entries(files)) writeFixture(workdir, path, content)
      git(workdir, 'add', '-A')
      git(workdir, 'commit', '-q', '-m', 'initial')
      git(work, 'clone', '-q', '--bare', workdir, bare)
      git(bare, 'config', 'http.receivepack', 'true')
      // Commits go to the branch checked out in the working copy.
      const push = () => git(workdir, 'push', '-q', '--force', bare, `HEAD:refs/heads/${git(workdir, 'rev-parse', '--abbrev-ref', 'HEAD')}`)
      const head = () => git(workdir, 'rev-parse', 'HEAD')
      return {
        workdir,
        git: (...args) => git(workdir, ...args),
        head,
        commit(changes, message = 'change') {
          for (const [path, content] of Object.entries(changes)) {
            if (content === null) rmSync(join(workdir, path), { force: true })
            else writeFixture(workdir, path, content)
          }
          git(workdir, 'add', '-A')
          git(workdir, 'commit', '-q', '--allow-empty', '-m', message)
          push()
          return head()
        },
        commitRawTree(entries, message = 'raw tree') {
          const tree = mktree(workdir, entries)
          const commit = runGit(workdir, env, ['commit-tree', tree, '-p', 'HEAD', '-m', message])
          git(workdir, 'update-ref', 'HEAD', commit)
          push()
          return commit
        },
      }
    },
    async close() {
      await server.stop(true)
      rmSync(home, { recursive: true, force: true })
    },
  }

  function mktree(workdir: string, entries: RawTreeEntry[]): string {
    const lines = entries.map((entry) => {
      if ('tree' in entry) return `040000 tree ${mktree(workdir, entry.tree)}\t${entry.name}`
      const link = typeof entry.blob !== 'string'
      const content = typeof entry.blob === 'string' ? entry.blob : entry.blob.symlink
      const oid = runGit(workdir, env, ['hash-object', '-w', '--stdin'], content)
      return `${link ? '120000' : '100644'} blob ${oid}\t${entry.name}`
    })
    return runGit(workdir, env, ['mktree'], `${lines.join('\n')}\n`)
  }
}

/** Splits CGI output into the header block (with its `Status:` line) and the body. */
function parseCgiOutput(output: Uint8Array): Response {
  const text = Buffer.from(output)
  let end = text.indexOf('\r\n\r\n')
  let separator = 4
  if (end < 0) {
    end = text.indexOf('\n\n')
    separator = 2
  }
  if (end < 0) return new Response('bad CGI output', { status: 502 })
  const headers = new Headers()
  let status = 200
  for (const line of text.subarray(0, end).toString('latin1').split(/\r?\n/)) {
    const colon = line.indexOf(':')
    if (colon < 0) continue
    const name = line.slice(0, colon).trim()
    const value = line.slice(colon + 1).trim()
    if (name.toLowerCase() === 'status') status = Number.parseInt(value, 10)
    else headers.append(name, value)
  }
  return new Response(text.subarray(end + separator), { status, headers })
}

/** A pkt-line: four hex digits of length (itself included), then the payload. */
export function pktLine(payload: string | Uint8Array): Uint8Array {
  const bytes = typeof payload === 'string' ? Buffer.from(payload) : payload
  const header = Buffer.from((bytes.byteLength + 4).toString(16).padStart(4, '0'))
  return Buffer.concat([header, bytes])
}

function endlessRefs(): Response {
  let n = 0
  let cancelled = false
  const zeroId = '1'.repeat(40)
  const body = new ReadableStream({
    type: 'direct',
    cancel() {
      cancelled = true
    },
    async pull(controller) {
      controller.write(Buffer.concat([pktLine('# service=git-upload-pack\n'), Buffer.from('0000')]))
      controller.write(pktLine(`${zeroId} HEAD\0side-band-64k ofs-delta shallow\n`))
      while (!cancelled) {
        const batch: Uint8Array[] = []
        for (let i = 0; i < 500; i++) batch.push(pktLine(`${zeroId} refs/heads/branch-${n++}\n`))
        await controller.write(Buffer.concat(batch))
        await controller.flush()
        await Bun.sleep(1)
      }
    },
  })
  return new Response(body, { headers: { 'content-type': 'application/x-git-upload-pack-advertisement' } })
}

function hugePack(bytes: number | undefined): Response {
  const payload = new Uint8Array(65_515).fill(0x61)
  // Side band 1 carries pack data; the NAK comes first as a real server sends it.
  const frame = pktLine(Buffer.concat([Buffer.from([1]), payload]))
  let sent = 0
  let cancelled = false
  const body = new ReadableStream({
    type: 'direct',
    cancel() {
      cancelled = true
    },
    async pull(controller) {
      controller.write(pktLine('NAK\n'))
      while (!cancelled && (bytes === undefined || sent < bytes)) {
        await controller.write(frame)
        await controller.flush()
        sent += payload.byteLength
        await Bun.sleep(0)
      }
      controller.write('0000')
      controller.close()
    },
  })
  return new Response(body, { headers: { 'content-type': 'application/x-git-upload-pack-result' } })
}

function trickle(response: Response, chunkBytes: number, delayMs: number): Response {
  const source = response.body!
  let cancelled = false
  const body = new ReadableStream({
    type: 'direct',
    cancel() {
      cancelled = true
    },
    async pull(controller) {
      const data = new Uint8Array(await new Response(source).arrayBuffer())
      for (let offset = 0; !cancelled && offset < data.byteLength; offset += chunkBytes) {
        await controller.write(data.subarray(offset, offset + chunkBytes))
        await controller.flush()
        await Bun.sleep(delayMs)
      }
      controller.close()
    },
  })
  return new Response(body, { status: response.status, headers: response.headers })
}
