/**
 * `admin backup` taken from a running service under write load, restored into an empty DATA_DIR with
 * `admin restore`, and the restored service started: every user, chat, audit-log entry and imported index
 * that existed when the backup began is there, and the audit chain verifies. Then the archives a restore
 * must refuse, before it writes anything.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { existsSync, mkdirSync, readdirSync, symlinkSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { SQL } from 'bun'
import * as tar from 'tar'
import { restoreBackup } from '../../src/main/backup.ts'
import { startGitServer, type GitServer } from '../fakes/git-server.ts'
import { startFakeOpenAi, type FakeOpenAi } from '../fakes/openai.ts'
import { startFakeStripe, type FakeStripe } from '../fakes/stripe-api.ts'
import { ADMIN, announceSkip, freshPostgres, postgresUrl, tempDir } from '../helpers.ts'
import { paymentEnv, payloadOf, PRICES, SECRET_KEY, signature } from '../payments/harness.ts'
import { closedPort, fromSource, runToEnd, startService, type RunningService } from './processes.ts'

const admin = (args: string[], env: Record<string, string>) => runToEnd(fromSource(args, 'src/main/cli.ts'), env)

interface World {
  git: GitServer
  model: FakeOpenAi
  stripe: FakeStripe
  env: Record<string, string>
}

let world: World

beforeAll(() => {
  const git = startGitServer()
  git.createRepository('acme/widgets', {
    'src/widgets.ts': 'export function frobnicateWidget(size: number): number {\n  return size * 42\n}\n',
    'README.md': '# widgets\n',
  })
  const model = startFakeOpenAi()
  model.fallback = () => ({ text: 'A short answer.' })
  const stripe = startFakeStripe({ secretKey: SECRET_KEY, prices: Object.values(PRICES) })
  world = {
    git,
    model,
    stripe,
    env: {
      ADMIN_EMAIL: ADMIN.email,
      ADMIN_PASSWORD: ADMIN.password,
      ALLOW_REGISTRATION: 'true',
      OPENAI_BASE_URL: model.baseUrl,
      CHAT_MODEL: 'fake-model',
      CHAT_SEARCH_AUGMENTATION: 'false',
      IMPORT_CODEHOST_URL: git.url,
      IMPORT_ALLOW_HOSTS: `127.0.0.1:${git.port}`,
      CODE_INDEX_SNAPSHOT_DELAY_MS: '0',
      ...paymentEnv(stripe),
    },
  }
})

afterAll(async () => {
  await world.model.close()
  await world.stripe.close()
  world.git.close()
})

const json = (body: unknown, token?: string): RequestInit => ({
  method: 'POST',
  headers: { 'content-type': 'application/json', ...(token && { authorization: `Bearer ${token}` }) },
  body: JSON.stringify(body),
})

async function signIn(service: RunningService, email: string, password: string): Promise<string> {
  const res = await fetch(`${service.url}/auth/login`, json({ email, password }))
  if (res.status !== 200) throw new Error(`sign-in of ${email} failed: ${res.status} ${await res.text()}`)
  return ((await res.json()) as { accessToken: string }).accessToken
}

/** One chat turn, read to its end; answers the chat's id. */
async function chat(service: RunningService, token: string, question: string): Promise<string> {
  const id = crypto.randomUUID()
  const res = await fetch(`${service.url}/api/chat`, json({ id, messages: [{ role: 'user', content: question }] }, token))
  if (res.status !== 200) throw new Error(`chat failed: ${res.status} ${await res.text()}`)
  await res.text()
  return id
}

let webhookCount = 0
async function webhook(service: RunningService): Promise<void> {
  const payload = payloadOf({
    id: `evt_backup_${++webhookCount}_${crypto.randomUUID().slice(0, 8)}`,
    object: 'event',
    type: 'customer.created',
    created: Math.floor(Date.now() / 1000),
    data: { object: { id: `cus_${webhookCount}`, object: 'customer' } },
  })
  const res = await fetch(`${service.url}/api/payment/webhook`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'stripe-signature': await signature(payload) },
    body: payload,
  })
  if (res.status !== 200) throw new Error(`webhook refused: ${res.status} ${await res.text()}`)
}

