import { afterAll, beforeAll, expect, test } from 'bun:test'
import { bearer, userWithRole } from '../helpers.ts'
import { chatHarness, type ChatHarness } from '../chat/helpers.ts'
import { HTML, PNG, pdfWith, upload } from './support.ts'

const MAX = 64 * 1024
let h: ChatHarness
beforeAll(async () => {
  h = await chatHarness({ FILES_MAX_BYTES: String(MAX), FILES_ORG_QUOTA_BYTES: String(100 * 1024) }, { search: false })
})
afterAll(() => h.close())

test('an upload is stored and read back: metadata, then the bytes as a download that is never rendered', async () => {
  const res = await upload(h.url, h.headers, [{ bytes: 'select 1;\n', filename: 'query.md', type: 'text/markdown' }])
  expect(res.status).toBe(201)
  const file = await res.json()
  expect(file).toEqual({ id: expect.stringMatching(/^file_/), name: 'query.md', mediaType: 'text/markdown', size: 10, createdAt: expect.any(Number) })
  expect(await fetch(`${h.url}/api/files/${file.id}`, { headers: h.headers }).then((r) => r.json())).toEqual(file)
  const content = await fetch(`${h.url}/api/files/${file.id}/content`, { headers: h.headers })
  expect(content.status).toBe(200)
  expect(content.headers.get('content-disposition')).toStartWith('attachment; filename="query.md"')
  expect(content.headers.get('x-content-type-options')).toBe('nosniff')
  expect(content.headers.get('content-security-policy')).toContain('sandbox')
  expect(await content.text()).toBe('select 1;\n')
})

test('the type is read from the bytes: a PNG declared as text/html is stored as image/png', async () => {
  const res = await upload(h.url, h.headers, [{ bytes: PNG, filename: 'page.html', type: 'text/html' }])
  expect(res.status).toBe(201)
  const file = await res.json()
  expect(file.mediaType).toBe('image/png')
  const content = await fetch(`${h.url}/api/files/${file.id}/content`, { headers: h.headers })
  expect(content.headers.get('content-type')).toBe('image/png')
  expect(new Uint8Array(await content.arrayBuffer())).toEqual(new Uint8Array(PNG))
})

test('an HTML page is refused whatever it is declared as (415), and nothing is stored', async () => {
  for (const type of ['image/png', 'text/html', 'application/pdf', 'image/svg+xml']) {
    const res = await upload(h.url, h.headers, [{ bytes: HTML, filename: 'x.png', type }])
    expect(res.status, type).toBe(415)
    expect((await res.json()).code).toBe('unsupported_file_type')
  }
  const binary = await upload(h.url, h.headers, [{ bytes: new Uint8Array([0, 1, 2, 3, 255, 254]), filename: 'blob.bin' }])
  expect(binary.status).toBe(415)
})

test('a PDF is stored as application/pdf', async () => {
  const res = await upload(h.url, h.headers, [{ bytes: await pdfWith('hello pdf'), filename: 'doc.pdf', type: 'application/octet-stream' }])
  expect(res.status).toBe(201)
  expect((await res.json()).mediaType).toBe('application/pdf')
})

test('a file over FILES_MAX_BYTES is 413 file_too_large', async () => {
  const res = await upload(h.url, h.headers, [{ bytes: 'x'.repeat(MAX + 1), filename: 'big.txt', type: 'text/plain' }])
  expect(res.status).toBe(413)
  const problem = await res.json()
  expect(problem.code).toBe('file_too_large')
  expect(problem.limitBytes).toBe(MAX)
})

