import { afterAll, beforeAll, expect, test } from 'bun:test'
import { bearer, userWithRole } from '../helpers.ts'
import { chatHarness, readEvents, type ChatHarness } from '../chat/helpers.ts'
import { PNG, pdfWith, upload } from './support.ts'

let h: ChatHarness
beforeAll(async () => {
  h = await chatHarness({ FILES_TEXT_MAX_CHARS: '1000' }, { search: false })
})
afterAll(() => h.close())

const uploaded = async (bytes: Uint8Array | string, filename: string, type: string, headers = h.headers) => {
  const res = await upload(h.url, headers, [{ bytes, filename, type }])
  expect(res.status).toBe(201)
  return (await res.json()) as { id: string; mediaType: string }
}

/** The user message content of the last completion request the fake model received. */
const lastUserContent = () => {
  const messages = h.model.completions.at(-1)!.messages as { role: string; content: unknown }[]
  return messages.filter((m) => m.role === 'user').at(-1)!.content
}

test('an image attached by id reaches the model as an image part (a data URL), in the AI SDK file part form', async () => {
  const file = await uploaded(PNG, 'dot.png', 'image/png')
  const before = h.model.completions.length
  const res = await h.post({
    id: 'with-image',
    messages: [
      {
        id: 'm1',
        role: 'user',
        parts: [
          { type: 'text', text: 'What is in this picture?' },
          { type: 'file', mediaType: 'image/png', url: `file:${file.id}` },
        ],
      },
    ],
  })
  expect(res.status).toBe(200)
  await readEvents(res)
  expect(h.model.completions.length).toBeGreaterThan(before)
  expect(lastUserContent()).toEqual([
    { type: 'text', text: 'What is in this picture?' },
    { type: 'image_url', image_url: { url: `data:image/png;base64,${PNG.toString('base64')}` } },
  ])
  // The chat keeps the reference, not the bytes.
  const chat = await fetch(`${h.url}/api/chat/with-image`, { headers: h.headers }).then((r) => r.json())
  expect(JSON.stringify(chat.messages[0].parts)).toContain(`file:${file.id}`)
  expect(JSON.stringify(chat.messages[0].parts)).not.toContain('base64')
})

test("a PDF's text reaches the model as text; a text file is inlined, cut at FILES_TEXT_MAX_CHARS", async () => {
  const pdf = await uploaded(await pdfWith('Quarterly revenue was 42 million'), 'report.pdf', 'application/pdf')
  const notes = await uploaded(`${'n'.repeat(1500)}TAIL`, 'notes.md', 'text/markdown')
  await readEvents(
    await h.post({
      messages: [
        {
          role: 'user',
          parts: [
            { type: 'text', text: 'Summarise.' },
            { type: 'file', fileId: pdf.id },
            { type: 'file', fileId: notes.id },
          ],
        },
      ],
    }),
  )
  const content = lastUserContent()
  expect(typeof content).toBe('string')
  expect(content).toContain('Summarise.')
  expect(content).toContain('Quarterly revenue was 42 million')
  expect(content).toContain('name="report.pdf"')
  expect(content).toContain('more characters not shown')
  expect(content).not.toContain('TAIL')
})

test("another organisation's file named in a message is 404: nothing is stored and nothing reaches the model", async () => {
  const stranger = bearer((await userWithRole(h.t, 'owner')).token)
  const theirs = await uploaded('secret plans', 'plans.txt', 'text/plain', stranger)
  const before = h.model.completions.length
  for (const part of [
    { type: 'file', fileId: theirs.id },
    { type: 'file', mediaType: 'text/plain', url: `file:${theirs.id}` },
    { type: 'file', fileId: 'file_doesnotexist' },
  ]) {
    const res = await h.post({ id: 'stealing', messages: [{ role: 'user', parts: [{ type: 'text', text: 'read it' }, part] }] })
    expect(res.status).toBe(404)
    const problem = await res.json()
    expect(problem.code).toBe('not_found')
    expect(JSON.stringify(problem)).not.toContain('secret')
  }
  expect(h.model.completions.length).toBe(before)
  expect((await fetch(`${h.url}/api/chat/stealing`, { headers: h.headers })).status).toBe(404)
})

test('a file deleted after it was attached is a note in the history, and the chat goes on', async () => {
  const file = await uploaded('first draft', 'draft.txt', 'text/plain')
  await readEvents(await h.post({ id: 'goes-on', messages: [{ role: 'user', parts: [{ type: 'file', fileId: file.id }] }] }))
  expect(JSON.stringify(lastUserContent())).toContain('first draft')
  expect((await fetch(`${h.url}/api/files/${file.id}`, { method: 'DELETE', headers: h.headers })).status).toBe(200)
  const res = await h.post({ id: 'goes-on', messages: [{ role: 'user', content: 'and now?' }] })
  expect(res.status).toBe(200)
  await readEvents(res)
  const messages = JSON.stringify(h.model.completions.at(-1)!.messages)
  expect(messages).toContain('has been deleted')
  expect(messages).not.toContain('first draft')
})

test('deleting a chat deletes the files attached to it that no other chat holds', async () => {
  const only = await uploaded('only here', 'only.txt', 'text/plain')
  const shared = await uploaded('in two chats', 'shared.txt', 'text/plain')
  await readEvents(
    await h.post({
      id: 'doomed',
      messages: [
        {
          role: 'user',
          parts: [
            { type: 'file', fileId: only.id },
            { type: 'file', fileId: shared.id },
          ],
        },
      ],
    }),
  )
  await readEvents(await h.post({ id: 'kept', messages: [{ role: 'user', parts: [{ type: 'file', fileId: shared.id }] }] }))
  expect(await h.t.deps.files.deleteForChat('doomed')).toEqual({ files: 1 })
  expect((await fetch(`${h.url}/api/files/${only.id}`, { headers: h.headers })).status).toBe(404)
  expect((await fetch(`${h.url}/api/files/${shared.id}`, { headers: h.headers })).status).toBe(200)
  expect(await h.t.deps.files.deleteForChat('kept')).toEqual({ files: 1 })
  expect((await fetch(`${h.url}/api/files/${shared.id}`, { headers: h.headers })).status).toBe(404)
})

test('deleting a user deletes their uploads; deleting an organisation deletes all of its files', async () => {
  const owner = await userWithRole(h.t, 'owner')
  const orgId = owner.user.orgId
  const member = await userWithRole(h.t, 'member', { orgId })
  const theirs = await uploaded('member notes', 'm.txt', 'text/plain', bearer(member.token))
  const owners = await uploaded('owner notes', 'o.txt', 'text/plain', bearer(owner.token))
  const report = await h.t.deps.deletion.deleteUser(member.user.id, { actor: 'system' })
  expect(report.removed.files).toBe(1)
  expect((await fetch(`${h.url}/api/files/${theirs.id}`, { headers: bearer(owner.token) })).status).toBe(404)
  expect((await fetch(`${h.url}/api/files/${owners.id}`, { headers: bearer(owner.token) })).status).toBe(200)
  const org = await h.t.deps.deletion.deleteOrganisation(orgId, { actor: 'system' })
  expect(org.removed.files).toBe(1)
  const [row] = await h.t.deps.db.sql`SELECT COUNT(*) AS n FROM file_contents WHERE file_id = ${owners.id}`
  expect(Number(row.n)).toBe(0)
})
