import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { FileStore, type StoredFile } from '../../plugins/files/store.ts'
import { forEachBackend, type BackendDatabase } from '../helpers.ts'

const fileOf = (id: string, orgId: string, size: number): StoredFile => ({
  id,
  orgId,
  userId: 'user-1',
  name: `${id}.bin`,
  mediaType: 'image/png',
  size,
  createdAt: 1,
})

forEachBackend((backend) => {
  describe(`file store on ${backend.name}`, () => {
    let database: BackendDatabase
    let store: FileStore
    beforeAll(async () => {
      database = await backend.open()
      store = new FileStore(database.db)
    })
    afterAll(() => database.close())

    test('bytes come back exactly as stored, every byte value included', async () => {
      const bytes = new Uint8Array(256).map((_, i) => i)
      expect(await store.insertWithinQuota(fileOf('f-bytes', 'org-a', 256), bytes, 10_000)).toBe(true)
      expect(await store.content('f-bytes')).toEqual(bytes)
      expect(await store.file('org-a', 'f-bytes')).toEqual(fileOf('f-bytes', 'org-a', 256))
      expect(await store.file('org-b', 'f-bytes')).toBeUndefined()
    })

    test('the quota counts the organisation files, and uploads at once cannot both slip under it', async () => {
      const results = await Promise.all(Array.from({ length: 6 }, (_, i) => store.insertWithinQuota(fileOf(`q-${i}`, 'org-q', 400), new Uint8Array(400), 1000)))
      expect(results.filter(Boolean)).toHaveLength(2)
      expect(await store.insertWithinQuota(fileOf('q-other', 'org-r', 400), new Uint8Array(400), 1000)).toBe(true)
    })

    test('unlinking a chat answers only the files no other chat holds; deleting removes bytes and links', async () => {
      for (const id of ['c-1', 'c-2']) await store.insertWithinQuota(fileOf(id, 'org-c', 1), new Uint8Array(1), 10_000)
      await store.linkToChat('chat-1', ['c-1', 'c-2', 'c-1'])
      await store.linkToChat('chat-2', ['c-2'])
      expect(await store.unlinkChat('chat-1')).toEqual(['c-1'])
      expect(await store.deleteFiles(['c-1'])).toBe(1)
      expect(await store.content('c-1')).toBeUndefined()
      expect(await store.unlinkChat('chat-2')).toEqual(['c-2'])
    })
  })
})
