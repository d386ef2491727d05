import { afterAll, beforeAll, expect, test } from 'bun:test'
import { chatHarness, readEvents, type ChatHarness } from '../chat/helpers.ts'
import { PNG, upload } from './support.ts'

let h: ChatHarness
beforeAll(async () => {
  h = await chatHarness({}, { search: false })
})
afterAll(() => h.close())

test('DELETE /api/chat/{id} deletes the files attached to the chat, and keeps one another chat still holds', async () => {
  const attach = async (bytes: Uint8Array | string, filename: string, type: string) =>
    ((await upload(h.url, h.headers, [{ bytes, filename, type }]).then((r) => r.json())) as { id: string }).id
  const image = await attach(PNG, 'dot.png', 'image/png')
  const shared = await attach('shared notes', 'notes.txt', 'text/plain')
  const unattached = await attach('never attached', 'loose.txt', 'text/plain')
  await readEvents(
    await h.post({
      id: 'to-delete',
      messages: [
        {
          role: 'user',
          parts: [
            { type: 'file', url: `file:${image}` },
            { type: 'file', fileId: shared },
          ],
        },
      ],
    }),
  )
  await readEvents(await h.post({ id: 'to-keep', messages: [{ role: 'user', parts: [{ type: 'file', fileId: shared }] }] }))
  expect((await fetch(`${h.url}/api/chat/to-delete`, { method: 'DELETE', headers: h.headers })).ok).toBe(true)
  const status = (id: string) => fetch(`${h.url}/api/files/${id}`, { headers: h.headers }).then((r) => r.status)
  expect(await status(image)).toBe(404)
  expect(await status(shared)).toBe(200)
  expect(await status(unattached)).toBe(200)
})
