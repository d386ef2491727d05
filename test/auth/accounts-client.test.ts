/**
 * API keys and passwords from outside, as a script or front end uses them: the service runs as its own process,
 * and every call goes through openapi-fetch with the types openapi-typescript generates from the document the
 * service serves (type-checked with tsc first, so a route or field the document lacks fails the test). The reset
 * link comes from the operator command, run as its own process against the same DATA_DIR.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { startResetWebhook } from '../fakes/reset-webhook.ts'
import { tempDir } from '../helpers.ts'
import { scratchDir, typedClient } from '../openapi/support.ts'
import { fromSource, runToEnd, startService, type RunningService } from '../operators/processes.ts'

const OWNER = { email: 'owner@example.com', password: 'owner-password-1234' }

/** The client code under test: typed calls only, each answering what a caller would look at. */
const FLOWS = `import createClient from 'openapi-fetch'
import type { paths } from './api.ts'

export function connect(baseUrl: string) {
  const client = createClient<paths>({ baseUrl })
  const auth = (token: string) => ({ authorization: \`Bearer \${token}\` })
  return {
    async signIn(email: string, password: string) {
      const { data, response } = await client.POST('/auth/login', { body: { email, password } })
      return { status: response.status, accessToken: data?.accessToken, refreshToken: data?.refreshToken }
    },
    async createKey(token: string, name: string, scopes: ('chat:write' | 'audit:read' | 'billing:manage')[], expiresInDays?: number) {
      const { data, error, response } = await client.POST('/api/keys', { body: { name, scopes, expiresInDays }, headers: auth(token) })
      return { status: response.status, key: data?.key, id: data?.id, expiresAt: data?.expiresAt, code: error?.code, fields: error?.errors?.map((e) => e.field) }
    },
    async listKeys(token: string) {
      const { data, error, response } = await client.GET('/api/keys', { headers: auth(token) })
      return { status: response.status, keys: data?.keys, code: error?.code }
    },
    async revokeKey(token: string, keyId: string) {
      const { error, response } = await client.DELETE('/api/keys/{keyId}', { params: { path: { keyId } }, headers: auth(token) })
      return { status: response.status, code: error?.code }
    },
    async chats(token: string) {
      const { error, response } = await client.GET('/api/chats', { headers: auth(token) })
      return { status: response.status, code: error?.code, detail: error?.detail }
    },
    async auditLog(token: string) {
      const { data, error, response } = await client.GET('/api/audit-logs', { params: { query: { limit: 100 } }, headers: auth(token) })
      return { status: response.status, actions: data?.entries.map((e) => e.action), code: error?.code }
    },
    async whoAmI(token: string) {
      const { data, response } = await client.GET('/auth/me', { headers: auth(token) })
      return { status: response.status, source: data?.source, scopes: data?.scopes }
    },
    async changePassword(token: string, currentPassword: string, newPassword: string) {
      const { error, response } = await client.POST('/auth/password', { body: { currentPassword, newPassword }, headers: auth(token) })
      return { status: response.status, code: error?.code }
    },
    async resetPassword(token: string, newPassword: string) {
      const { error, response } = await client.POST('/auth/password/reset', { body: { token, newPassword } })
      return { status: response.status, code: error?.code }
    },
    async forgotPassword(email: string) {
      const { response } = await client.POST('/auth/password/forgot', { body: { email } })
      return { status: response.status }
    },
  }
}
`

type Result = { status: number; code?: string; detail?: string }

/** What the flows answer, for this file's own types. */
interface Flows {
  signIn(email: string, password: string): Promise<{ status: number; accessToken?: string; refreshToken?: string }>
  createKey(
    token: string,
    name: string,
    scopes: ('chat:write' | 'audit:read' | 'billing:manage')[],
    expiresInDays?: number,
  ): Promise<Result & { key?: string; id?: string; expiresAt?: number; fields?: string[] }>
  listKeys(token: string): Promise<Result & { keys?: { id: string; name: string }[] }>
  revokeKey(token: string, keyId: string): Promise<Result>
  chats(token: string): Promise<Result>
  auditLog(token: string): Promise<Result & { actions?: string[] }>
  whoAmI(token: string): Promise<{ status: number; source?: string; scopes?: string[] }>
  changePassword(token: string, currentPassword: string, newPassword: string): Promise<Result>
  resetPassword(token: string, newPassword: string): Promise<Result>
  forgotPassword(email: string): Promise<{ status: number }>
}

