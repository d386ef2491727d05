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
}

const chatFrom = (r: SqlRow): Chat => ({
  id: r.id,
  orgId: r.org_id,
  userId: r.user_id,
  title: r.title,
  createdAt: toNumber(r.created_at),
  updatedAt: toNumber(r.updated_at),
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

  async chats(userId: string, limit: number): Promise<Chat[]> {
    const rows = await this.db.sql`SELECT * FROM chats WHERE user_id = ${userId} ORDER BY updated_at DESC LIMIT ${limit}`
    return rows.map(chatFrom)
  }

  async chatIdsOf(userId: string): Promise<string[]> {
    return (await this.db.sql`SELECT id FROM chats WHERE user_id = ${userId}`).map((r: SqlRow) => String(r.id))
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
      // The position is worked out in the INSERT: one statement fewer than reading the last position first.
      const after =
        this.db.dialect === 'postgres'
          ? tx`GREATEST(${position}::integer, COALESCE(MAX(position) + 1, 0))`
          : tx`MAX(${position}, COALESCE(MAX(position) + 1, 0))`
      await tx`INSERT INTO chat_messages (chat_id, position, id, role, parts, metadata, created_at)
        SELECT ${row.chat_id}, ${after}, ${row.id}, ${row.role}, ${row.parts}, ${row.metadata}, ${row.created_at} FROM chat_messages WHERE chat_id = ${chatId}`
      await tx`UPDATE chats SET updated_at = ${now} WHERE id = ${chatId}`
    })
  }
}
