/**
 * `admin backup FILE` and `admin restore FILE`: one gzipped tar holding what DATA_DIR keeps that cannot be rebuilt.
 *
 * - `service.db`: the embedded database, copied by SQLite's `VACUUM INTO` inside one read transaction, so it is
 *   consistent while the service writes (absent with DATABASE_URL: PostgreSQL is saved with `pg_dump`);
 * - `secrets.json`: the generated JWT secret and token encryption key, without which sessions and stored
 *   integration tokens are unreadable;
 * - `code-index/<org>/<file>`: each organisation's code-search snapshot, the one the database names;
 * - `imports/<org>/<repository>/git/`: the object stores of imported repositories (checked-out trees are rebuilt);
 * - `backup.json`: what the archive holds and which release and schema wrote it.
 *
 * Files are hard-linked into a staging folder inside DATA_DIR before they are archived, so a snapshot pruned or a
 * pack replaced while the archive is written stays whole. Git references are linked before objects: objects
 * are written before the references that name them, so the objects kept are a superset of what the references need.
 *
 * Restoring writes only regular files at the paths above, into an empty DATA_DIR: an archive holding a link, a
 * device, an absolute path or a `..` is refused before anything is written.
 */
import { chmod, link, lstat, mkdir, readdir, rename, rm, writeFile } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import { SQL } from 'bun'
import * as tar from 'tar'
import { migrations } from '../storage/migrations/index.ts'
import { openDatabase, toNumber, type Database } from '../storage/database.ts'
import { reach } from '../reachability.ts'
import pkg from '../../package.json' with { type: 'json' }

export const BACKUP_FORMAT = 1

export interface BackupManifest {
  format: number
  createdAt: string
  /** The release that wrote it. */
  release: string
  database: 'sqlite' | 'postgres'
  /** The highest migration applied to the database when it was saved. */
  schemaVersion: number
  /** Each organisation's code-search snapshot, as `code_index_versions` names it. */
  codeIndex: { orgId: string; version: number; file: string }[]
  files: number
  bytes: number
}

export interface RestoreSummary {
  manifest: BackupManifest
  files: number
}

/** A backup or restore refused, with what to do instead; nothing was written. */
export class BackupError extends Error {}

const SECRETS = 'secrets.json'
const DATABASE = 'service.db'
const MANIFEST = 'backup.json'
// How a snapshot file is named inside code-index/<org>/ (see plugins/code-search/index/persistence.ts).
const SNAPSHOT_NAME = /^\d+-[A-Za-z0-9-]+\.snapshot$/
const SEGMENT = /^[A-Za-z0-9_.-]{1,200}$/
// What a restore may write; nothing else in an archive is accepted.
const ALLOWED_ENTRY = /^(backup\.json|service\.db|secrets\.json|code-index\/[^/]+\/[^/]+|imports\/[^/]+\/[^/]+\/git(\/[^/]+)*)$/

const knownSchema = () => Math.max(...migrations.map((m) => m.version))
const exists = (path: string) =>
  lstat(path).then(
    () => true,
    () => false,
  )

/** Where each organisation's code-index folder is (the folder name is the org id, or its hash when unsafe). */
async function snapshotFolders(dataDir: string): Promise<string[]> {
  try {
    return (await readdir(join(dataDir, 'code-index'), { withFileTypes: true })).filter((e) => e.isDirectory()).map((e) => e.name)
  } catch {
    return []
  }
}

/** Hard-links every regular file under `from` into `to`, the same relative paths; links and devices are skipped. */
async function linkTree(from: string, to: string, order: (names: string[]) => string[] = (n) => n): Promise<{ files: number; bytes: number }> {
  let files = 0
  let bytes = 0
  let entries: import('node:fs').Dirent[]
  try {
    entries = await readdir(from, { withFileTypes: true })
  } catch {
    return { files, bytes }
  }
  const byName = new Map(entries.map((e) => [e.name, e]))
  for (const name of order([...byName.keys()])) {
    const entry = byName.get(name)!
    const source = join(from, name)
    if (entry.isDirectory()) {
      const inner = await linkTree(source, join(to, name))
      files += inner.files
      bytes += inner.bytes
    } else if (entry.isFile()) {
      await mkdir(to, { recursive: true })
      try {
        await link(source, join(to, name))
        files++
        bytes += (await lstat(source)).size
      } catch (error) {
        // Removed between the listing and the link: a temporary file, or a pack replaced by a newer one.
        if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error
      }
    }
  }
  return { files, bytes }
}

