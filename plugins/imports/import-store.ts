/**
 * Imports, the repositories they fill, and their progress events, in the database (SQLite or PostgreSQL), so an
 * import's state survives a restart and can be followed from any process.
 */
import type { Database } from '../../src/storage/database.ts'
import { toNullableNumber, toNumber } from '../../src/storage/database.ts'
import { ACTIVE_STATUSES, type ImportStatus, type ImportSummary, type RepositoryAnalysis } from './schemas.ts'
import type { RepositoryLocation } from './repository-url.ts'

export interface RepositoryRecord {
  id: string
  orgId: string
  urlKey: string
  cloneUrl: string
  name: string
  /** Commit the code index holds; null until an import succeeds. */
  indexedCommit: string | null
  analysis: RepositoryAnalysis | null
}

export interface ImportRecord {
  id: string
  orgId: string
  userId: string
  repository: { id: string; name: string; url: string }
  ref: string | null
  depth: number | null
  status: ImportStatus
  previousCommit: string | null
  commit: string | null
  progress: Record<string, unknown> | null
  summary: ImportSummary | null
  error: { code: string; message: string } | null
  createdAt: number
  updatedAt: number
  heartbeatAt: number
  finishedAt: number | null
}

export interface StoredEvent {
  seq: number
  event: string
  data: unknown
}

const parse = <T>(value: unknown): T | null => (typeof value === 'string' ? (JSON.parse(value) as T) : null)

function repositoryFrom(row: Record<string, unknown>): RepositoryRecord {
  return {
    id: String(row.id),
    orgId: String(row.org_id),
    urlKey: String(row.url_key),
    cloneUrl: String(row.clone_url),
    name: String(row.name),
    indexedCommit: (row.indexed_commit as string | null) ?? null,
    analysis: parse<RepositoryAnalysis>(row.analysis),
  }
}

function importFrom(row: Record<string, unknown>): ImportRecord {
  return {
    id: String(row.id),
    orgId: String(row.org_id),
    userId: String(row.user_id),
    repository: { id: String(row.repository_id), name: String(row.repository_name), url: String(row.clone_url) },
    ref: (row.ref as string | null) ?? null,
    depth: toNullableNumber(row.depth),
    status: row.status as ImportStatus,
    previousCommit: (row.previous_commit as string | null) ?? null,
    commit: (row.commit_id as string | null) ?? null,
    progress: parse<Record<string, unknown>>(row.progress),
    summary: parse<ImportSummary>(row.summary),
    error: row.error_code ? { code: String(row.error_code), message: String(row.error_message ?? '') } : null,
    createdAt: toNumber(row.created_at),
    updatedAt: toNumber(row.updated_at),
    heartbeatAt: toNumber(row.heartbeat_at),
    finishedAt: toNullableNumber(row.finished_at),
  }
}

export class ImportStore {
  constructor(private readonly db: Database) {}

  /** Deletes the organisation's repositories, imports and their progress events; answers how many of each. */
  async deleteOrganisation(orgId: string): Promise<{ repositories: number; imports: number; events: number }> {
    return this.db.sql.begin(async (tx) => {
      const events = await tx`DELETE FROM codehost_import_events WHERE import_id IN (SELECT id FROM codehost_imports WHERE org_id = ${orgId}) RETURNING seq`
      const imports = await tx`DELETE FROM codehost_imports WHERE org_id = ${orgId} RETURNING id`
      const repositories = await tx`DELETE FROM codehost_repositories WHERE org_id = ${orgId} RETURNING id`
      return { repositories: repositories.length, imports: imports.length, events: events.length }
    })
  }

  /** The organisation's record of a repository, created on its first import. */
  async upsertRepository(orgId: string, location: RepositoryLocation, now = Date.now()): Promise<RepositoryRecord> {
    const [row] = await this.db.sql`
      INSERT INTO codehost_repositories (id, org_id, url_key, clone_url, name, created_at, updated_at)
      VALUES (${crypto.randomUUID()}, ${orgId}, ${location.key}, ${location.cloneUrl.toString()}, ${location.name}, ${now}, ${now})
      ON CONFLICT (org_id, url_key) DO UPDATE SET clone_url = excluded.clone_url, name = excluded.name, updated_at = excluded.updated_at
      RETURNING *`
    return repositoryFrom(row)
  }

  async repository(id: string): Promise<RepositoryRecord | undefined> {
    const [row] = await this.db.sql`SELECT * FROM codehost_repositories WHERE id = ${id}`
    return row ? repositoryFrom(row) : undefined
  }

  async markIndexed(repositoryId: string, commit: string, analysis: RepositoryAnalysis, now = Date.now()): Promise<void> {
    await this.db.sql`UPDATE codehost_repositories SET indexed_commit = ${commit}, analysis = ${JSON.stringify(analysis)}, updated_at = ${now}
      WHERE id = ${repositoryId}`
  }

