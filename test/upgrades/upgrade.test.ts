/**
 * Upgrades keep every row. The data of the previous release (test/fixtures/upgrade/<release>/, written by that
 * release's own code through its API: see write-fixture.ts) is opened with today's code on SQLite and on
 * PostgreSQL: every migration since applies, every row of every table it had is still there with the same
 * values, and the service started on it signs its users in, lists their chats, searches their import and
 * verifies the audit chain. Each migration is also applied alone from the state before it, a migration that
 * fails leaves the database as it was and names itself, and a database from a newer release is refused.
 */
import { afterAll, describe, expect, test } from 'bun:test'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { SQL } from 'bun'
import * as tar from 'tar'
import { migrate, MigrationError, type Migration } from '../../src/storage/migrate.ts'
import { migrations } from '../../src/storage/migrations/index.ts'
import { openDatabase, type Database } from '../../src/storage/database.ts'
import { announceSkip, freshPostgres, postgresUrl, tempDir } from '../helpers.ts'
import { integrationEnv, startProvider } from '../integrations/support.ts'
import { fromSource, runToEnd, startService, type RunningService } from '../operators/processes.ts'
import { FIXTURE_FACTS } from './write-fixture.ts'

const PREVIOUS = '0.1.0'
const FIXTURE = join(import.meta.dir, '..', 'fixtures', 'upgrade', PREVIOUS)
const recorded = JSON.parse(readFileSync(join(FIXTURE, 'release.json'), 'utf8')) as { release: string; rows: Record<string, Record<string, number>> }

// Tables a running release legitimately leaves empty: a setup code is deleted once the first owner exists.
const EMPTY_BY_DESIGN = new Set(['setup_codes'])

const oauth = startProvider()
afterAll(() => oauth.close())

type Rows = Record<string, Record<string, unknown>[]>

async function tablesOf(db: Database): Promise<string[]> {
  const rows =
    db.dialect === 'sqlite'
      ? await db.sql`SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name`
      : await db.sql`SELECT table_name AS name FROM information_schema.tables WHERE table_schema = 'public' ORDER BY table_name`
  return rows.map((r: { name: string }) => r.name)
}

/** Every row of every table, in a stable order, with values as text so both dialects compare alike. */
async function everyRow(db: Database, tables?: string[]): Promise<Rows> {
  const out: Rows = {}
  for (const table of tables ?? (await tablesOf(db))) {
    const rows = (await db.sql.unsafe(`SELECT * FROM ${table}`)) as Record<string, unknown>[]
    out[table] = rows
      .map((row) => Object.fromEntries(Object.entries(row).map(([k, v]) => [k, v === null ? null : String(v)])))
      .sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)))
  }
  return out
}

/** `after`'s rows cut down to the columns `before` had: a migration may add columns, never change or drop rows. */
function asBefore(before: Rows, after: Rows): Rows {
  const out: Rows = {}
  for (const [table, rows] of Object.entries(before)) {
    const columns = rows[0] ? Object.keys(rows[0]) : []
    out[table] = (after[table] ?? [])
      .map((row) => Object.fromEntries(columns.map((c) => [c, row[c]])))
      .sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)))
  }
  return out
}

const json = (body: unknown, token?: string): RequestInit => ({
  method: 'POST',
  headers: { 'content-type': 'application/json', ...(token && { authorization: `Bearer ${token}` }) },
  body: JSON.stringify(body),
})

async function signIn(service: RunningService, who: { email: string; password: string }) {
  const res = await fetch(`${service.url}/auth/login`, json({ email: who.email, password: who.password }))
  expect(res.status).toBe(200)
  return (await res.json()) as { accessToken: string; user: { organizationId: string } }
}

const variants = [{ name: 'SQLite', dialect: 'sqlite' as const }, ...(postgresUrl ? [{ name: 'PostgreSQL', dialect: 'postgres' as const }] : [])]
if (!postgresUrl) announceSkip('upgrade from the previous release on PostgreSQL', 'DATABASE_URL')

