import type { TransactionSQL } from 'bun'
import type { Database, SqlRow } from '../../src/storage/database.ts'
import { toNumber } from '../../src/storage/database.ts'
import type { UiMessage } from '../../src/llm/ui-stream.ts'

export interface Chat {
  id: string
  orgId: string
  userId: string
  title: string
  createdAt: number
  updatedAt: number
  /** Set once the chat is deleted: it is gone for every read, and its id stays taken. */
  deletedAt?: number
}

/** Where a page of the list starts: after the chat with this sort key (newest first). */
export interface ChatListKey {
  updatedAt: number
  id: string
}

/** `%`, `_` and the escape character itself match only themselves in a LIKE pattern with `ESCAPE '!'`. */
export const likeLiteral = (text: string) => text.replace(/[!%_]/g, (c) => `!${c}`)

const chatFrom = (r: SqlRow): Chat => ({
  id: r.id,
  orgId: r.org_id,
  userId: r.user_id,
  title: r.title,
  createdAt: toNumber(r.created_at),
  updatedAt: toNumber(r.updated_at),
  ...(r.deleted_at === null || r.deleted_at === undefined ? {} : { deletedAt: toNumber(r.deleted_at) }),
})

const messageFrom = (r: SqlRow): UiMessage => ({
  id: r.id,
  role: r.role,
  parts: JSON.parse(r.parts),
  ...(r.metadata ? { metadata: JSON.parse(r.metadata) } : {}),
})

const messageRow = (chatId: string, position: number, m: UiMessage, now: number) => ({
  chat_id: chatId,
  position,
  id: m.id,
  role: m.role,
  parts: JSON.stringify(m.parts),
  metadata: m.metadata === undefined ? null : JSON.stringify(m.metadata),
  created_at: now,
})

interface Write {
  work: (tx: TransactionSQL) => Promise<unknown>
  resolve: () => void
  reject: (error: unknown) => void
}

/** Chats and their messages, per user, over either SQL backend. */
export class ChatStore {
  // Writes asked for in the same turn of the event loop share one transaction (a group commit): under load, many
  // chats start and end together, and each transaction's BEGIN and COMMIT cost more than its statements.
  private waiting: Write[] = []

  constructor(private readonly db: Database) {}

  /** Runs `work` in a transaction shared with the other writes of this turn; settles once it is committed. */
  private write(work: Write['work']): Promise<void> {
    return new Promise((resolve, reject) => {
      if (this.waiting.push({ work, resolve, reject }) === 1) setImmediate(() => void this.commit())
    })
  }

  private async commit(): Promise<void> {
    const writes = this.waiting
    this.waiting = []
    try {
      await this.db.sql.begin(async (tx) => {
        for (const { work } of writes) await work(tx)
      })
      for (const { resolve } of writes) resolve()
    } catch (error) {
      if (writes.length === 1) return writes[0]!.reject(error)
      // One write's failure rolled back the others: each is tried again alone, and only its own failure is its.
      for (const { work, resolve, reject } of writes) await this.db.sql.begin((tx) => work(tx)).then(resolve, reject)
    }
  }

  async chat(id: string): Promise<Chat | undefined> {
    const [row] = await this.db.sql`SELECT * FROM chats WHERE id = ${id}`
    return row ? chatFrom(row) : undefined
  }

  /**
   * The user's chats that are not deleted, newest first by (updated_at, id), from after `after`; `q` keeps those
   * whose title contains it, whatever the case (on SQLite, the case of ASCII letters only).
   */
  async chats(userId: string, page: { limit: number; after?: ChatListKey; q?: string }): Promise<Chat[]> {
    const afterAt = page.after?.updatedAt ?? null
    const afterId = page.after?.id ?? null
    const pattern = page.q === undefined ? null : `%${likeLiteral(page.q.toLowerCase())}%`
    const rows = await this.db.sql`
      SELECT * FROM chats
      WHERE user_id = ${userId} AND deleted_at IS NULL
        AND (CAST(${afterAt} AS BIGINT) IS NULL OR updated_at < ${afterAt} OR (updated_at = ${afterAt} AND id < ${afterId}))
        AND (CAST(${pattern} AS TEXT) IS NULL OR LOWER(title) LIKE ${pattern} ESCAPE '!')
      ORDER BY updated_at DESC, id DESC
      LIMIT ${page.limit}`
    return rows.map(chatFrom)
  }

  /** Renames the user's chat unless it is deleted; answers it renamed, or nothing. */
  async rename(chatId: string, userId: string, title: string): Promise<Chat | undefined> {
    const [row] = await this.db.sql`UPDATE chats SET title = ${title}
      WHERE id = ${chatId} AND user_id = ${userId} AND deleted_at IS NULL RETURNING *`
    return row ? chatFrom(row) : undefined
  }

  /**
   * Marks the user's chat deleted and deletes its messages, in one transaction; the title goes too, the row stays
   * as a tombstone. Answers the chat as it was, or nothing when it is not theirs or is deleted already.
   */
  async markDeleted(chatId: string, userId: string): Promise<Chat | undefined> {
    const now = Date.now()
    return this.db.sql.begin(async (tx) => {
      const [before] = await tx`SELECT * FROM chats WHERE id = ${chatId} AND user_id = ${userId} AND deleted_at IS NULL`
      if (!before) return undefined
      const [marked] = await tx`UPDATE chats SET deleted_at = ${now}, title = ${''} WHERE id = ${chatId} AND deleted_at IS NULL RETURNING id`
      if (!marked) return undefined
      await tx`DELETE FROM chat_messages WHERE chat_id = ${chatId}`
      return chatFrom(before)
    })
  }