async function importRepository(service: RunningService, token: string): Promise<void> {
  const res = await fetch(`${service.url}/api/codehost/import`, json({ repository: 'acme/widgets' }, token))
  if (res.status !== 202 && res.status !== 200) throw new Error(`import refused: ${res.status} ${await res.text()}`)
  const { importId } = (await res.json()) as { importId: string }
  for (;;) {
    const view = (await (await fetch(`${service.url}/api/codehost/imports/${importId}`, { headers: { authorization: `Bearer ${token}` } })).json()) as {
      status: string
    }
    if (view.status === 'succeeded') return
    if (view.status === 'failed') throw new Error('the import failed')
    await Bun.sleep(50)
  }
}

async function search(service: RunningService, token: string, query: string): Promise<string[]> {
  const res = await fetch(`${service.url}/api/search`, json({ query, mode: 'text' }, token))
  if (res.status !== 200) throw new Error(`search failed: ${res.status} ${await res.text()}`)
  const body = (await res.json()) as { results: { path: string }[] }
  return body.results.map((r) => r.path)
}

/** Waits until the organisation's snapshot is on disk, where a backup finds it. */
async function snapshotWritten(dataDir: string): Promise<void> {
  const folder = join(dataDir, 'code-index')
  while (!(existsSync(folder) && readdirSync(folder).some((org) => readdirSync(join(folder, org)).some((f) => f.endsWith('.snapshot'))))) await Bun.sleep(50)
}

interface Written {
  users: { email: string; password: string }[]
  chats: string[]
  webhooks: number
}

/**
 * Writes users, chats and payment webhooks until `stop` resolves, sequentially; `settled` is what had been
 * answered before `mark()` was called, which every backup taken after the mark must hold.
 */
function writeLoad(service: RunningService, token: string) {
  const done: Written = { users: [], chats: [], webhooks: 0 }
  let running = true
  let round = 0
  const loop = (async () => {
    while (running) {
      round++
      const user = { email: `load-${round}-${crypto.randomUUID().slice(0, 6)}@example.com`, password: `password-${round}-long-enough` }
      const res = await fetch(`${service.url}/auth/register`, json(user))
      if (res.status !== 201) throw new Error(`register failed: ${res.status} ${await res.text()}`)
      done.users.push(user)
      done.chats.push(await chat(service, token, `question ${round}`))
      await webhook(service)
      done.webhooks++
    }
  })()
  return {
    mark: (): Written => ({ users: [...done.users], chats: [...done.chats], webhooks: done.webhooks }),
    async stop(): Promise<Written> {
      running = false
      await loop
      return done
    },
  }
}

/**
 * What a restored service must hold: every user of `before` signs in with their password (the restored secrets
 * and hashes), the admin's chats include `chats` and those of `before`, the first with its answer, and the imported
 * index answers without an import.
 */
async function expectRestored(service: RunningService, before: Written, chats: string[]): Promise<void> {
  const token = await signIn(service, ADMIN.email, ADMIN.password)
  for (const user of before.users) await signIn(service, user.email, user.password)
  const read = async (path: string) => (await fetch(`${service.url}${path}`, { headers: { authorization: `Bearer ${token}` } })).json()
  const listed = (await read('/api/chats')) as { chats: { id: string }[] }
  const ids = new Set(listed.chats.map((c) => c.id))
  for (const id of [...chats, ...before.chats]) expect(ids.has(id)).toBe(true)
  const first = (await read(`/api/chat/${chats[0]}`)) as { messages: { role: string }[] }
  expect(first.messages.map((m) => m.role)).toEqual(['user', 'assistant'])
  expect(await search(service, token, 'frobnicateWidget')).toContain('src/widgets.ts')
}

