import { afterAll, beforeEach, describe, expect, test } from 'bun:test'
import { startGitServer } from '../fakes/git-server.ts'
import { startImportHarness } from './helpers.ts'

const TOKEN = 'gho_private-repository-token'
const asked: { userId: string; provider: string }[] = []
const tokens = new Map<string, string>()
const h = await startImportHarness({
  tokens: {
    async tokenFor(userId, provider) {
      asked.push({ userId, provider })
      return tokens.get(`${userId}:${provider}`)
    },
  },
})
// Another Git server, allowlisted but not the code-hosting provider: it must never see the user's token.
const elsewhere = startGitServer({ basicAuth: `x-access-token:${TOKEN}` })
afterAll(async () => {
  await h.close()
  await elsewhere.close()
})
beforeEach(() => {
  asked.length = 0
  tokens.clear()
})

h.git.createRepository('acme/secret', { 'src/secret.ts': 'export const hidden = 42\n' })
elsewhere.createRepository('acme/secret', { 'x.ts': 'export {}\n' })

describe('private repositories', () => {
  test('without a connected token the import fails with repository_access_denied', async () => {
    h.git.basicAuth = `x-access-token:${TOKEN}`
    try {
      const view = await h.importAndWait({ repository: 'acme/secret' })
      expect(view.status).toBe('failed')
      expect(view.error!.code).toBe('repository_access_denied')
      expect(view.error!.message).toContain('connect the code-hosting provider')
      expect(asked).toEqual([{ userId: h.member.user.id, provider: 'github' }])
      expect(h.workspaceOf(view).exists).toBe(false)
    } finally {
      h.git.basicAuth = undefined
    }
  })

  test("the user's stored token is sent as the password, username x-access-token", async () => {
    h.git.basicAuth = `x-access-token:${TOKEN}`
    tokens.set(`${h.member.user.id}:github`, TOKEN)
    try {
      const requestsBefore = h.git.requests.length
      const view = await h.importAndWait({ repository: 'acme/secret' })
      expect(view.status).toBe('succeeded')
      expect(h.index.calls.find((c) => c.repositoryId === view.repository.id)!.files.map((f) => f.path)).toEqual(['src/secret.ts'])
      const seen = h.git.requests.slice(requestsBefore)
      // The first request goes out without credentials; the 401 brings the token in.
      expect(seen[0]!.authorization).toBeNull()
      expect(seen.slice(1).every((r) => r.authorization === `Basic ${Buffer.from(`x-access-token:${TOKEN}`).toString('base64')}`)).toBe(true)
      // The token appears nowhere in what the service stored or answers.
      expect(JSON.stringify(view)).not.toContain(TOKEN)
      const stored = await h.t.deps.db.sql`SELECT * FROM codehost_imports`
      expect(JSON.stringify(stored)).not.toContain(TOKEN)
      const events = await h.t.deps.db.sql`SELECT data FROM codehost_import_events`
      expect(JSON.stringify(events)).not.toContain(TOKEN)
      expect(JSON.stringify(h.t.logs)).not.toContain(TOKEN)
    } finally {
      h.git.basicAuth = undefined
    }
  })

  test('a wrong token is repository_access_denied naming the refusal', async () => {
    h.git.basicAuth = `x-access-token:${TOKEN}`
    tokens.set(`${h.member.user.id}:github`, 'gho_revoked')
    try {
      const view = await h.importAndWait({ repository: 'acme/secret' })
      expect(view.error).toMatchObject({ code: 'repository_access_denied' })
      expect(view.error!.message).toContain('refused the stored token')
    } finally {
      h.git.basicAuth = undefined
    }
  })

  test('a host other than the code-hosting provider never gets the token', async () => {
    tokens.set(`${h.member.user.id}:github`, TOKEN)
    const harness = await startImportHarness({
      env: { IMPORT_ALLOW_HOSTS: `127.0.0.1:${elsewhere.port}` },
      tokens: {
        tokenFor: async (userId, provider) => {
          asked.push({ userId, provider })
          return TOKEN
        },
      },
    })
    try {
      const view = await harness.importAndWait({ repository: elsewhere.urlOf('acme/secret') })
      expect(view.error).toMatchObject({ code: 'repository_access_denied' })
      expect(asked).toEqual([])
      expect(elsewhere.requests.every((r) => r.authorization === null)).toBe(true)
    } finally {
      await harness.close()
    }
  })
})