describe('API keys and passwords through a generated openapi-fetch client, against a running service', () => {
  const data = tempDir('accounts-client-')
  const scratch = scratchDir('accounts-client-')
  const webhook = startResetWebhook()
  const env = { DATA_DIR: data.path, ADMIN_EMAIL: OWNER.email, ADMIN_PASSWORD: OWNER.password, PASSWORD_RESET_WEBHOOK_URL: webhook.url }
  let service: RunningService
  let api: Flows

  beforeAll(async () => {
    service = await startService(fromSource([]), env)
    api = await typedClient<Flows>(service.url, scratch, FLOWS)
    // A process start, openapi-typescript and tsc: over half a minute on a loaded two-core machine.
  }, 120_000)
  afterAll(async () => {
    await service?.stop()
    await webhook.close()
    scratch.remove()
    data.remove()
  })

  test('a key is created, used within its scopes, listed without its secret, revoked, and its life is in the audit log', async () => {
    const owner = await api.signIn(OWNER.email, OWNER.password)
    expect(owner.status).toBe(200)
    const session = owner.accessToken!

    const created = await api.createKey(session, 'deploy script', ['chat:write'], 30)
    expect(created.status).toBe(201)
    expect(created.key).toStartWith('rak_')
    const key = created.key!

    expect(await api.whoAmI(key)).toEqual({ status: 200, source: 'api_key', scopes: ['chat:write'] })
    expect((await api.chats(key)).status).toBe(200)
    expect(await api.auditLog(key)).toMatchObject({ status: 403, code: 'insufficient_scope' })
    expect(await api.createKey(key, 'child', ['chat:write'])).toMatchObject({ status: 403, code: 'session_required' })
    expect(await api.changePassword(key, OWNER.password, 'a-password-from-a-key')).toMatchObject({ status: 403, code: 'session_required' })

    const listed = await api.listKeys(session)
    expect(listed.status).toBe(200)
    expect(listed.keys!.map((k) => k.id)).toContain(created.id!)
    expect(JSON.stringify(listed.keys)).not.toContain(key.slice(41))

    expect((await api.revokeKey(session, created.id!)).status).toBe(204)
    expect(await api.chats(key)).toMatchObject({ status: 401, code: 'invalid_token', detail: 'API key revoked' })
    const audit = await api.auditLog(session)
    expect(audit.actions).toEqual(expect.arrayContaining(['api_key.created', 'api_key.revoked']))
  })

  test('hostile calls are refused: a guessed secret, an anonymous caller, an expiry out of range', async () => {
    const session = (await api.signIn(OWNER.email, OWNER.password)).accessToken!
    const created = await api.createKey(session, 'real', ['chat:write'])
    const guessed = `${created.key!.slice(0, 41)}${'x'.repeat(43)}`
    expect(await api.chats(guessed)).toMatchObject({ status: 401, code: 'invalid_token', detail: 'unknown API key' })
    expect(await api.createKey('', 'anonymous', ['chat:write'])).toMatchObject({ status: 401 })
    expect(await api.createKey(session, 'bad', ['chat:write'], 0)).toMatchObject({ status: 422, fields: ['expiresInDays'] })
  })

  test('a password change keeps the caller signed in; a reset link from the operator command works once', async () => {
    const first = await api.signIn(OWNER.email, OWNER.password)
    const second = await api.signIn(OWNER.email, OWNER.password)
    const changed = 'a-changed-owner-password'
    expect(await api.changePassword(first.accessToken!, 'wrong-password', changed)).toMatchObject({ status: 403, code: 'wrong_password' })
    expect((await api.changePassword(first.accessToken!, OWNER.password, changed)).status).toBe(204)
    expect((await api.whoAmI(first.accessToken!)).status).toBe(200)
    expect((await api.whoAmI(second.accessToken!)).status).toBe(401)

    const command = await runToEnd(fromSource(['users', 'reset-password', '--email', OWNER.email], 'src/main/cli.ts'), env)
    expect(command.exitCode).toBe(0)
    const link = new URL(command.stdout.split('\n')[0]!)
    expect(link.pathname).toBe('/reset-password')
    const token = link.searchParams.get('token')!
    const reset = 'a-reset-owner-password-1'
    expect((await api.resetPassword(token, reset)).status).toBe(204)
    expect(await api.resetPassword(token, 'a-second-reset-attempt')).toMatchObject({ status: 403, code: 'invalid_reset_token' })
    expect((await api.whoAmI(first.accessToken!)).status).toBe(401)
    expect((await api.signIn(OWNER.email, reset)).status).toBe(200)

    expect((await api.forgotPassword(OWNER.email)).status).toBe(202)
    const message = await webhook.next()
    expect(message).toMatchObject({ type: 'password_reset', email: OWNER.email })
  })
})