describe('admin backup and restore, embedded database', () => {
  test('a backup taken under write load restores into an empty DATA_DIR with every user, chat, audit entry and imported index', async () => {
    const source = tempDir('backup-source-')
    const target = tempDir('backup-target-')
    const archives = tempDir('backup-archives-')
    const file = join(archives.path, 'service-backup.tar.gz')
    const env = { ...world.env, DATA_DIR: source.path }
    let service: RunningService | undefined = await startService(fromSource([]), env)
    try {
      const token = await signIn(service, ADMIN.email, ADMIN.password)
      await importRepository(service, token)
      await snapshotWritten(source.path)
      const firstChats = [await chat(service, token, 'first question'), await chat(service, token, 'second question')]
      await webhook(service)

      const load = writeLoad(service, token)
      await Bun.sleep(300)
      const before = load.mark()
      const backedUp = await admin(['backup', file], env)
      const after = await load.stop()
      expect(backedUp.stderr).toBe('')
      expect(backedUp.exitCode).toBe(0)
      expect(backedUp.stdout).toContain(`wrote ${file}`)
      // The load really ran beside the backup.
      expect(after.users.length).toBeGreaterThan(before.users.length)
      await service.stop()
      service = undefined

      // The archive is readable by its owner only: it holds the secrets.
      expect((await Bun.file(file).stat()).mode & 0o077).toBe(0)

      const restoredEnv = { ...world.env, DATA_DIR: target.path }
      const restored = await admin(['restore', file], restoredEnv)
      expect(restored.stderr).toBe('')
      expect(restored.exitCode).toBe(0)
      const verified = await admin(['audit', 'verify'], restoredEnv)
      expect(verified.exitCode).toBe(0)
      const entries = Number(/intact: (\d+) entries/.exec(verified.stdout)?.[1])
      // One receipt per webhook delivered before the backup began, at least.
      expect(entries).toBeGreaterThanOrEqual(before.webhooks + 1)

      service = await startService(fromSource([]), restoredEnv)
      await expectRestored(service, before, firstChats)
    } finally {
      await service?.stop()
      source.remove()
      target.remove()
      archives.remove()
    }
  }, 120_000)

  test('backup without a database, restore into a DATA_DIR that is not empty, and a missing archive each exit 1 and write nothing', async () => {
    const empty = tempDir('backup-empty-')
    const busy = tempDir('backup-busy-')
    try {
      const none = await admin(['backup', join(empty.path, 'out.tar.gz')], { DATA_DIR: join(empty.path, 'data') })
      expect(none.exitCode).toBe(1)
      expect(none.stderr).toContain('no database at')
      expect(existsSync(join(empty.path, 'out.tar.gz'))).toBe(false)

      writeFileSync(join(busy.path, 'service.db'), 'in use')
      const archive = join(empty.path, 'some.tar.gz')
      await tar.create({ gzip: true, file: archive, cwd: await manifestDir(empty.path) }, ['backup.json'])
      const refused = await admin(['restore', archive], { DATA_DIR: busy.path })
      expect(refused.exitCode).toBe(1)
      expect(refused.stderr).toContain('is not empty')
      expect(readdirSync(busy.path)).toEqual(['service.db'])

      const missing = await admin(['restore', join(empty.path, 'nothing.tar.gz')], { DATA_DIR: join(empty.path, 'fresh') })
      expect(missing.exitCode).toBe(1)
      expect(missing.stderr).toContain('no file')
      const usage = await admin(['backup'], { DATA_DIR: empty.path })
      expect(usage.exitCode).toBe(2)
      // PostgreSQL that does not answer: named, as at start-up, and nothing written.
      const unreachable = `postgres://ops:secret@127.0.0.1:${closedPort()}/service`
      const pgArchive = join(empty.path, 'from-postgres.tar.gz')
      await rawArchive(pgArchive, [
        {
          path: 'backup.json',
          body: JSON.stringify({
            format: 1,
            createdAt: '2026-01-01T00:00:00.000Z',
            release: '0.2.0',
            database: 'postgres',
            schemaVersion: 1,
            codeIndex: [],
            files: 0,
            bytes: 0,
          }),
        },
      ])
      for (const [command, file] of [
        ['backup', join(empty.path, 'pg.tar.gz')],
        ['restore', pgArchive],
      ] as const) {
        const refused = await admin([command, file], { DATA_DIR: join(empty.path, 'pg-data'), DATABASE_URL: unreachable })
        expect(refused.exitCode).toBe(78)
        expect(refused.stderr).toContain('DATABASE_URL: cannot use PostgreSQL at 127.0.0.1:')
        expect(refused.stderr).not.toContain('secret')
      }
      expect(existsSync(join(empty.path, 'pg.tar.gz'))).toBe(false)
      expect(existsSync(join(empty.path, 'pg-data'))).toBe(false)
    } finally {
      empty.remove()
      busy.remove()
    }
  }, 120_000)
})

