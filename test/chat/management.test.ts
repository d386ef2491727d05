/**
 * Renaming, deleting and listing chats over HTTP, as a hostile caller would try them: another user's chat, a
 * deleted chat, a chat deleted while its answer streams, tampered cursors and limits, and no token at all.
 * On SQLite, and on PostgreSQL when DATABASE_URL is set.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { bearer, freshPostgres, postgresUrl, userWithRole } from '../helpers.ts'
import { chatHarness, chunks, eventually, readEvents, type ChatHarness } from './helpers.ts'

interface Backend {
  name: string
  env(): Promise<{ env: Record<string, string>; drop(): Promise<void> }>
}
const backends: Backend[] = [{ name: 'sqlite', env: async () => ({ env: {}, drop: async () => {} }) }]
if (postgresUrl)
  backends.push({
    name: 'postgres',
    async env() {
      const pg = (await freshPostgres())!
      return { env: { DATABASE_URL: pg.url }, drop: pg.drop }
    },
  })

for (const backend of backends) {
  describe(`chat management (${backend.name})`, () => {
    let h: ChatHarness
    let drop: () => Promise<void>
    beforeAll(async () => {
      const { env, drop: dropDb } = await backend.env()
      drop = dropDb
      h = await chatHarness(env, { search: false })
    })
    afterAll(async () => {
      await h.close()
      await drop()
    })

    const call = (method: string, path: string, body?: unknown, headers: Record<string, string> = h.headers) =>
      fetch(`${h.url}${path}`, {
        method,
        headers: body === undefined ? headers : { 'content-type': 'application/json', ...headers },
        body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
      })
    const newChat = async (id: string, text = `hello from ${id}`, headers = h.headers) => {
      const res = await fetch(`${h.url}/api/chat`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
        body: JSON.stringify({ id, messages: [{ role: 'user', content: text }] }),
      })
      expect(res.status).toBe(200)
      await readEvents(res)
      await eventually(async () => !(await h.t.deps.chat.activeGeneration(id)), 'the answer to be stored')
    }
    const list = async (query = '', headers = h.headers) => (await call('GET', `/api/chats${query}`, undefined, headers)).json()

    test("another user's chat is 404 to rename, delete and read, and learns nothing; the chat stays as it was", async () => {
      await newChat('mgmt-private', 'my private plans')
      const other = await userWithRole(h.t, 'member')
      const auth = bearer(other.token)
      const answers = [
        await call('PATCH', '/api/chat/mgmt-private', { title: 'pwned' }, auth),
        await call('DELETE', '/api/chat/mgmt-private', undefined, auth),
        await call('GET', '/api/chat/mgmt-private', undefined, auth),
        await call('PATCH', '/api/chat/mgmt-never-used', { title: 'pwned' }, auth),
        await call('DELETE', '/api/chat/mgmt-never-used', undefined, auth),
      ]
      const bodies = await Promise.all(answers.map((r) => r.json()))
      expect(answers.map((r) => r.status)).toEqual([404, 404, 404, 404, 404])
      // The same answer for someone else's chat as for an id nobody used.
      const bare = ({ requestId: _r, ...rest }: Record<string, unknown>) => rest
      expect(bare(bodies[0])).toEqual(bare(bodies[3]))
      expect(bare(bodies[1])).toEqual(bare(bodies[4]))
      expect(JSON.stringify(bodies)).not.toContain('private plans')
      expect((await list('', auth)).chats).toEqual([])
      const mine = await (await call('GET', '/api/chat/mgmt-private')).json()
      expect(mine.title).toBe('my private plans')
      expect(mine.messages).toHaveLength(2)
    })

    test('a rename keeps the chat in its place; a bad title is 422 naming title', async () => {
      await newChat('mgmt-rename-a')
      await newChat('mgmt-rename-b')
      const before = await list()
      const renamed = await call('PATCH', '/api/chat/mgmt-rename-a', { title: '  Renamed: 100% "quoted" \'chat\'  ' })
      expect(renamed.status).toBe(200)
      const body = await renamed.json()
      expect(body).toMatchObject({ id: 'mgmt-rename-a', title: '  Renamed: 100% "quoted" \'chat\'  ', active: false })
      const after = await list()
      expect(after.chats.map((c: { id: string }) => c.id)).toEqual(before.chats.map((c: { id: string }) => c.id))
      expect(after.chats.find((c: { id: string }) => c.id === 'mgmt-rename-a').updatedAt).toBe(body.updatedAt)
      expect((await (await call('GET', '/api/chat/mgmt-rename-a')).json()).title).toBe(body.title)
      for (const bad of [{}, { title: '' }, { title: '   ' }, { title: 'x'.repeat(201) }, { title: 7 }, { title: 'ok', extra: true }]) {
        const res = await call('PATCH', '/api/chat/mgmt-rename-b', bad)
        expect(res.status).toBe(422)
        const problem = await res.json()
        expect(problem.code).toBe('validation_failed')
        const fields = problem.errors.map((e: { field: string }) => e.field)
        expect(fields.some((f: string) => f === 'title' || f === 'extra')).toBe(true)
      }
      expect((await call('PATCH', '/api/chat/mgmt-rename-b', { title: 'x'.repeat(200) })).status).toBe(200)
    })

    test('a deleted chat is gone at once: 404 to read, rename, delete, continue, cancel and resume, and listed nowhere', async () => {
      await newChat('mgmt-deleted', 'findable title')
      expect((await list('?q=findable')).chats.map((c: { id: string }) => c.id)).toEqual(['mgmt-deleted'])
      const deleted = await call('DELETE', '/api/chat/mgmt-deleted')
      expect(deleted.status).toBe(204)
      expect(await deleted.text()).toBe('')
      expect((await call('GET', '/api/chat/mgmt-deleted')).status).toBe(404)
      expect((await call('PATCH', '/api/chat/mgmt-deleted', { title: 'back' })).status).toBe(404)
      expect((await call('DELETE', '/api/chat/mgmt-deleted')).status).toBe(404)
      expect((await call('POST', '/api/chat/mgmt-deleted/cancel')).status).toBe(404)
      const resumed = await call('GET', '/api/chat/mgmt-deleted/stream')
      expect(resumed.status).toBe(404)
      expect((await resumed.json()).code).toBe('not_found')
      const continued = await call('POST', '/api/chat', { id: 'mgmt-deleted', messages: [{ role: 'user', content: 'again' }] })
      expect(continued.status).toBe(404)
      expect((await list()).chats.map((c: { id: string }) => c.id)).not.toContain('mgmt-deleted')
      expect((await list('?q=findable')).chats).toEqual([])
      // Another user resuming it learns no more than for an id nobody used.
      const other = await userWithRole(h.t, 'member')
      expect((await call('GET', '/api/chat/mgmt-deleted/stream', undefined, bearer(other.token))).status).toBe(204)
    })

    test('deleting a chat while its answer streams ends the stream, stores nothing and forgets the stored stream', async () => {
      let release!: () => void
      const paused = new Promise<void>((resolve) => (release = resolve))
      h.model.queue.push({ text: 'one two three four five six seven', pause: { after: 2, until: paused } })
      const res = await call('POST', '/api/chat', { id: 'mgmt-midstream', messages: [{ role: 'user', content: 'a long answer' }] })
      expect(res.status).toBe(200)
      const generationId = res.headers.get('x-generation-id')!
      const reading = readEvents(res)
      await eventually(async () => (await h.t.deps.chat.activeGeneration('mgmt-midstream')) !== undefined, 'the generation to run')
      const deleted = await call('DELETE', '/api/chat/mgmt-midstream')
      expect(deleted.status).toBe(204)
      const events = await Promise.race([reading, Bun.sleep(10_000).then(() => 'still streaming' as const)])
      release()
      expect(events).not.toBe('still streaming')
      const seen = chunks(events as Awaited<typeof reading>)
      expect(seen.some((c) => c.type === 'abort' || c.type === 'error')).toBe(true)
      expect(await h.t.deps.chat.activeGeneration('mgmt-midstream')).toBeUndefined()
      // Nothing of the generation is kept to replay.
      const frames: string[] = []
      try {
        for await (const frame of h.t.deps.chat.follow(generationId, 0, AbortSignal.timeout(500))) frames.push(frame)
      } catch {
        // An unknown log may end its follower with an error: either way, nothing is replayed.
      }
      expect(frames.join('')).not.toContain('data:')
      expect((await call('GET', '/api/chat/mgmt-midstream')).status).toBe(404)
      expect((await call('GET', '/api/chat/mgmt-midstream/stream')).status).toBe(404)
    })

    test('deleting a chat runs the deletion hooks once with the chat; a failing hook neither stops the others nor the deletion', async () => {
      const seen: string[] = []
      h.t.deps.chat.onChatDeleted(async () => {
        throw new Error('a files store that is down')
      })
      h.t.deps.chat.onChatDeleted(async (chat) => void seen.push(`${chat.id}:${chat.userId === undefined ? '?' : 'user'}`))
      await newChat('mgmt-hooked')
      expect((await call('DELETE', '/api/chat/mgmt-hooked')).status).toBe(204)
      expect(seen).toEqual(['mgmt-hooked:user'])
      expect((await call('GET', '/api/chat/mgmt-hooked')).status).toBe(404)
      expect(h.t.logs.some((l) => l.msg === 'chat deleted: a hook failed')).toBe(true)
    })

    test('the list pages with an opaque cursor; a bad limit or cursor is 422 naming it', async () => {
      const other = await userWithRole(h.t, 'member')
      const auth = bearer(other.token)
      for (const id of ['mgmt-page-1', 'mgmt-page-2', 'mgmt-page-3']) await newChat(id, `page ${id}`, auth)
      const first = await list('?limit=2', auth)
      expect(first.chats.map((c: { id: string }) => c.id)).toEqual(['mgmt-page-3', 'mgmt-page-2'])
      expect(first.nextCursor).toMatch(/^[A-Za-z0-9_-]+$/)
      const second = await list(`?limit=2&cursor=${first.nextCursor}`, auth)
      expect(second).toMatchObject({ chats: [{ id: 'mgmt-page-1', active: false }], nextCursor: null })
      expect(Object.keys(second.chats[0]).sort()).toEqual(['active', 'createdAt', 'id', 'title', 'updatedAt'])
      expect((await list('', auth)).nextCursor).toBeNull()

      const b64 = (text: string) => Buffer.from(text).toString('base64url')
      const cursors = [
        `${first.nextCursor}x`,
        `${first.nextCursor}A`,
        `${first.nextCursor}==`,
        first.nextCursor.slice(0, -2),
        '!!!',
        '%27%20OR%201%3D1',
        b64('["x","y"]'),
        b64('[1,"../etc"]'),
        b64('[-1,"chat_a"]'),
        b64('{"updatedAt":1,"id":"a"}'),
        b64('[1,"a",3]'),
        b64('seq:12'),
        'x'.repeat(401),
      ]
      for (const cursor of cursors) {
        const res = await call('GET', `/api/chats?cursor=${cursor}`, undefined, auth)
        expect(res.status).toBe(422)
        const problem = await res.json()
        expect(problem.code).toBe('validation_failed')
        expect(problem.errors.map((e: { field: string }) => e.field)).toEqual(['cursor'])
      }
      for (const limit of ['0', '101', '-1', '1.5', 'abc', '']) {
        const res = await call('GET', `/api/chats?limit=${limit}`, undefined, auth)
        expect(res.status).toBe(422)
        expect((await res.json()).errors.map((e: { field: string }) => e.field)).toEqual(['limit'])
      }
      expect((await list('?limit=100', auth)).chats).toHaveLength(3)
      expect((await list('?limit=1', auth)).chats).toHaveLength(1)
    })

    test('the title search over HTTP takes %, _ and quotes as plain characters', async () => {
      const other = await userWithRole(h.t, 'member')
      const auth = bearer(other.token)
      await newChat('mgmt-q-1', '100% sure about it', auth)
      await newChat('mgmt-q-2', '100 percent sure', auth)
      await newChat('mgmt-q-3', "it's snake_case", auth)
      const ids = async (q: string) => (await list(`?q=${encodeURIComponent(q)}`, auth)).chats.map((c: { id: string }) => c.id)
      expect(await ids('%')).toEqual(['mgmt-q-1'])
      expect(await ids('_')).toEqual(['mgmt-q-3'])
      expect(await ids("'")).toEqual(['mgmt-q-3'])
      expect(await ids('SURE')).toEqual(['mgmt-q-2', 'mgmt-q-1'])
      expect(await ids("' OR '1'='1")).toEqual([])
      const empty = await call('GET', '/api/chats?q=', undefined, auth)
      expect(empty.status).toBe(422)
      expect((await empty.json()).errors.map((e: { field: string }) => e.field)).toEqual(['q'])
    })

    test('an anonymous caller is 401 and hears nothing about the schema', async () => {
      const answers = [
        await call('PATCH', '/api/chat/mgmt-anything', { nope: 1 }, {}),
        await call('PATCH', '/api/chat/..%2Fetc', '{"title": ', {}),
        await call('DELETE', '/api/chat/mgmt-anything', undefined, {}),
        await call('GET', '/api/chats?limit=abc&cursor=!!!', undefined, {}),
        await call('GET', '/api/chats?q=x', undefined, { authorization: 'Bearer not-a-token' }),
      ]
      for (const res of answers) {
        expect(res.status).toBe(401)
        const problem = await res.json()
        expect(['unauthenticated', 'invalid_token']).toContain(problem.code)
        expect(problem.errors).toBeUndefined()
        for (const word of ['limit', 'cursor', 'nope', 'schema', 'validation', 'etc']) expect(JSON.stringify(problem)).not.toContain(word)
      }
    })
  })
}