/** Git's references first, then its objects (see the module comment). */
const refsBeforeObjects = (names: string[]) => [...names.filter((n) => n !== 'objects'), ...names.filter((n) => n === 'objects')]

async function linkImports(dataDir: string, staging: string): Promise<{ files: number; bytes: number }> {
  let files = 0
  let bytes = 0
  const root = join(dataDir, 'imports')
  for (const org of await readdir(root).catch(() => [] as string[])) {
    for (const repository of await readdir(join(root, org)).catch(() => [] as string[])) {
      const gitdir = join(root, org, repository, 'git')
      if (
        !(await lstat(gitdir).then(
          (s) => s.isDirectory(),
          () => false,
        ))
      )
        continue
      const linked = await linkTree(gitdir, join(staging, 'imports', org, repository, 'git'), refsBeforeObjects)
      files += linked.files
      bytes += linked.bytes
    }
  }
  return { files, bytes }
}

async function readVersions(sql: SQL): Promise<BackupManifest['codeIndex']> {
  const rows = await sql`SELECT org_id, version, snapshot FROM code_index_versions ORDER BY org_id`
  return rows.map((r: { org_id: string; version: unknown; snapshot: string }) => ({ orgId: r.org_id, version: toNumber(r.version), file: r.snapshot }))
}

async function schemaVersionOf(sql: SQL): Promise<number> {
  const [row] = await sql`SELECT MAX(version) AS version FROM schema_migrations`
  return toNumber(row?.version ?? 0)
}

/** The folder name of an organisation in code-index/ (see orgDirName in the code index). */
async function folderHolding(dataDir: string, file: string): Promise<string | undefined> {
  for (const folder of await snapshotFolders(dataDir)) if (await exists(join(dataDir, 'code-index', folder, file))) return folder
  return undefined
}

/**
 * Writes the backup of `dataDir` (and of the embedded database, when `db` is SQLite) to `file`, through a
 * temporary name, mode 0600 (it holds the secrets). Safe while the service runs.
 */
