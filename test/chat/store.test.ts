import { describe, expect, test } from 'bun:test'
import { ChatStore } from '../../plugins/chat/store.ts'
import type { UiMessage } from '../../src/llm/ui-stream.ts'
import { forEachBackend } from '../helpers.ts'

const user = (id: string, text: string): UiMessage => ({ id, role: 'user', parts: [{ type: 'text', text }] })
const answer = (id: string, text: string): UiMessage => ({ id, role: 'assistant', parts: [{ type: 'text', text }] })
const chat = { id: 'chat_1', orgId: 'org_1', userId: 'user_1', title: 'Hi' }

forEachBackend((backend) => {
  describe(`chat store (${backend.name})`, () => {
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
