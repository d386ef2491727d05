/** Uploads and attachments end to end on PostgreSQL (BYTEA bytes, the quota's lock per organisation); skipped without DATABASE_URL. */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { announceSkip, bearer, freshPostgres, postgresUrl, userWithRole } from '../helpers.ts'
import { chatHarness, readEvents, type ChatHarness } from '../chat/helpers.ts'
import { PNG, upload } from './support.ts'

if (!postgresUrl) announceSkip('PostgreSQL variant of the files suite', 'DATABASE_URL')
describe.skipIf(!postgresUrl)('files on PostgreSQL', () => {
  let h: ChatHarness
  let drop: () => Promise<void>
  beforeAll(async () => {
    const pg = (await freshPostgres())!
    drop = pg.drop
    h = await chatHarness({ DATABASE_URL: pg.url, FILES_ORG_QUOTA_BYTES: String(64 * 1024) }, { search: false })
  })
  afterAll(async () => {
    await h.close()
    await drop()
  })

  test('an image is stored, read back byte for byte, and reaches the model as an image part', async () => {
    const file = await upload(h.url, h.headers, [{ bytes: PNG, filename: 'dot.png', type: 'image/png' }]).then((r) => r.json())
    const content = await fetch(`${h.url}/api/files/${file.id}/content`, { headers: h.headers })
    expect(new Uint8Array(await content.arrayBuffer())).toEqual(new Uint8Array(PNG))
    await readEvents(
      await h.post({
        messages: [
          {
            role: 'user',
            parts: [
              { type: 'text', text: 'see' },
              { type: 'file', url: `file:${file.id}` },
            ],
          },
        ],
      }),
    )
    const user = (h.model.completions.at(-1)!.messages as { role: string; content: unknown }[]).filter((m) => m.role === 'user').at(-1)!
    expect(JSON.stringify(user.content)).toContain(`data:image/png;base64,${PNG.toString('base64')}`)
  })

  test("another organisation's file is 404 in a chat; uploads at once keep to the quota", async () => {
    const stranger = bearer((await userWithRole(h.t, 'owner')).token)
    const theirs = await upload(h.url, stranger, [{ bytes: 'theirs', filename: 't.txt', type: 'text/plain' }]).then((r) => r.json())
    const before = h.model.completions.length
    expect((await h.post({ messages: [{ role: 'user', parts: [{ type: 'file', fileId: theirs.id }] }] })).status).toBe(404)
    expect(h.model.completions.length).toBe(before)
    const owner = bearer((await userWithRole(h.t, 'owner')).token)
    const text = 'z'.repeat(20 * 1024)
    const statuses = await Promise.all(
      Array.from({ length: 6 }, (_, i) => upload(h.url, owner, [{ bytes: text, filename: `${i}.txt`, type: 'text/plain' }]).then((r) => r.status)),
    )
    expect(statuses.filter((s) => s === 201)).toHaveLength(3)
    expect(statuses.filter((s) => s === 409)).toHaveLength(3)
  })
})