  /** Deletes what reached a deleted chat after its deletion (an answer stored by a generation still ending). */
  async purgeMessages(chatId: string): Promise<void> {
    await this.db.sql`DELETE FROM chat_messages WHERE chat_id = ${chatId}`
  }

  /** Every chat of the user, deleted ones included (an account's deletion removes them all). */
  async chatsOf(userId: string): Promise<Pick<Chat, 'id' | 'orgId' | 'userId'>[]> {
    const rows = await this.db.sql`SELECT id, org_id, user_id FROM chats WHERE user_id = ${userId}`
    return rows.map((r: SqlRow) => ({ id: String(r.id), orgId: String(r.org_id), userId: String(r.user_id) }))
  }

  /** Deletes the chats and their messages; answers how many of each went. */
  async deleteChats(chatIds: readonly string[]): Promise<{ chats: number; messages: number }> {
    if (chatIds.length === 0) return { chats: 0, messages: 0 }
    return this.db.sql.begin(async (tx) => {
      const ids = tx(chatIds as string[])
      const messages = await tx`DELETE FROM chat_messages WHERE chat_id IN ${ids} RETURNING chat_id`
      const chats = await tx`DELETE FROM chats WHERE id IN ${ids} RETURNING id`
      return { chats: chats.length, messages: messages.length }
    })
  }

  async messages(chatId: string): Promise<UiMessage[]> {
    const rows = await this.db.sql`SELECT id, role, parts, metadata FROM chat_messages WHERE chat_id = ${chatId} ORDER BY position`
    return rows.map(messageFrom)
  }

  /**
   * Creates the chat when new, then replaces its messages from `from` on with `messages`. `fresh`: the id was
   * made for this request, so the chat has no messages to replace.
   */
  async save(
    chat: Pick<Chat, 'id' | 'orgId' | 'userId' | 'title'>,
    from: number,
    messages: readonly UiMessage[],
    options: { fresh?: boolean } = {},
  ): Promise<void> {
    const now = Date.now()
    await this.write(async (tx) => {
      const row = { id: chat.id, org_id: chat.orgId, user_id: chat.userId, title: chat.title, created_at: now, updated_at: now }
      await tx`INSERT INTO chats ${tx(row)} ON CONFLICT (id) DO UPDATE SET updated_at = ${now}`
      if (!options.fresh) await tx`DELETE FROM chat_messages WHERE chat_id = ${chat.id} AND position >= ${from}`
      if (messages.length === 0) return
      await tx`INSERT INTO chat_messages ${tx(messages.map((m, i) => messageRow(chat.id, from + i, m, now)))}`
    })
  }

  /** Adds the answer unless a message with its id is already there: two processes may both try, one row results. */
  async addAnswerOnce(chatId: string, position: number, message: UiMessage): Promise<void> {
    const now = Date.now()
    await this.db.sql.begin(async (tx) => {
      const [present] = await tx`SELECT 1 AS present FROM chat_messages WHERE chat_id = ${chatId} AND id = ${message.id}`
      if (present) return
      // A deleted chat takes no answer.
      const [live] = await tx`SELECT 1 AS live FROM chats WHERE id = ${chatId} AND deleted_at IS NULL`
      if (!live) return
      const [last] = await tx`SELECT MAX(position) AS position FROM chat_messages WHERE chat_id = ${chatId}`
      const at = Math.max(position, last?.position === null || last?.position === undefined ? 0 : toNumber(last.position) + 1)
      // Either unique key (position, or id) taken by a racing process means the answer is stored already.
      await tx`INSERT INTO chat_messages ${tx(messageRow(chatId, at, message, now))} ON CONFLICT DO NOTHING`
      await tx`UPDATE chats SET updated_at = ${now} WHERE id = ${chatId}`
    })
  }

  /** Appends the assistant's answer after the history it answered. */
  async appendAnswer(chatId: string, position: number, message: UiMessage): Promise<void> {
    const now = Date.now()
    await this.write(async (tx) => {
      // A newer request may have rewritten the history meanwhile; the answer then lands after it.
      await tx`DELETE FROM chat_messages WHERE chat_id = ${chatId} AND id = ${message.id}`
      const row = messageRow(chatId, position, message, now)
      // The position is worked out in the INSERT: one statement fewer than reading the last position first. A
      // deleted chat takes no answer: its row selects nothing.
      const last = tx`(SELECT COALESCE(MAX(position) + 1, 0) FROM chat_messages WHERE chat_id = ${chatId})`
      const after = this.db.dialect === 'postgres' ? tx`GREATEST(${position}::integer, ${last})` : tx`MAX(${position}, ${last})`
      await tx`INSERT INTO chat_messages (chat_id, position, id, role, parts, metadata, created_at)
        SELECT ${row.chat_id}, ${after}, ${row.id}, ${row.role}, ${row.parts}, ${row.metadata}, ${row.created_at} FROM chats WHERE id = ${chatId} AND deleted_at IS NULL`
      await tx`UPDATE chats SET updated_at = ${now} WHERE id = ${chatId}`
    })
  }
}
