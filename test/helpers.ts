import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createApp, type App } from '../src/main/app.ts'
import { loadConfig, type Config } from '../src/main/config.ts'
import { buildDependencies, type Dependencies } from '../src/main/dependencies.ts'
import { memoryLogger } from '../src/log.ts'
import pkg from '../package.json' with { type: 'json' }

export const BASE = 'http://localhost'

/**
 * Unmounts whatever is mounted under `path`: the workspace images a service process mounts there stay mounted when
 * it is killed with SIGKILL.
 */
export function unmountUnder(path: string): void {
  const points = readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .map((line) => line.split(' ')[4]?.replace(/\\([0-7]{3})/g, (_, octal: string) => String.fromCharCode(Number.parseInt(octal, 8))))
    .filter((point): point is string => point?.startsWith(`${path}/`) === true)
  for (const point of points.sort((a, b) => b.length - a.length)) Bun.spawnSync(['umount', '-l', point])
}

/** A fresh data directory under the system temp dir, removed (with anything mounted in it) by the returned function. */
export function tempDir(prefix = 'svc-test-'): { path: string; remove(): void } {
  const path = mkdtempSync(join(tmpdir(), prefix))
  return {
    path,
    remove: () => {
      unmountUnder(path)
      rmSync(path, { recursive: true, force: true })
    },
  }
}

export interface TestApp {
  app: App
  deps: Dependencies
  config: Config
  logs: Record<string, unknown>[]
  /** `app.handle` with a path relative to the service. */
  request(path: string, init?: RequestInit): Promise<Response>
  /** POST/PUT... a JSON body. */
  send(method: string, path: string, body: unknown, headers?: Record<string, string>): Promise<Response>
  close(): Promise<void>
}

/**
 * The cheapest password hashing the service allows (argon2id over 19 MiB instead of 64 MiB): suites sign in
 * hundreds of times, and each default hash costs a fifth of a second of CPU on a loaded machine.
 */
export const CHEAP_PASSWORD_HASHING = { PASSWORD_HASH_MEMORY_KIB: '19456' }

/** Builds the service in-process on a throwaway SQLite database (or `env` overrides). */
export async function makeApp(env: Record<string, string> = {}): Promise<TestApp> {
  const dir = tempDir()
  const config = loadConfig({ DATA_DIR: dir.path, ...CHEAP_PASSWORD_HASHING, ...env })
  const logger = memoryLogger('info')
  const deps = await buildDependencies(config, { logger, sqliteFile: env.DATABASE_URL ? undefined : ':memory:' })
  const app = createApp(deps)
  const request = (path: string, init?: RequestInit) => app.handle(new Request(BASE + path, init))
  return {
    app,
    deps,
    config,
    logs: logger.lines,
    request,
    send: (method, path, body, headers = {}) =>
      request(path, { method, headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) }),
    async close() {
      await deps.close()
      dir.remove()
    },
  }
}

/** Builds the single executable at `outfile` exactly as `npm run build` does (its script, another --outfile). */
export function buildExecutable(outfile: string) {
  const args = pkg.scripts.build.split(/\s+/)
  const at = args.indexOf('--outfile')
  if (args[0] !== 'bun' || at < 0) throw new Error(`the build script is not "bun build ... --outfile <file>": ${pkg.scripts.build}`)
  args.splice(at + 1, 1, outfile)
  return Bun.spawnSync([process.execPath, ...args.slice(1)], { cwd: join(import.meta.dir, '..') })
}

/** PostgreSQL and Redis suites run only where the service is configured for them. */
export const postgresUrl = process.env.DATABASE_URL
export const redisUrl = process.env.REDIS_URL

export function announceSkip(what: string, variable: string) {
  console.warn(`[skip] ${what}: ${variable} is not set`)
}

/**
 * A throwaway PostgreSQL database on the server named by DATABASE_URL, so suites never
 * share tables. Returns undefined when DATABASE_URL is not set.
 */