export async function writeBackup(options: { dataDir: string; db: Database; file: string; now?: () => Date }): Promise<BackupManifest> {
  const { dataDir, db, file } = options
  const staging = join(dataDir, `.backup-${crypto.randomUUID()}`)
  await mkdir(staging, { mode: 0o700 })
  try {
    // Snapshots first: a version the database names after this point is linked below.
    const linkedSnapshots = new Set<string>()
    for (const folder of await snapshotFolders(dataDir)) {
      for (const name of await readdir(join(dataDir, 'code-index', folder))) {
        if (!SNAPSHOT_NAME.test(name)) continue
        await mkdir(join(staging, 'code-index', folder), { recursive: true })
        try {
          await link(join(dataDir, 'code-index', folder, name), join(staging, 'code-index', folder, name))
          linkedSnapshots.add(`${folder}/${name}`)
        } catch (error) {
          if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error
        }
      }
    }

    let codeIndex: BackupManifest['codeIndex']
    let schemaVersion: number
    if (db.dialect === 'sqlite') {
      await db.sql`VACUUM INTO ${join(staging, DATABASE)}`
      const copy = new SQL({ adapter: 'sqlite', filename: join(staging, DATABASE), readonly: true })
      try {
        codeIndex = await readVersions(copy)
        schemaVersion = await schemaVersionOf(copy)
      } finally {
        await copy.close()
      }
    } else {
      codeIndex = await readVersions(db.sql)
      schemaVersion = await schemaVersionOf(db.sql)
    }

    // Keep exactly the snapshot each organisation is at; link one claimed after the first pass.
    const wanted = new Set<string>()
    for (const entry of codeIndex) {
      const folder = [...linkedSnapshots].find((p) => p.endsWith(`/${entry.file}`))?.split('/')[0] ?? (await folderHolding(dataDir, entry.file))
      if (!folder) throw new BackupError(`the code-index snapshot ${entry.file} of organisation ${entry.orgId} is missing from ${join(dataDir, 'code-index')}`)
      const key = `${folder}/${entry.file}`
      if (!linkedSnapshots.has(key)) {
        await mkdir(join(staging, 'code-index', folder), { recursive: true })
        await link(join(dataDir, 'code-index', key), join(staging, 'code-index', key))
      }
      wanted.add(key)
    }
    for (const key of linkedSnapshots) if (!wanted.has(key)) await rm(join(staging, 'code-index', key))

    // After the database: the references it names are already in the stores linked here.
    const imports = await linkImports(dataDir, staging)
    if (await exists(join(dataDir, SECRETS))) await link(join(dataDir, SECRETS), join(staging, SECRETS))

    const entries = await readdir(staging)
    let bytes = imports.bytes
    let files = imports.files
    for (const key of wanted) {
      bytes += (await lstat(join(staging, 'code-index', key))).size
      files++
    }
    for (const name of [DATABASE, SECRETS]) {
      if (!entries.includes(name)) continue
      bytes += (await lstat(join(staging, name))).size
      files++
    }
    const manifest: BackupManifest = {
      format: BACKUP_FORMAT,
      createdAt: (options.now?.() ?? new Date()).toISOString(),
      release: pkg.version,
      database: db.dialect,
      schemaVersion,
      codeIndex,
      files,
      bytes,
    }
    await writeFile(join(staging, MANIFEST), JSON.stringify(manifest, null, 2))

    const partial = `${file}.partial-${process.pid}`
    await mkdir(dirname(file), { recursive: true })
    try {
      await tar.create({ gzip: { level: 1 }, file: partial, cwd: staging, portable: true }, [
        MANIFEST,
        ...(await readdir(staging)).filter((n) => n !== MANIFEST),
      ])
      await chmod(partial, 0o600)
      await rename(partial, file)
    } catch (error) {
      await rm(partial, { force: true })
      throw error
    }
    return manifest
  } finally {
    await rm(staging, { recursive: true, force: true })
  }
}

/** Every entry of the archive, checked before anything is written; answers the manifest. */
async function inspect(file: string): Promise<BackupManifest> {
  const problems: string[] = []
  let manifestText: string | undefined
  await tar.list({
    file,
    strict: true,
    onReadEntry(entry) {
      const path = entry.path.replace(/\/$/, '')
      const segmentsOk = path.split('/').every((part) => SEGMENT.test(part) && part !== '.' && part !== '..')
      if (entry.type === 'Directory') {
        if (!segmentsOk) problems.push(`${JSON.stringify(entry.path)} is not a path a backup holds`)
        entry.resume()
        return
      }
      if (entry.type !== 'File' && entry.type !== 'OldFile') problems.push(`${JSON.stringify(entry.path)} is a ${entry.type}, not a regular file`)
      else if (!segmentsOk || !ALLOWED_ENTRY.test(path)) problems.push(`${JSON.stringify(entry.path)} is not a path a backup holds`)
      if (path === MANIFEST) {
        const chunks: Buffer[] = []
        entry.on('data', (chunk: Buffer) => chunks.push(chunk))
        entry.on('end', () => (manifestText = Buffer.concat(chunks).toString('utf8')))
      } else entry.resume()
    },
  })
  if (problems.length > 0) throw new BackupError(`${file} is not a backup of this service: ${problems.slice(0, 5).join('; ')}`)
  if (manifestText === undefined) throw new BackupError(`${file} holds no ${MANIFEST}: it is not a backup of this service`)
  let manifest: BackupManifest
  try {
    manifest = JSON.parse(manifestText) as BackupManifest
  } catch {
    throw new BackupError(`${file}: ${MANIFEST} is not JSON`)
  }
  if (manifest.format !== BACKUP_FORMAT) throw new BackupError(`${file} is backup format ${manifest.format}; this release reads format ${BACKUP_FORMAT}`)
  if (!Number.isInteger(manifest.schemaVersion) || manifest.schemaVersion > knownSchema())
    throw new BackupError(
      `${file} was written by release ${manifest.release} at database schema ${manifest.schemaVersion}, newer than this release knows (${knownSchema()}): restore it with that release or a later one`,
    )
  if (!Array.isArray(manifest.codeIndex)) throw new BackupError(`${file}: ${MANIFEST} lists no code index`)
  return manifest
}

