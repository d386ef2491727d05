/**
 * Listing, renaming and deleting chats from outside, as a front end does it: the service runs as its own process
 * (with a fake model provider) and every call goes through openapi-fetch with the types openapi-typescript
 * generates from the document the service serves, type-checked first, so a route, parameter or field the document
 * lacks fails the test.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { startFakeOpenAi, type FakeOpenAi } from '../fakes/openai.ts'
import { tempDir } from '../helpers.ts'
import { scratchDir, typedClient } from '../openapi/support.ts'
import { fromSource, startService, type RunningService } from '../operators/processes.ts'

const OWNER = { email: 'owner@example.com', password: 'owner-password-1234' }

/** The client code under test: typed calls only, each answering what a caller would look at. */
const FLOWS = `import createClient from 'openapi-fetch'
import type { paths } from './api.ts'

export function connect(baseUrl: string) {
  const client = createClient<paths>({ baseUrl })
  const auth = (token: string) => ({ authorization: \`Bearer \${token}\` })
  return {
    async signIn(email: string, password: string) {
      const { data } = await client.POST('/auth/login', { body: { email, password } })
      return data!.accessToken
    },
    async list(token: string, query: { limit?: number; cursor?: string; q?: string } = {}) {
      const { data, error, response } = await client.GET('/api/chats', { params: { query }, headers: auth(token) })
      return { status: response.status, ids: data?.chats.map((c) => c.id), titles: data?.chats.map((c) => c.title), nextCursor: data?.nextCursor, code: error?.code, fields: error?.errors?.map((e) => e.field) }
    },
    async rename(token: string, id: string, title: string) {
      const { data, error, response } = await client.PATCH('/api/chat/{id}', { params: { path: { id } }, body: { title }, headers: auth(token) })
      return { status: response.status, title: data?.title, code: error?.code }
    },
    async remove(token: string, id: string) {
      const { error, response } = await client.DELETE('/api/chat/{id}', { params: { path: { id } }, headers: auth(token) })
      return { status: response.status, code: error?.code }
    },
    async read(token: string, id: string) {
      const { data, error, response } = await client.GET('/api/chat/{id}', { params: { path: { id } }, headers: auth(token) })
      return { status: response.status, title: data?.title, code: error?.code }
    },
  }
}
`

interface Flows {
  signIn(email: string, password: string): Promise<string>
  list(
    token: string,
    query?: { limit?: number; cursor?: string; q?: string },
  ): Promise<{ status: number; ids?: string[]; titles?: string[]; nextCursor?: string | null; code?: string; fields?: string[] }>
  rename(token: string, id: string, title: string): Promise<{ status: number; title?: string; code?: string }>
  remove(token: string, id: string): Promise<{ status: number; code?: string }>
  read(token: string, id: string): Promise<{ status: number; title?: string; code?: string }>
}

describe('chats listed, renamed and deleted through a generated openapi-fetch client, against a running service', () => {
  const data = tempDir('chat-client-')
  const scratch = scratchDir('chat-client-')
  let model: FakeOpenAi
  let service: RunningService
  let api: Flows
  let token: string

  const newChat = async (id: string, text: string) => {
    const res = await fetch(`${service.url}/api/chat`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body: JSON.stringify({ id, messages: [{ role: 'user', content: text }] }),
    })
    expect(res.status).toBe(200)
    await res.text()
  }

  beforeAll(async () => {
    model = startFakeOpenAi()
    service = await startService(fromSource([]), {
      DATA_DIR: data.path,
      ADMIN_EMAIL: OWNER.email,
      ADMIN_PASSWORD: OWNER.password,
      OPENAI_BASE_URL: model.baseUrl,
      CHAT_MODEL: 'fake-model',
      CHAT_SEARCH_AUGMENTATION: 'false',
      RATE_LIMIT_BURST: '100000',
      RATE_LIMIT_CHAT_PER_MINUTE: '100000',
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

  test('pages, a search, a rename and a delete, as a sidebar uses them', async () => {
    for (let i = 1; i <= 5; i++) await newChat(`client-${i}`, `question ${i} about 100% coverage`)
    await newChat('client-other', 'something else')

    const first = await api.list(token, { limit: 4 })
    expect(first).toMatchObject({ status: 200, ids: ['client-other', 'client-5', 'client-4', 'client-3'] })
    const second = await api.list(token, { limit: 4, cursor: first.nextCursor! })
    expect(second).toMatchObject({ status: 200, ids: ['client-2', 'client-1'], nextCursor: null })

    expect((await api.list(token, { q: '100%' })).ids).toEqual(['client-5', 'client-4', 'client-3', 'client-2', 'client-1'])
    expect((await api.list(token, { q: '0_%' })).ids).toEqual([])

    expect(await api.rename(token, 'client-3', 'Coverage, renamed')).toEqual({ status: 200, title: 'Coverage, renamed', code: undefined })
    expect((await api.read(token, 'client-3')).title).toBe('Coverage, renamed')

    expect((await api.remove(token, 'client-3')).status).toBe(204)
    expect(await api.read(token, 'client-3')).toMatchObject({ status: 404, code: 'not_found' })
    expect(await api.remove(token, 'client-3')).toMatchObject({ status: 404, code: 'not_found' })
    expect((await api.list(token)).ids).toEqual(['client-other', 'client-5', 'client-4', 'client-2', 'client-1'])
  })

  test('hostile calls are refused: a tampered cursor, a limit out of range, no token', async () => {
    const page = await api.list(token, { limit: 1 })
    const tampered = Buffer.from(JSON.stringify([Number.MAX_SAFE_INTEGER, "x' OR '1'='1"])).toString('base64url')
    expect(await api.list(token, { cursor: tampered })).toMatchObject({ status: 422, code: 'validation_failed', fields: ['cursor'] })
    expect(await api.list(token, { cursor: `${page.nextCursor}A` })).toMatchObject({ status: 422, fields: ['cursor'] })
    expect(await api.list(token, { limit: 101 })).toMatchObject({ status: 422, fields: ['limit'] })
    expect(await api.list(token, { limit: 0 })).toMatchObject({ status: 422, fields: ['limit'] })
    expect(await api.list('', { limit: 0 })).toMatchObject({ status: 401, fields: undefined })
    expect(await api.rename('', 'client-1', '')).toMatchObject({ status: 401 })
    expect(await api.remove('', 'client-1')).toMatchObject({ status: 401 })
  })
})