export async function freshPostgres(): Promise<{ url: string; drop(): Promise<void> } | undefined> {
  if (!postgresUrl) return undefined
  const { SQL } = await import('bun')
  const admin = new SQL(postgresUrl, { max: 1 })
  const name = `svc_test_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 8)}`
  await admin.unsafe(`CREATE DATABASE ${name}`)
  const url = new URL(postgresUrl)
  url.pathname = `/${name}`
  return {
    url: url.toString(),
    async drop() {
      await admin.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
      await admin.close()
    },
  }
}

export interface BackendDatabase {
  db: import('../src/storage/database.ts').Database
  close(): Promise<void>
}

/**
 * Runs `body` once per storage backend available: SQLite always, PostgreSQL when configured.
 * `open` gives a fresh database (migrated unless told otherwise) and a `close` that removes it.
 */
export function forEachBackend(body: (backend: { name: 'sqlite' | 'postgres'; open(options?: { migrate?: boolean }): Promise<BackendDatabase> }) => void) {
  const { openDatabase } = require('../src/storage/database.ts') as typeof import('../src/storage/database.ts')
  const { migrate } = require('../src/storage/migrate.ts') as typeof import('../src/storage/migrate.ts')
  const { migrations } = require('../src/storage/migrations/index.ts') as typeof import('../src/storage/migrations/index.ts')
  const opener =
    (name: 'sqlite' | 'postgres') =>
    async (options: { migrate?: boolean } = {}): Promise<BackendDatabase> => {
      const dir = tempDir()
      const pg = name === 'postgres' ? await freshPostgres() : undefined
      const db = await openDatabase({ databaseUrl: pg?.url, dataDir: dir.path })
      if (options.migrate !== false) await migrate(db, migrations)
      return {
        db,
        async close() {
          await db.close()
          await pg?.drop()
          dir.remove()
        },
      }
    }
  body({ name: 'sqlite', open: opener('sqlite') })
  if (postgresUrl) body({ name: 'postgres', open: opener('postgres') })
  else announceSkip('PostgreSQL variants of the storage suites', 'DATABASE_URL')
}

/** Budgets so high that a test sending thousands of requests reaches validation and handlers, not only 429s. */
export const UNLIMITED_BUDGETS = {
  RATE_LIMIT_BURST: '1000000',
  RATE_LIMIT_CHAT_PER_MINUTE: '1000000',
  RATE_LIMIT_INTEGRATIONS_PER_MINUTE: '1000000',
  RATE_LIMIT_SEARCH_PER_MINUTE: '1000000',
  RATE_LIMIT_ASSISTANT_PER_MINUTE: '1000000',
  LOGIN_MAX_FAILURES: '1000',
}

export const ADMIN = { email: 'owner@example.com', password: 'owner-password-1234' }

/** Signs in and answers the token pair. */
export async function login(t: TestApp, email: string, password: string) {
  const res = await t.send('POST', '/auth/login', { email, password })
  if (res.status !== 200) throw new Error(`login failed: ${res.status} ${await res.text()}`)
  return (await res.json()) as { accessToken: string; refreshToken: string; user: { id: string; organizationId: string } }
}

export const bearer = (token: string) => ({ authorization: `Bearer ${token}` })

/** Creates a user with `role` (in the admin's organisation unless `orgId` says otherwise) and signs in. */
export async function userWithRole(t: TestApp, role: import('../src/auth/roles.ts').Role, options: { orgId?: string; plan?: string } = {}) {
  const email = `${role}-${crypto.randomUUID().slice(0, 8)}@example.com`
  const password = 'a-long-enough-password'
  const user = await t.deps.access.createAccount({ email, password, role, orgId: options.orgId, plan: options.plan })
  const pair = await login(t, email, password)
  return { user, token: pair.accessToken, refreshToken: pair.refreshToken }
}
