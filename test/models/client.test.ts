/**
 * Models from outside, as a front end's model picker uses them: the service runs as its own process with two
 * providers (the OPENAI_* one and an OpenAI-compatible entry of MODEL_PROVIDERS, both the fake model), and every
 * call goes through openapi-fetch with the types openapi-typescript generates from the served document,
 * type-checked first. The organisation's default is chosen, used by a chat, refused to a member, and an unknown
 * model is a 422 naming those allowed.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { startFakeOpenAi, type FakeOpenAi } from '../fakes/openai.ts'
import { tempDir } from '../helpers.ts'
import { scratchDir, typedClient } from '../openapi/support.ts'
import { fromSource, runToEnd, startService, type RunningService } from '../operators/processes.ts'

const OWNER = { email: 'owner@example.com', password: 'owner-password-1234' }
const MEMBER = { email: 'member@example.com', password: 'member-password-1234' }

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
    async models(token: string) {
      const { data, response } = await client.GET('/api/models', { headers: auth(token) })
      return { status: response.status, ids: data?.models.map((m) => m.id), marked: data?.models.filter((m) => m.default).map((m) => m.id), default: data?.default }
    },
    async choose(token: string, model: string | null) {
      const { data, error, response } = await client.PUT('/api/org/model', { body: { model }, headers: auth(token) })
      return { status: response.status, default: data?.default, code: error?.code, fields: error?.errors?.map((e) => e.field) }
    },
  }
}
`

interface Flows {
  signIn(email: string, password: string): Promise<string>
  models(token: string): Promise<{ status: number; ids?: string[]; marked?: string[]; default?: string }>
  choose(token: string, model: string | null): Promise<{ status: number; default?: string; code?: string; fields?: string[] }>
}

describe('models through a generated openapi-fetch client, against a running service', () => {
  const data = tempDir('models-client-')
  const scratch = scratchDir('models-client-')
  let model: FakeOpenAi
  let service: RunningService
  let api: Flows
  let owner: string
  let member: string

  const chat = (token: string, body: Record<string, unknown>) =>
    fetch(`${service.url}/api/chat`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body: JSON.stringify({ messages: [{ role: 'user', content: 'which model?' }], ...body }),
    })

  beforeAll(async () => {
    model = startFakeOpenAi()
    const env = {
      DATA_DIR: data.path,
      ADMIN_EMAIL: OWNER.email,
      ADMIN_PASSWORD: OWNER.password,
      OPENAI_BASE_URL: model.baseUrl,
      CHAT_MODEL: 'fake-model',
      CHAT_SEARCH_AUGMENTATION: 'false',
      MODEL_PROVIDERS: JSON.stringify([{ name: 'local', kind: 'openai-compatible', baseUrl: model.baseUrl, apiKey: 'local-key', models: ['alpha', 'beta'] }]),
    }
    // The start creates the owner's organisation; the member joins it.
    service = await startService(fromSource([]), env)
    const orgs = await runToEnd(fromSource(['orgs', 'list'], 'src/main/cli.ts'), env)
    expect(orgs.exitCode).toBe(0)
    const orgId = orgs.stdout.split('\t')[0]!
    const created = await runToEnd(
      fromSource(['users', 'create', '--email', MEMBER.email, '--password', MEMBER.password, '--role', 'member', '--org', orgId], 'src/main/cli.ts'),
      env,
    )
    expect(created.exitCode).toBe(0)
    api = await typedClient<Flows>(service.url, scratch, FLOWS)
    owner = await api.signIn(OWNER.email, OWNER.password)
    member = await api.signIn(MEMBER.email, MEMBER.password)
  }, 120_000)
  afterAll(async () => {
    await service?.stop()
    await model?.close()
    scratch.remove()
    data.remove()
  })

  test("the list, the organisation's default chosen by its owner and used by a chat, and back to the service's", async () => {
    expect(await api.models(owner)).toEqual({ status: 200, ids: ['fake-model', 'local/alpha', 'local/beta'], marked: ['fake-model'], default: 'fake-model' })
    expect(await api.choose(owner, 'local/beta')).toMatchObject({ status: 200, default: 'local/beta' })
    // Every member of the organisation sees it.
    expect(await api.models(member)).toMatchObject({ marked: ['local/beta'], default: 'local/beta' })
    const answered = await chat(member, {})
    expect(answered.status).toBe(200)
    await answered.text()
    expect(model.completions.at(-1)!.model).toBe('beta')
    expect(await api.choose(owner, null)).toMatchObject({ status: 200, default: 'fake-model' })
  })

  test('hostile calls are refused: a member choosing, a model nobody offers, a chat naming one, no token', async () => {
    expect(await api.choose(member, 'local/alpha')).toMatchObject({ status: 403 })
    expect(await api.choose(owner, 'gpt-4o')).toMatchObject({ status: 422, fields: ['model'] })
    const refused = await chat(owner, { model: 'local/gamma' })
    expect(refused.status).toBe(422)
    const problem = (await refused.json()) as { code: string; detail: string }
    expect(problem.code).toBe('validation_failed')
    expect(problem.detail).toContain('local/alpha')
    expect((await fetch(`${service.url}/api/models`)).status).toBe(401)
    expect(await api.models(owner)).toMatchObject({ default: 'fake-model' })
  })
})