/** A folder holding a manifest a restore accepts. */
async function manifestDir(under: string, manifest: Record<string, unknown> = {}): Promise<string> {
  const dir = join(under, `manifest-${crypto.randomUUID().slice(0, 6)}`)
  mkdirSync(dir)
  writeFileSync(
    join(dir, 'backup.json'),
    JSON.stringify({
      format: 1,
      createdAt: new Date().toISOString(),
      release: '0.0.0',
      database: 'sqlite',
      schemaVersion: 1,
      codeIndex: [],
      files: 0,
      bytes: 0,
      ...manifest,
    }),
  )
  return dir
}

/** A gzipped tar of `entries` written block by block, so a hostile path or type goes in as given. */
async function rawArchive(file: string, entries: { path: string; type?: 'File' | 'SymbolicLink' | 'Link'; body?: string; linkpath?: string }[]) {
  const blocks: Uint8Array[] = []
  for (const entry of entries) {
    const body = new TextEncoder().encode(entry.body ?? '')
    const type = entry.type ?? 'File'
    const header = new tar.Header({ path: entry.path, type, size: type === 'File' ? body.length : 0, mode: 0o644, mtime: new Date(), linkpath: entry.linkpath })
    const block = Buffer.alloc(512)
    header.encode(block, 0)
    blocks.push(block)
    if (type === 'File' && body.length > 0) {
      const padded = new Uint8Array(Math.ceil(body.length / 512) * 512)
      padded.set(body)
      blocks.push(padded)
    }
  }
  blocks.push(new Uint8Array(1024))
  await Bun.write(file, Bun.gzipSync(Buffer.concat(blocks)))
}

describe('a restore refuses an archive that is not a backup it wrote, and writes nothing', () => {
  const manifest = JSON.stringify({
    format: 1,
    createdAt: '2026-01-01T00:00:00.000Z',
    release: '0.1.0',
    database: 'sqlite',
    schemaVersion: 1,
    codeIndex: [],
    files: 0,
    bytes: 0,
  })
  const afterManifest = (entry: Parameters<typeof rawArchive>[1][number]) => [{ path: 'backup.json', body: manifest }, entry]
  const cases: { name: string; entries: Parameters<typeof rawArchive>[1]; message: string }[] = [
    {
      name: 'a path climbing out',
      entries: afterManifest({ path: '../escaped.txt', body: 'x' }),
      message: 'not a path a backup holds',
    },
    {
      name: 'an absolute path',
      entries: afterManifest({ path: '/tmp/absolute.txt', body: 'x' }),
      message: 'not a path a backup holds',
    },
    {
      name: 'a symbolic link where a snapshot goes',
      entries: afterManifest({ path: 'code-index/org/1-abc.snapshot', type: 'SymbolicLink', linkpath: '/etc/passwd' }),
      message: 'not a regular file',
    },
    {
      name: 'a hard link to a file outside',
      entries: afterManifest({ path: 'secrets.json', type: 'Link', linkpath: '/etc/passwd' }),
      message: 'not a regular file',
    },
    {
      name: 'a file a backup never holds',
      entries: afterManifest({ path: 'imports/org/repo/tree/.bashrc', body: 'x' }),
      message: 'not a path a backup holds',
    },
    { name: 'no manifest', entries: [{ path: 'service.db', body: 'x' }], message: 'holds no backup.json' },
    {
      name: 'a schema newer than this release',
      entries: [{ path: 'backup.json', body: manifest.replace('"schemaVersion":1', '"schemaVersion":9999') }],
      message: 'newer than this release knows',
    },
  ]
  for (const c of cases)
    test(c.name, async () => {
      const dir = tempDir('hostile-archive-')
      try {
        const file = join(dir.path, 'hostile.tar.gz')
        await rawArchive(file, c.entries)
        const dataDir = join(dir.path, 'data')
        await expect(restoreBackup({ dataDir, file })).rejects.toThrow(c.message)
        expect(existsSync(dataDir)).toBe(false)
        expect(existsSync(join(dir.path, 'escaped.txt'))).toBe(false)
      } finally {
        dir.remove()
      }
    })

  test('a backup of the embedded database is refused while DATABASE_URL is set', async () => {
    const dir = tempDir('hostile-archive-')
    try {
      const file = join(dir.path, 'embedded.tar.gz')
      await rawArchive(file, [{ path: 'backup.json', body: manifest }])
      await expect(restoreBackup({ dataDir: join(dir.path, 'data'), databaseUrl: 'postgres://nobody@127.0.0.1:1/none', file })).rejects.toThrow(
        'unset DATABASE_URL',
      )
    } finally {
      dir.remove()
    }
  })

  test('a symbolic link in DATA_DIR is not followed into the backup', async () => {
    const dir = tempDir('backup-links-')
    try {
      const dataDir = join(dir.path, 'data')
      mkdirSync(join(dataDir, 'imports', 'org', 'repo', 'git'), { recursive: true })
      writeFileSync(join(dataDir, 'imports', 'org', 'repo', 'git', 'HEAD'), 'ref: refs/heads/main\n')
      symlinkSync('/etc/passwd', join(dataDir, 'imports', 'org', 'repo', 'git', 'config'))
      const db = new SQL({ adapter: 'sqlite', filename: join(dataDir, 'service.db') })
      await db`CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)`
      await db`CREATE TABLE code_index_versions (org_id TEXT PRIMARY KEY, version BIGINT NOT NULL, snapshot TEXT NOT NULL, updated_at BIGINT NOT NULL)`
      await db`INSERT INTO schema_migrations VALUES (1, 'accounts', 0)`
      await db.close()
      const file = join(dir.path, 'out.tar.gz')
      const written = await admin(['backup', file], { DATA_DIR: dataDir })
      expect(written.exitCode).toBe(0)
      const paths: string[] = []
      await tar.list({ file, onReadEntry: (entry) => paths.push(entry.path) })
      expect(paths).toContain('imports/org/repo/git/HEAD')
      expect(paths.some((p) => p.endsWith('/config'))).toBe(false)
    } finally {
      dir.remove()
    }
  }, 120_000)
})

