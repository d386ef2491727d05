/** Uploaded files over either SQL backend: metadata in `files`, bytes in `file_contents`, chat links in `chat_files`. */
import { toNumber, type Database, type SqlRow } from '../../src/storage/database.ts'

export interface StoredFile {
  id: string
  orgId: string
  userId: string
  name: string
  mediaType: string
  size: number
  createdAt: number
}

const fileFrom = (row: SqlRow): StoredFile => ({
  id: row.id,
  orgId: row.org_id,
  userId: row.user_id,
  name: row.name,
  mediaType: row.media_type,
  size: toNumber(row.size),
  createdAt: toNumber(row.created_at),
})

export class FileStore {
  constructor(private readonly db: Database) {}

  /**
   * Stores the file unless the organisation's files would then exceed `quotaBytes`: answers false and stores
   * nothing in that case. The sum and the insert share a transaction (on PostgreSQL under a lock per
   * organisation), so two uploads at once cannot both slip under the quota.
   */
  async insertWithinQuota(file: StoredFile, content: Uint8Array, quotaBytes: number): Promise<boolean> {
    return this.db.sql.begin(async (tx) => {
      if (this.db.dialect === 'postgres') await tx`SELECT pg_advisory_xact_lock(hashtext(${`files:${file.orgId}`}))`
      const [used] = await tx`SELECT COALESCE(SUM(size), 0) AS used FROM files WHERE org_id = ${file.orgId}`
      if (toNumber(used.used) + file.size > quotaBytes) return false
      await tx`INSERT INTO files (id, org_id, user_id, name, media_type, size, created_at)
        VALUES (${file.id}, ${file.orgId}, ${file.userId}, ${file.name}, ${file.mediaType}, ${file.size}, ${file.createdAt})`
      await tx`INSERT INTO file_contents (file_id, content) VALUES (${file.id}, ${content})`
      return true
    })
  }

  /** The file if it belongs to the organisation. */
  async file(orgId: string, id: string): Promise<StoredFile | undefined> {
    const [row] = await this.db.sql`SELECT * FROM files WHERE id = ${id} AND org_id = ${orgId}`
    return row ? fileFrom(row) : undefined
  }

  async content(id: string): Promise<Uint8Array | undefined> {
    const [row] = await this.db.sql`SELECT content FROM file_contents WHERE file_id = ${id}`
    if (!row) return undefined
    const content = row.content as Uint8Array | ArrayBuffer
    return content instanceof Uint8Array ? content : new Uint8Array(content)
  }

  /** Deletes files by id with their bytes and chat links; answers how many went. */
  async deleteFiles(ids: readonly string[]): Promise<number> {
    if (ids.length === 0) return 0
    return this.db.sql.begin(async (tx) => {
      await tx`DELETE FROM chat_files WHERE file_id IN ${tx(ids as string[])}`
      await tx`DELETE FROM file_contents WHERE file_id IN ${tx(ids as string[])}`
      const deleted = await tx`DELETE FROM files WHERE id IN ${tx(ids as string[])} RETURNING id`
      return deleted.length
    })
  }

  async idsOfUser(userId: string): Promise<string[]> {
    return (await this.db.sql`SELECT id FROM files WHERE user_id = ${userId}`).map((r: SqlRow) => r.id as string)
  }

  async idsOfOrganisation(orgId: string): Promise<string[]> {
    return (await this.db.sql`SELECT id FROM files WHERE org_id = ${orgId}`).map((r: SqlRow) => r.id as string)
  }

  async linkToChat(chatId: string, fileIds: readonly string[]): Promise<void> {
    for (const fileId of new Set(fileIds)) await this.db.sql`INSERT INTO chat_files (chat_id, file_id) VALUES (${chatId}, ${fileId}) ON CONFLICT DO NOTHING`
  }

  /** Unlinks the chat and answers the files it was the last chat of. */
  async unlinkChat(chatId: string): Promise<string[]> {
    return this.db.sql.begin(async (tx) => {
      const linked = (await tx`DELETE FROM chat_files WHERE chat_id = ${chatId} RETURNING file_id`).map((r: SqlRow) => r.file_id as string)
      if (linked.length === 0) return []
      const still = new Set((await tx`SELECT file_id FROM chat_files WHERE file_id IN ${tx(linked)}`).map((r: SqlRow) => r.file_id as string))
      return linked.filter((id: string) => !still.has(id))
    })
  }
}
