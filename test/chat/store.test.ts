import { describe, expect, test } from 'bun:test'
import { ChatStore } from '../../plugins/chat/store.ts'
import type { UiMessage } from '../../src/llm/ui-stream.ts'
import { forEachBackend } from '../helpers.ts'

const user = (id: string, text: string): UiMessage => ({ id, role: 'user', parts: [{ type: 'text', text }] })
const answer = (id: string, text: string): UiMessage => ({ id, role: 'assistant', parts: [{ type: 'text', text }] })
const chat = { id: 'chat_1', orgId: 'org_1', userId: 'user_1', title: 'Hi' }

forEachBackend((backend) => {
  describe(`chat store (${backend.name})`, () => {
    test('writes asked for together share one transaction, and a failing one fails alone', async () => {
      const { db, close } = await backend.open()
      let transactions = 0
      const counted = new Proxy(db.sql, {
        get(target, name) {
          if (name !== 'begin') return Reflect.get(target, name)
          return (...args: unknown[]) => {
            transactions++
            return (target.begin as (...a: unknown[]) => unknown).apply(target, args)
          }
        },
      })
      const store = new ChatStore({ ...db, sql: counted } as typeof db)
      const chats = Array.from({ length: 8 }, (_, i) => ({ ...chat, id: `chat_g${i}` }))
      await Promise.all(chats.map((c, i) => store.save(c, 0, [user(`g${i}`, 'hello')], { fresh: true })))
      expect(transactions).toBe(1)
      await Promise.all(chats.map((c, i) => store.appendAnswer(c.id, 1, answer(`ga${i}`, 'hi'))))
      expect(transactions).toBe(2)
      for (const [i, c] of chats.entries()) expect((await store.messages(c.id)).map((m) => m.id)).toEqual([`g${i}`, `ga${i}`])

      // The same message id twice in one chat breaks its insert: that save fails, the others of its turn are stored.
      const results = await Promise.allSettled([
        store.save({ ...chat, id: 'chat_ok1' }, 0, [user('ok1', 'fine')], { fresh: true }),
        store.save({ ...chat, id: 'chat_bad' }, 0, [user('dup', 'one'), user('dup', 'two')], { fresh: true }),
        store.save({ ...chat, id: 'chat_ok2' }, 0, [user('ok2', 'fine')], { fresh: true }),
      ])
      expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled'])
      expect((await store.messages('chat_ok1')).map((m) => m.id)).toEqual(['ok1'])
      expect((await store.messages('chat_ok2')).map((m) => m.id)).toEqual(['ok2'])
      expect(await store.messages('chat_bad')).toEqual([])
      expect(await store.chat('chat_bad')).toBeUndefined()
      await close()
    })

    test('an answer lands after the history it answered', async () => {
      const { db, close } = await backend.open()
      const store = new ChatStore(db)
      await store.save(chat, 0, [user('m1', 'hello')], { fresh: true })
      await store.appendAnswer(chat.id, 1, answer('a1', 'hi there'))
      expect((await store.messages(chat.id)).map((m) => m.id)).toEqual(['m1', 'a1'])
      await close()
    })

    test('an answer to a history rewritten meanwhile lands after the new history, not over it', async () => {
      const { db, close } = await backend.open()
      const store = new ChatStore(db)
      await store.save(chat, 0, [user('m1', 'hello')], { fresh: true })
      // A newer request sent three messages while the first answer was being written.
      await store.save(chat, 0, [user('m1', 'hello'), answer('a0', 'earlier'), user('m2', 'and then')])
      await store.appendAnswer(chat.id, 1, answer('a1', 'late answer'))
      expect((await store.messages(chat.id)).map((m) => m.id)).toEqual(['m1', 'a0', 'm2', 'a1'])
      await close()
    })

    test('an answer stored twice under its id is kept once, at the end', async () => {
      const { db, close } = await backend.open()
      const store = new ChatStore(db)
      await store.save(chat, 0, [user('m1', 'hello')], { fresh: true })
      await store.addAnswerOnce(chat.id, 1, answer('a1', 'interrupted text'))
      await store.appendAnswer(chat.id, 1, answer('a1', 'whole text'))
      const messages = await store.messages(chat.id)
      expect(messages.map((m) => m.id)).toEqual(['m1', 'a1'])
      expect(messages[1]!.parts).toEqual([{ type: 'text', text: 'whole text' }])
      await close()
    })

    test('a saved history replaces the messages from its first change on', async () => {
      const { db, close } = await backend.open()
      const store = new ChatStore(db)
      await store.save(chat, 0, [user('m1', 'hello'), answer('a1', 'hi'), user('m2', 'more')], { fresh: true })
      await store.save(chat, 2, [user('m3', 'edited')])
      expect((await store.messages(chat.id)).map((m) => m.id)).toEqual(['m1', 'a1', 'm3'])
      await close()
    })
  })
})