/**
 * Restores `file` into `dataDir`, which must be empty. With `databaseUrl` the archive must come from a
 * PostgreSQL deployment whose database was restored first (`pg_restore`); its code-index versions are then
 * pointed at the snapshots restored here. Nothing is written when the archive or the target is refused.
 */
export async function restoreBackup(options: { dataDir: string; databaseUrl?: string; file: string }): Promise<RestoreSummary> {
  const { dataDir, databaseUrl, file } = options
  if (!(await exists(file))) throw new BackupError(`no file ${file}`)
  const manifest = await inspect(file)
  if (manifest.database === 'sqlite' && databaseUrl)
    throw new BackupError(`${file} holds an embedded (SQLite) database; unset DATABASE_URL to restore it into DATA_DIR`)
  if (manifest.database === 'postgres' && !databaseUrl)
    throw new BackupError(`${file} comes from a PostgreSQL deployment: set DATABASE_URL to the database restored with pg_restore`)
  const present = (await readdir(dataDir).catch(() => [] as string[])).filter((n) => !n.startsWith('.restore-'))
  if (present.length > 0) throw new BackupError(`DATA_DIR ${dataDir} is not empty (${present.slice(0, 3).join(', ')}): restore into an empty one`)

  let db: Database | undefined
  if (databaseUrl) {
    db = await reach('DATABASE_URL', databaseUrl, 'PostgreSQL', () => openDatabase({ databaseUrl, maxConnections: 1 }))
    const [table] = await db.sql`SELECT 1 AS present FROM information_schema.tables WHERE table_name = 'schema_migrations'`
    if (!table) {
      await db.close()
      throw new BackupError('the database at DATABASE_URL holds no schema: restore it with pg_restore before the files')
    }
  }
  try {
    await mkdir(dataDir, { recursive: true, mode: 0o700 })
    const staging = join(dataDir, `.restore-${crypto.randomUUID()}`)
    await mkdir(staging, { mode: 0o700 })
    let files = 0
    try {
      await tar.extract({
        file,
        cwd: staging,
        strict: true,
        preservePaths: false,
        preserveOwner: false,
        // Checked by inspect(); checked again here, so a file changed between the two passes writes nothing else.
        filter: (path, entry) => {
          const clean = path.replace(/\/$/, '')
          const type = (entry as { type?: string }).type
          const ok = type === 'Directory' ? clean.split('/').every((p) => SEGMENT.test(p) && p !== '..') : type === 'File' && ALLOWED_ENTRY.test(clean)
          if (ok && type === 'File') files++
          return ok
        },
      })
      for (const name of await readdir(staging)) await rename(join(staging, name), join(dataDir, name))
    } finally {
      await rm(staging, { recursive: true, force: true })
    }
    if (await exists(join(dataDir, SECRETS))) await chmod(join(dataDir, SECRETS), 0o600)

    // The database names exactly the snapshots restored, whatever it held when it was dumped.
    if (db) {
      await db.sql.begin(async (tx) => {
        await tx`DELETE FROM code_index_versions`
        for (const entry of manifest.codeIndex)
          await tx`INSERT INTO code_index_versions (org_id, version, snapshot, updated_at) VALUES (${entry.orgId}, ${entry.version}, ${entry.file}, ${Date.now()})`
      })
    }
    return { manifest, files }
  } finally {
    await db?.close()
  }
}
