import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { openDatabase, type Database } from '../src/storage/database.ts'
import { migrate, splitStatements, type Migration } from '../src/storage/migrate.ts'
import { migrations } from '../src/storage/migrations/index.ts'
import { forEachBackend, freshPostgres, postgresUrl, type BackendDatabase } from './helpers.ts'

test('statements split at semicolons that end a line, comments dropped', () => {
  expect(splitStatements("-- a table\nCREATE TABLE a (x TEXT);\n\nCREATE TABLE b (y TEXT DEFAULT 'a;b')\n")).toEqual([
    'CREATE TABLE a (x TEXT)',
    "CREATE TABLE b (y TEXT DEFAULT 'a;b')",
  ])
})

forEachBackend((backend) => {
  describe(`storage on ${backend.name}`, () => {
    let store: BackendDatabase
    let db: Database
    beforeAll(async () => {
      store = await backend.open({ migrate: false })
      db = store.db
    })
    afterAll(() => store.close())

    test('uses the expected dialect', () => {
      expect(db.dialect).toBe(backend.name)
    })

    test('applies every migration once, and a second run applies nothing', async () => {
      const first = await migrate(db, migrations)
      expect(first).toEqual(migrations.map((m) => m.version))
      expect(await migrate(db, migrations)).toEqual([])
      const rows = await db.sql`SELECT version FROM schema_migrations ORDER BY version`
      expect(rows.map((r: { version: unknown }) => Number(r.version))).toEqual(first)
    })

    test('a failing migration rolls back entirely and is not recorded', async () => {
      const broken: Migration = {
        version: 900,
        name: 'broken',
        sql: 'CREATE TABLE half_done (id TEXT PRIMARY KEY);\nINSERT INTO no_such_table VALUES (1)',
      }
      await expect(migrate(db, [...migrations, broken])).rejects.toThrow()
      const recorded = await db.sql`SELECT version FROM schema_migrations WHERE version = 900`
      expect(recorded).toHaveLength(0)
      // The table created before the failure must not exist.
      await expect(db.sql`SELECT * FROM half_done`).rejects.toThrow()
    })

    test('concurrent migrations of a new version apply it exactly once', async () => {
      const next: Migration = { version: 901, name: 'concurrent', sql: 'CREATE TABLE concurrent_probe (id TEXT PRIMARY KEY)' }
      const results = await Promise.all([migrate(db, [next]), migrate(db, [next])])
      expect(results.flat()).toEqual([901])
    })

    test('WAL journal on SQLite files', async () => {
      if (db.dialect !== 'sqlite') return
      const [row] = await db.sql`PRAGMA journal_mode`
      expect(String(Object.values(row)[0])).toBe('wal')
    })

    test('ping answers', async () => {
      await db.ping()
    })
  })
})

describe.skipIf(!postgresUrl)('PostgreSQL: several processes starting on an empty database', () => {
  test('migrate from nothing at once, each on its own connections: every migration applied exactly once', async () => {
    const pg = (await freshPostgres())!
    const databases = await Promise.all(Array.from({ length: 4 }, () => openDatabase({ databaseUrl: pg.url, maxConnections: 2 })))
    try {
      const applied = await Promise.all(databases.map((db) => migrate(db, migrations)))
      expect(applied.flat().sort((a, b) => a - b)).toEqual(migrations.map((m) => m.version).sort((a, b) => a - b))
    } finally {
      await Promise.all(databases.map((db) => db.close()))
      await pg.drop()
    }
  })
})