test('an oversized upload without Content-Length is refused before it is all read', async () => {
  let sent = 0
  const total = 20 * 1024 * 1024
  const chunk = new TextEncoder().encode('x'.repeat(16 * 1024))
  const boundary = 'bnd7c0ffee'
  const head = new TextEncoder().encode(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="big.txt"\r\nContent-Type: text/plain\r\n\r\n`)
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue(head)
    },
    pull(controller) {
      if (sent >= total) return controller.close()
      sent += chunk.byteLength
      controller.enqueue(chunk)
    },
  })
  const res = await fetch(`${h.url}/api/files`, {
    method: 'POST',
    headers: { ...h.headers, 'content-type': `multipart/form-data; boundary=${boundary}` },
    body,
    duplex: 'half',
  } as RequestInit)
  expect(res.status).toBe(413)
  expect((await res.json()).code).toBe('file_too_large')
  expect(sent).toBeLessThan(total / 2)
})

test("past the organisation's quota an upload is 409 quota_exceeded; other organisations are not affected", async () => {
  const owner = await userWithRole(h.t, 'owner')
  const auth = bearer(owner.token)
  const text = 'y'.repeat(60 * 1024)
  expect((await upload(h.url, auth, [{ bytes: text, filename: 'a.txt', type: 'text/plain' }])).status).toBe(201)
  const refused = await upload(h.url, auth, [{ bytes: text, filename: 'b.txt', type: 'text/plain' }])
  expect(refused.status).toBe(409)
  const problem = await refused.json()
  expect(problem.code).toBe('quota_exceeded')
  expect(problem.quotaBytes).toBe(100 * 1024)
  const other = await userWithRole(h.t, 'owner')
  expect((await upload(h.url, bearer(other.token), [{ bytes: text, filename: 'c.txt', type: 'text/plain' }])).status).toBe(201)
})

test('a file name with ../ and control characters is stored as its last segment, and the header stays one safe line', async () => {
  const res = await upload(h.url, h.headers, [{ bytes: 'notes', filename: '../../etc/pass\u0007wd\r\nX-Evil: 1"é.txt', type: 'text/plain' }])
  expect(res.status).toBe(201)
  const file = await res.json()
  expect(file.name).not.toContain('/')
  // biome-ignore lint/suspicious/noControlCharactersInRegex: the test looks for control characters
  expect(file.name).not.toMatch(/[\u0000-\u001f]/)
  const content = await fetch(`${h.url}/api/files/${file.id}/content`, { headers: h.headers })
  expect(content.headers.get('x-evil')).toBeNull()
  const disposition = content.headers.get('content-disposition')!
  expect(disposition).toStartWith('attachment; filename="')
  // biome-ignore lint/suspicious/noControlCharactersInRegex: the test looks for control characters
  expect(disposition).not.toMatch(/[\r\n\u0000-\u001f]/)
  expect(disposition).toContain(`filename*=UTF-8''${encodeURIComponent(file.name)}`)
  // The quoted fallback holds no quote, backslash or non-ASCII character of its own.
  const fallback = /filename="([^"]*)"/.exec(disposition)![1]!
  expect(fallback).toMatch(/^[\x20-\x7e]*$/)
})

test('an anonymous upload is 401 and says nothing about the body', async () => {
  const res = await upload(h.url, {}, [{ bytes: 'x', filename: 'x.txt', type: 'text/plain' }])
  expect(res.status).toBe(401)
  const body = await res.text()
  expect(body).not.toContain('file')
  expect(JSON.parse(body).errors).toBeUndefined()
})

test('a body with two files, or none, is 422 naming `file`', async () => {
  const two = await upload(h.url, h.headers, [
    { bytes: 'a', filename: 'a.txt', type: 'text/plain' },
    { bytes: 'b', filename: 'b.txt', type: 'text/plain' },
  ])
  const none = await upload(h.url, h.headers, [{ name: 'other', bytes: 'a', filename: 'a.txt', type: 'text/plain' }])
  const empty = await fetch(`${h.url}/api/files`, { method: 'POST', headers: h.headers, body: new FormData() })
  for (const res of [two, none, empty]) {
    expect(res.status).toBe(422)
    const problem = await res.json()
    expect(problem.code).toBe('validation_failed')
    expect(problem.errors.map((e: { field: string }) => e.field)).toContain('file')
  }
})

test('a JSON body is refused: the route takes multipart/form-data', async () => {
  const res = await fetch(`${h.url}/api/files`, { method: 'POST', headers: { ...h.headers, 'content-type': 'text/plain' }, body: 'hello' })
  expect(res.status).toBe(415)
  expect((await res.json()).detail).toContain('multipart/form-data')
})

test("another organisation's file is 404 to read, download and delete; a member who did not upload it may not delete it", async () => {
  const file = await upload(h.url, h.headers, [{ bytes: 'mine', filename: 'm.txt', type: 'text/plain' }]).then((r) => r.json())
  const stranger = bearer((await userWithRole(h.t, 'owner')).token)
  for (const path of [`/api/files/${file.id}`, `/api/files/${file.id}/content`])
    expect((await fetch(`${h.url}${path}`, { headers: stranger })).status).toBe(404)
  expect((await fetch(`${h.url}/api/files/${file.id}`, { method: 'DELETE', headers: stranger })).status).toBe(404)
  const orgId = (await fetch(`${h.url}/auth/me`, { headers: h.headers }).then((r) => r.json())).organizationId
  const member = bearer((await userWithRole(h.t, 'member', { orgId })).token)
  expect((await fetch(`${h.url}/api/files/${file.id}`, { headers: member })).status).toBe(200)
  expect((await fetch(`${h.url}/api/files/${file.id}`, { method: 'DELETE', headers: member })).status).toBe(403)
  const deleted = await fetch(`${h.url}/api/files/${file.id}`, { method: 'DELETE', headers: h.headers })
  expect(await deleted.json()).toEqual({ id: file.id, deleted: true })
  expect((await fetch(`${h.url}/api/files/${file.id}`, { headers: h.headers })).status).toBe(404)
})