describe(`the data of release ${PREVIOUS} opened by today's code`, () => {
  test('the fixture holds rows of every kind its release stores', () => {
    expect(recorded.release).toBe(PREVIOUS)
    for (const [dialect, counts] of Object.entries(recorded.rows)) {
      const empty = Object.entries(counts).filter(([table, n]) => n === 0 && !EMPTY_BY_DESIGN.has(table))
      expect({ dialect, empty }).toEqual({ dialect, empty: [] })
    }
  })

  for (const variant of variants)
    test(`${variant.name}: every migration since applies, every row survives unchanged, and the service serves it`, async () => {
      const dir = tempDir('upgrade-')
      const pg = variant.dialect === 'postgres' ? await freshPostgres() : undefined
      let service: RunningService | undefined
      try {
        await tar.extract({ file: join(FIXTURE, `${variant.dialect}-data.tar.gz`), cwd: dir.path })
        if (pg) {
          const loaded = Bun.spawnSync(['psql', '--quiet', '--no-psqlrc', '-v', 'ON_ERROR_STOP=1', '--file', join(FIXTURE, 'postgres.sql'), pg.url], {
            stderr: 'pipe',
          })
          expect(loaded.stderr.toString()).toBe('')
          expect(loaded.exitCode).toBe(0)
        }
        const db = await openDatabase({ databaseUrl: pg?.url, dataDir: dir.path })
        let before: Rows
        let after: Rows
        try {
          before = await everyRow(db)
          const counts = Object.fromEntries(Object.entries(before).map(([table, rows]) => [table, rows.length]))
          expect(counts).toEqual(recorded.rows[variant.dialect]!)
          // One at a time, each from the state the one before left, every row compared at every step.
          const at = Math.max(...before.schema_migrations!.map((r) => Number(r.version)))
          let previous = before
          for (const next of migrations.filter((m) => m.version > at).sort((a, b) => a.version - b.version)) {
            expect(
              await migrate(
                db,
                migrations.filter((m) => m.version <= next.version),
              ),
            ).toEqual([next.version])
            const now = await everyRow(db)
            const { schema_migrations: _p, ...previousData } = previous
            expect(asBefore(previousData, now)).toEqual(previousData)
            previous = now
          }
          expect(await migrate(db, migrations)).toEqual([])
          after = await everyRow(db)
        } finally {
          await db.close()
        }
        const { schema_migrations: beforeVersions, ...beforeData } = before
        const { schema_migrations: afterVersions, ...afterData } = after
        expect(asBefore(beforeData, afterData)).toEqual(beforeData)
        expect(afterVersions!.map((r) => Number(r.version)).sort((a, b) => a - b)).toEqual(migrations.map((m) => m.version))
        expect(beforeVersions!.length).toBeGreaterThan(0)

        const env = { DATA_DIR: dir.path, ...(pg && { DATABASE_URL: pg.url }), ...integrationEnv(oauth) }
        const verified = await runToEnd(fromSource(['audit', 'verify'], 'src/main/cli.ts'), env)
        expect(verified.stdout).toContain(`audit log intact: ${recorded.rows[variant.dialect]!.audit_log} entries`)
        expect(verified.exitCode).toBe(0)

        service = await startService(fromSource([]), env)
        const get = async (path: string, token: string) => {
          const res = await fetch(`${service!.url}${path}`, { headers: { authorization: `Bearer ${token}` } })
          expect(res.status).toBe(200)
          return (await res.json()) as Record<string, unknown>
        }
        const owner = await signIn(service, FIXTURE_FACTS.owner)
        await signIn(service, FIXTURE_FACTS.member)
        await signIn(service, FIXTURE_FACTS.registered)
        // The subscription paid for in the old release still sets the plan.
        expect((await get('/auth/me', owner.accessToken)).plan).toBe(FIXTURE_FACTS.plan)
        const { chats } = (await get('/api/chats', owner.accessToken)) as { chats: { id: string }[] }
        expect(chats).toHaveLength(1)
        const chat = (await get(`/api/chat/${chats[0]!.id}`, owner.accessToken)) as { messages: { role: string; parts: { type: string; text?: string }[] }[] }
        expect(chat.messages.map((m) => m.role)).toEqual(['user', 'assistant'])
        expect(JSON.stringify(chat.messages[1]!.parts)).toContain(FIXTURE_FACTS.answer)
        const search = await fetch(`${service.url}/api/search`, json({ query: FIXTURE_FACTS.searchTerm, mode: 'text' }, owner.accessToken))
        expect(search.status).toBe(200)
        expect(((await search.json()) as { results: { path: string }[] }).results.map((r) => r.path)).toContain(FIXTURE_FACTS.searchHit)
        // The stored integration still belongs to its user, its account readable with the restored secrets.
        const { providers } = (await get('/api/integrations', owner.accessToken)) as { providers: { provider: string; account: unknown }[] }
        expect(providers.find((p) => p.provider === 'github')?.account).not.toBeNull()
      } finally {
        await service?.stop()
        await pg?.drop()
        dir.remove()
      }
    }, 120_000)
})