  /** Inserts a queued import; undefined when the repository already has one queued or running. */
  async createImport(
    input: { orgId: string; userId: string; repositoryId: string; ref?: string; depth?: number },
    now = Date.now(),
  ): Promise<string | undefined> {
    const id = crypto.randomUUID()
    const rows = await this.db.sql`
      INSERT INTO codehost_imports (id, org_id, user_id, repository_id, ref, depth, status, created_at, updated_at, heartbeat_at)
      VALUES (${id}, ${input.orgId}, ${input.userId}, ${input.repositoryId}, ${input.ref ?? null}, ${input.depth ?? null}, 'queued', ${now}, ${now}, ${now})
      ON CONFLICT DO NOTHING
      RETURNING id`
    return rows.length > 0 ? id : undefined
  }

  async activeImportOf(repositoryId: string): Promise<ImportRecord | undefined> {
    const [row] = await this.db.sql`
      SELECT i.*, r.name AS repository_name, r.clone_url FROM codehost_imports i JOIN codehost_repositories r ON r.id = i.repository_id
      WHERE i.repository_id = ${repositoryId} AND i.status IN ${this.db.sql(ACTIVE_STATUSES as ImportStatus[])}`
    return row ? importFrom(row) : undefined
  }

  /** The import if it belongs to `orgId`; another organisation's import reads as missing. */
  async findImport(orgId: string, id: string): Promise<ImportRecord | undefined> {
    const [row] = await this.db.sql`
      SELECT i.*, r.name AS repository_name, r.clone_url FROM codehost_imports i JOIN codehost_repositories r ON r.id = i.repository_id
      WHERE i.id = ${id} AND i.org_id = ${orgId}`
    return row ? importFrom(row) : undefined
  }

  async setStatus(id: string, status: ImportStatus, progress: Record<string, unknown> | null, now = Date.now()): Promise<void> {
    await this.db
      .sql`UPDATE codehost_imports SET status = ${status}, progress = ${progress && JSON.stringify(progress)}, updated_at = ${now}, heartbeat_at = ${now}
      WHERE id = ${id} AND status IN ${this.db.sql(ACTIVE_STATUSES as ImportStatus[])}`
  }

  async setCommits(id: string, previousCommit: string | null, commit: string): Promise<void> {
    await this.db.sql`UPDATE codehost_imports SET previous_commit = ${previousCommit}, commit_id = ${commit} WHERE id = ${id}`
  }

  async heartbeat(id: string, progress: Record<string, unknown> | null, now = Date.now()): Promise<void> {
    await this.db.sql`UPDATE codehost_imports SET heartbeat_at = ${now}, progress = ${progress && JSON.stringify(progress)} WHERE id = ${id}`
  }

  /** Records success unless the import was failed meanwhile (found stale by another process); false then. */
  async succeed(id: string, summary: ImportSummary, now = Date.now()): Promise<boolean> {
    const rows = await this.db.sql`UPDATE codehost_imports SET status = 'succeeded', summary = ${JSON.stringify(summary)}, progress = NULL,
      updated_at = ${now}, heartbeat_at = ${now}, finished_at = ${now}
      WHERE id = ${id} AND status IN ${this.db.sql(ACTIVE_STATUSES as ImportStatus[])} RETURNING id`
    return rows.length > 0
  }

  /** Fails an import that is still active; false when it had already finished. */
  async fail(id: string, error: { code: string; message: string }, now = Date.now()): Promise<boolean> {
    const rows = await this.db.sql`UPDATE codehost_imports SET status = 'failed', error_code = ${error.code}, error_message = ${error.message},
      updated_at = ${now}, heartbeat_at = ${now}, finished_at = ${now}
      WHERE id = ${id} AND status IN ${this.db.sql(ACTIVE_STATUSES as ImportStatus[])} RETURNING id`
    return rows.length > 0
  }

  /** Active imports whose heartbeat is older than `before`, optionally of one repository. */
  async staleImports(before: number, repositoryId?: string): Promise<string[]> {
    const rows = repositoryId
      ? await this.db
          .sql`SELECT id FROM codehost_imports WHERE repository_id = ${repositoryId} AND status IN ${this.db.sql(ACTIVE_STATUSES as ImportStatus[])} AND heartbeat_at < ${before}`
      : await this.db.sql`SELECT id FROM codehost_imports WHERE status IN ${this.db.sql(ACTIVE_STATUSES as ImportStatus[])} AND heartbeat_at < ${before}`
    return rows.map((row: { id: string }) => row.id)
  }

  async appendEvent(importId: string, seq: number, event: string, data: unknown, now = Date.now()): Promise<void> {
    await this.db
      .sql`INSERT INTO codehost_import_events (import_id, seq, event, data, at) VALUES (${importId}, ${seq}, ${event}, ${JSON.stringify(data)}, ${now})`
  }

  async lastEventSeq(importId: string): Promise<number> {
    const [row] = await this.db.sql`SELECT MAX(seq) AS seq FROM codehost_import_events WHERE import_id = ${importId}`
    return toNullableNumber(row?.seq) ?? 0
  }

  async eventsAfter(importId: string, after: number, limit = 500): Promise<StoredEvent[]> {
    const rows = await this.db
      .sql`SELECT seq, event, data FROM codehost_import_events WHERE import_id = ${importId} AND seq > ${after} ORDER BY seq LIMIT ${limit}`
    return rows.map((row: Record<string, unknown>) => ({ seq: toNumber(row.seq), event: String(row.event), data: JSON.parse(String(row.data)) }))
  }
}
