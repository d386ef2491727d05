/**
 * Files from outside, as a front end uploads them: the service runs as its own process and every call goes through
 * openapi-fetch with the types openapi-typescript generates from the served document, type-checked first (the upload
 * as multipart/form-data through the client's body serializer). A file is uploaded, read, attached to a chat by id
 * and deleted; hostile uploads are refused with their codes.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { startFakeOpenAi, type FakeOpenAi } from '../fakes/openai.ts'
import { tempDir } from '../helpers.ts'
import { scratchDir, typedClient } from '../openapi/support.ts'
import { fromSource, startService, type RunningService } from '../operators/processes.ts'

const OWNER = { email: 'owner@example.com', password: 'owner-password-1234' }

const FLOWS = `import createClient from 'openapi-fetch'
import type { paths } from './api.ts'

export function connect(baseUrl: string) {
  const client = createClient<paths>({ baseUrl })
  const auth = (token?: string) => (token ? { authorization: \`Bearer \${token}\` } : {})
  return {
    async signIn(email: string, password: string) {
      const { data } = await client.POST('/auth/login', { body: { email, password } })
      return data!.accessToken
    },
    async upload(token: string | undefined, file: File) {
      const { data, error, response } = await client.POST('/api/files', {
        // The document types the part as a binary string; the browser's FormData carries the File itself.
        body: { file: file as unknown as string },
        bodySerializer(body) {
          const form = new FormData()
          form.append('file', body.file as unknown as File)
          return form
        },
        headers: auth(token),
      })
      return { status: response.status, id: data?.id, name: data?.name, mediaType: data?.mediaType, size: data?.size, code: error?.code }
    },
    async info(token: string, id: string) {
      const { data, error, response } = await client.GET('/api/files/{id}', { params: { path: { id } }, headers: auth(token) })
      return { status: response.status, name: data?.name, code: error?.code }
    },
    async content(token: string, id: string) {
      const { data, response } = await client.GET('/api/files/{id}/content', { params: { path: { id } }, headers: auth(token), parseAs: 'text' })
      return { status: response.status, text: data as string | undefined, disposition: response.headers.get('content-disposition'), sniffing: response.headers.get('x-content-type-options') }
    },
    async remove(token: string, id: string) {
      const { response } = await client.DELETE('/api/files/{id}', { params: { path: { id } }, headers: auth(token) })
      return { status: response.status }
    },
  }
}
`

interface Flows {
  signIn(email: string, password: string): Promise<string>
  upload(token: string | undefined, file: File): Promise<{ status: number; id?: string; name?: string; mediaType?: string; size?: number; code?: string }>
  info(token: string, id: string): Promise<{ status: number; name?: string; code?: string }>
  content(token: string, id: string): Promise<{ status: number; text?: string; disposition: string | null; sniffing: string | null }>
  remove(token: string, id: string): Promise<{ status: number }>
}

describe('files through a generated openapi-fetch client, against a running service', () => {
  const data = tempDir('files-client-')
  const scratch = scratchDir('files-client-')
  let model: FakeOpenAi
  let service: RunningService
  let api: Flows
  let token: string

  beforeAll(async () => {
    model = startFakeOpenAi()
    service = await startService(fromSource([]), {
      DATA_DIR: data.path,
      ADMIN_EMAIL: OWNER.email,
      ADMIN_PASSWORD: OWNER.password,
      OPENAI_BASE_URL: model.baseUrl,
      CHAT_MODEL: 'fake-model',
      CHAT_SEARCH_AUGMENTATION: 'false',
      FILES_MAX_BYTES: String(64 * 1024),
    })
    api = await typedClient<Flows>(service.url, scratch, FLOWS)
    token = await api.signIn(OWNER.email, OWNER.password)
  }, 120_000)
  afterAll(async () => {
    await service?.stop()
    await model?.close()
    scratch.remove()
    data.remove()
  })

  test('a text file is uploaded, read as a download, attached to a chat by id, and deleted', async () => {
    const notes = 'Release notes: the ledger reconciles nightly.\n'
    const uploaded = await api.upload(token, new File([notes], 'notes.txt', { type: 'text/plain' }))
    expect(uploaded).toMatchObject({ status: 201, name: 'notes.txt', mediaType: 'text/plain', size: notes.length })
    const id = uploaded.id!
    expect(await api.info(token, id)).toMatchObject({ status: 200, name: 'notes.txt' })
    const read = await api.content(token, id)
    expect(read).toMatchObject({ status: 200, text: notes, sniffing: 'nosniff' })
    expect(read.disposition).toStartWith('attachment')

    const chat = await fetch(`${service.url}/api/chat`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body: JSON.stringify({
        messages: [
          {
            id: 'm1',
            role: 'user',
            parts: [
              { type: 'text', text: 'Summarise the attached notes' },
              { type: 'file', mediaType: 'text/plain', url: `file:${id}` },
            ],
          },
        ],
      }),
    })
    expect(chat.status).toBe(200)
    await chat.text()
    expect(JSON.stringify(model.completions.at(-1)!.messages)).toContain('the ledger reconciles nightly')

    expect((await api.remove(token, id)).status).toBe(200)
    expect(await api.info(token, id)).toMatchObject({ status: 404, code: 'not_found' })
  })

  test('hostile uploads are refused: HTML dressed as an image, a file over the limit, no token', async () => {
    const html = new File(['<html><script>alert(1)</script></html>'], 'cat.png', { type: 'image/png' })
    expect(await api.upload(token, html)).toMatchObject({ status: 415, code: 'unsupported_file_type' })
    const big = new File([new Uint8Array(128 * 1024).fill(65)], 'big.txt', { type: 'text/plain' })
    expect(await api.upload(token, big)).toMatchObject({ status: 413, code: 'file_too_large' })
    expect((await api.upload(undefined, new File(['x'], 'x.txt', { type: 'text/plain' }))).status).toBe(401)
  })
})