/** A database of `dialect`, fresh, with a close that removes it. */
async function freshDatabase(dialect: 'sqlite' | 'postgres'): Promise<{ db: Database; close(): Promise<void>; dataDir: string; url?: string }> {
  const dir = tempDir('migration-')
  const pg = dialect === 'postgres' ? await freshPostgres() : undefined
  const db = await openDatabase({ databaseUrl: pg?.url, dataDir: dir.path })
  return {
    db,
    dataDir: dir.path,
    url: pg?.url,
    async close() {
      await db.close()
      await pg?.drop()
      dir.remove()
    },
  }
}

for (const variant of variants)
  describe(`each migration, from the state before it (${variant.name})`, () => {
    test('applied one at a time, each applies alone, records itself, and leaves the rows of the tables before it as they were', async () => {
      const { db, close } = await freshDatabase(variant.dialect)
      try {
        for (const migration of [...migrations].sort((a, b) => a.version - b.version)) {
          const before = await everyRow(db)
          const applied = await migrate(
            db,
            migrations.filter((m) => m.version <= migration.version),
          )
          expect(applied).toEqual([migration.version])
          const after = await everyRow(db)
          const { schema_migrations: _b, ...beforeData } = before
          const { schema_migrations: _a, ...afterData } = after
          expect(asBefore(beforeData, afterData)).toEqual(beforeData)
          // Idempotent: a second start finds nothing to do.
          expect(
            await migrate(
              db,
              migrations.filter((m) => m.version <= migration.version),
            ),
          ).toEqual([])
        }
      } finally {
        await close()
      }
    })

    test('a migration that fails at its third statement is rolled back whole and names itself and the statement', async () => {
      const { db, close } = await freshDatabase(variant.dialect)
      try {
        await migrate(db, migrations)
        const before = await everyRow(db)
        const broken: Migration = {
          version: 900,
          name: 'broken_on_purpose',
          sql: 'CREATE TABLE half_done (id INTEGER);\nINSERT INTO half_done VALUES (1);\nINSERT INTO no_such_table VALUES (1);\n',
        }
        const failure = await migrate(db, [...migrations, broken]).catch((e: unknown) => e)
        expect(failure).toBeInstanceOf(MigrationError)
        expect((failure as Error).message).toContain('database migration 900_broken_on_purpose failed at statement 3 of 3')
        expect((failure as Error).message).toContain(`the database is as migration ${Math.max(...migrations.map((m) => m.version))} left it`)
        expect(await everyRow(db)).toEqual(before)
        expect(await tablesOf(db)).not.toContain('half_done')
      } finally {
        await close()
      }
    })
  })

describe('the service names a migration that fails, and refuses a database from a newer release', () => {
  test('a start whose migration fails exits 78 naming the step, and leaves the database at the version before it', async () => {
    const { db, close, dataDir } = await freshDatabase('sqlite')
    try {
      const last = [...migrations].sort((a, b) => a.version - b.version).at(-1)!
      await migrate(
        db,
        migrations.filter((m) => m.version < last.version),
      )
      // Something in the way of the last migration's first statement: a table an operator made by hand.
      const firstCreated = /CREATE TABLE (\w+)/i.exec(last.sql)?.[1] ?? /ALTER TABLE (\w+)/i.exec(last.sql)?.[1]
      expect(firstCreated).toBeString()
      if (/CREATE TABLE/i.test(last.sql)) await db.sql.unsafe(`CREATE TABLE ${firstCreated} (in_the_way INTEGER)`)
      else await db.sql.unsafe(`DROP TABLE ${firstCreated}`)
      await db.close()
      const started = await runToEnd(fromSource([]), { DATA_DIR: dataDir, PORT: '0', HOST: '127.0.0.1' })
      expect(started.exitCode).toBe(78)
      expect(started.stderr + started.stdout).toContain(`database migration ${String(last.version).padStart(3, '0')}_${last.name} failed at statement`)
      const reopened = new SQL({ adapter: 'sqlite', filename: join(dataDir, 'service.db') })
      try {
        const versions = (await reopened`SELECT version FROM schema_migrations`).map((r: { version: number }) => Number(r.version))
        expect(Math.max(...versions)).toBe(last.version - 1)
      } finally {
        await reopened.close()
      }
    } finally {
      await close()
    }
  }, 120_000)

  test('a database a newer release migrated is refused at start with exit 78 and what to do', async () => {
    const { db, close, dataDir } = await freshDatabase('sqlite')
    try {
      await migrate(db, migrations)
      await db.sql`INSERT INTO schema_migrations (version, name, applied_at) VALUES (9999, 'from_the_future', 0)`
      await db.close()
      const started = await runToEnd(fromSource([]), { DATA_DIR: dataDir, PORT: '0', HOST: '127.0.0.1' })
      expect(started.exitCode).toBe(78)
      expect(started.stderr + started.stdout).toContain('the database was upgraded by a newer release')
    } finally {
      await close()
    }
  }, 120_000)
})
