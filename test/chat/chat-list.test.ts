/**
 * The chat list as the store pages it, on SQLite and PostgreSQL: newest first by (updated_at, id), every chat once
 * across pages while new chats arrive, deleted chats never, and a title search where `%`, `_`, `!` and quotes are
 * plain characters.
 */
import { describe, expect, test } from 'bun:test'
import { ChatStore, type Chat, type ChatListKey } from '../../plugins/chat/store.ts'
import type { Database } from '../../src/storage/database.ts'
import { forEachBackend } from '../helpers.ts'

const USER = 'user_list'

/** A chat with a chosen updated_at: several share a millisecond, so the id decides their order. */
async function insertChat(db: Database, id: string, updatedAt: number, title = `chat ${id}`, userId = USER) {
  await db.sql`INSERT INTO chats ${db.sql({ id, org_id: 'org_1', user_id: userId, title, created_at: updatedAt, updated_at: updatedAt })}`
}

async function allPages(store: ChatStore, limit: number, between?: (page: number, after: ChatListKey) => Promise<void>): Promise<Chat[]> {
  const seen: Chat[] = []
  let after: ChatListKey | undefined
  for (let page = 0; page < 100; page++) {
    const chats = await store.chats(USER, { limit, after })
    seen.push(...chats)
    if (chats.length < limit) return seen
    const last = chats.at(-1)!
    after = { updatedAt: last.updatedAt, id: last.id }
    await between?.(page, after)
  }
  throw new Error('paging did not end')
}

forEachBackend((backend) => {
  describe(`chat list (${backend.name})`, () => {
    test('230 chats paged at 50 come each exactly once, newest first, ties broken by id', async () => {
      const { db, close } = await backend.open()
      const store = new ChatStore(db)
      const ids: string[] = []
      for (let i = 0; i < 230; i++) {
        const id = `chat_${String(i).padStart(3, '0')}`
        ids.push(id)
        // Seven chats per millisecond.
        await insertChat(db, id, 1_700_000_000_000 + Math.floor(i / 7))
      }
      await insertChat(db, 'chat_someone_else', 1_800_000_000_000, 'not mine', 'user_other')
      const seen = await allPages(store, 50)
      expect(seen.map((c) => c.id)).toEqual([...ids].reverse())
      await close()
    })

    test('chats created between pages appear on no later page, and no older one is skipped or repeated', async () => {
      const { db, close } = await backend.open()
      const store = new ChatStore(db)
      const base = 1_700_000_000_000
      const older: string[] = []
      for (let i = 0; i < 230; i++) {
        older.push(`chat_old_${String(i).padStart(3, '0')}`)
        await insertChat(db, older.at(-1)!, base + Math.floor(i / 3))
      }
      let fresh = 0
      const seen = await allPages(store, 50, async (page, after) => {
        // New chats land at the front, some in the very millisecond of the page's last chat, with a higher id.
        await Promise.all(Array.from({ length: 5 }, (_, i) => insertChat(db, `chat_zz_new_${page}_${i}`, i % 2 ? Date.now() : after.updatedAt)))
        fresh += 5
      })
      const olderSeen = seen.filter((c) => c.id.startsWith('chat_old_')).map((c) => c.id)
      expect(olderSeen).toEqual([...older].reverse())
      expect(new Set(seen.map((c) => c.id)).size).toBe(seen.length)
      expect(fresh).toBeGreaterThan(0)
      await close()
    })

    test('a deleted chat is listed on no page, and neither read nor renamed; its messages go with it', async () => {
      const { db, close } = await backend.open()
      const store = new ChatStore(db)
      await store.save({ id: 'chat_keep', orgId: 'org_1', userId: USER, title: 'keep' }, 0, [{ id: 'm1', role: 'user', parts: [] }], { fresh: true })
      await store.save({ id: 'chat_gone', orgId: 'org_1', userId: USER, title: 'secret plans' }, 0, [{ id: 'm2', role: 'user', parts: [] }], {
        fresh: true,
      })
      expect(await store.markDeleted('chat_gone', 'user_other')).toBeUndefined()
      expect((await store.markDeleted('chat_gone', USER))?.title).toBe('secret plans')
      expect(await store.markDeleted('chat_gone', USER)).toBeUndefined()
      expect((await store.chats(USER, { limit: 10 })).map((c) => c.id)).toEqual(['chat_keep'])
      expect(await store.chats(USER, { limit: 10, q: 'secret' })).toEqual([])
      expect(await store.rename('chat_gone', USER, 'back')).toBeUndefined()
      expect(await store.messages('chat_gone')).toEqual([])
      const tombstone = await store.chat('chat_gone')
      expect(tombstone?.deletedAt).toBeNumber()
      expect(tombstone?.title).toBe('')
      // An answer a generation stores while it ends finds the chat gone.
      await store.addAnswerOnce('chat_gone', 1, { id: 'a1', role: 'assistant', parts: [] })
      await store.appendAnswer('chat_gone', 1, { id: 'a2', role: 'assistant', parts: [] })
      expect(await store.messages('chat_gone')).toEqual([])
      // An account's deletion takes the tombstone too.
      expect((await store.chatsOf(USER)).map((c) => c.id).sort()).toEqual(['chat_gone', 'chat_keep'])
      await store.deleteChats(['chat_gone', 'chat_keep'])
      expect(await store.chat('chat_gone')).toBeUndefined()
      await close()
    })

    test('the title search is a case-insensitive substring: %, _, !, quotes and backslashes match only themselves', async () => {
      const { db, close } = await backend.open()
      const store = new ChatStore(db)
      const titles = ['100% sure', '100 percent', 'snake_case names', 'snakeXcase', "it's quoted", 'say "hi"', 'wow!', 'C:\\path', 'Bun SQL guide']
      for (const [i, title] of titles.entries()) await insertChat(db, `chat_q${i}`, 1_700_000_000_000 + i, title)
      const search = async (q: string) => (await store.chats(USER, { limit: 50, q })).map((c) => c.title).sort()
      expect(await search('%')).toEqual(['100% sure'])
      expect(await search('0%')).toEqual(['100% sure'])
      expect(await search('_')).toEqual(['snake_case names'])
      expect(await search('e_c')).toEqual(['snake_case names'])
      expect(await search("'")).toEqual(["it's quoted"])
      expect(await search('"hi"')).toEqual(['say "hi"'])
      expect(await search('!')).toEqual(['wow!'])
      expect(await search('\\')).toEqual(['C:\\path'])
      expect(await search("' OR 1=1 --")).toEqual([])
      expect(await search('bun sql')).toEqual(['Bun SQL guide'])
      expect(await search('GUIDE')).toEqual(['Bun SQL guide'])
      await close()
    })
  })
})