describe.skipIf(!postgresUrl)('admin backup and restore with PostgreSQL (pg_dump and pg_restore beside it)', () => {
  test('pg_dump, then admin backup, under write load; pg_restore, then admin restore: users, chats, audit entries and the index come back', async () => {
    const sourceDb = (await freshPostgres())!
    const targetDb = (await freshPostgres())!
    const source = tempDir('pg-backup-source-')
    const target = tempDir('pg-backup-target-')
    const archives = tempDir('pg-backup-archives-')
    const env = { ...world.env, DATA_DIR: source.path, DATABASE_URL: sourceDb.url }
    let service: RunningService | undefined = await startService(fromSource([]), env)
    try {
      const token = await signIn(service, ADMIN.email, ADMIN.password)
      await importRepository(service, token)
      await snapshotWritten(source.path)
      const firstChat = await chat(service, token, 'first question')
      await webhook(service)

      const load = writeLoad(service, token)
      await Bun.sleep(300)
      const before = load.mark()
      const dumpFile = join(archives.path, 'service.dump')
      const dumped = Bun.spawnSync(['pg_dump', '--format=custom', '--file', dumpFile, sourceDb.url], { stderr: 'pipe' })
      expect(dumped.stderr.toString()).toBe('')
      expect(dumped.exitCode).toBe(0)
      const file = join(archives.path, 'data.tar.gz')
      const backedUp = await admin(['backup', file], env)
      expect(backedUp.exitCode).toBe(0)
      expect(backedUp.stdout).toContain('pg_dump')
      await load.stop()
      await service.stop()
      service = undefined

      const restoredDb = Bun.spawnSync(['pg_restore', '--no-owner', '--dbname', targetDb.url, dumpFile], { stderr: 'pipe' })
      expect(restoredDb.stderr.toString()).toBe('')
      expect(restoredDb.exitCode).toBe(0)
      const restoredEnv = { ...world.env, DATA_DIR: target.path, DATABASE_URL: targetDb.url }
      const restored = await admin(['restore', file], restoredEnv)
      expect(restored.stderr).toBe('')
      expect(restored.exitCode).toBe(0)
      const verified = await admin(['audit', 'verify'], restoredEnv)
      expect(verified.exitCode).toBe(0)
      expect(Number(/intact: (\d+) entries/.exec(verified.stdout)?.[1])).toBeGreaterThanOrEqual(before.webhooks + 1)

      service = await startService(fromSource([]), restoredEnv)
      await expectRestored(service, before, [firstChat])
    } finally {
      await service?.stop()
      await sourceDb.drop()
      await targetDb.drop()
      source.remove()
      target.remove()
      archives.remove()
    }
  }, 120_000)
})

if (!postgresUrl) announceSkip('admin backup and restore with PostgreSQL', 'DATABASE_URL')
