import { afterAll, describe, expect, test } from 'bun:test'
import { bearer, type TestApp } from '../helpers.ts'
import { BACKENDS, callback, connect, integrationApp, quickUser, startConnect, startProvider } from './support.ts'

const fake = startProvider()
afterAll(() => fake.close())

describe.each(BACKENDS)('secrets on %s', (backend) => {
  test('provider tokens and PKCE verifiers never reach logs, responses, errors or stored rows in clear text', async () => {
    const t = await integrationApp(fake, backend)
    try {
      const responses: string[] = []
      const record = async (res: Response) => {
        responses.push(`${res.status} ${JSON.stringify([...res.headers])} ${await res.clone().text()}`)
        return res
      }
      const app: TestApp = { ...t, request: (path, init) => t.request(path, init).then(record), send: (...args) => t.send(...args).then(record) }
      const { token, user } = await quickUser(t)
      const issuedBefore = fake.issuedTokens.length

      // Short-lived tokens, so statuses and tokenFor refresh along the way.
      fake.accessTokenTtlSeconds = 30
      const started = await startConnect(app, token, 'github')
      const statesInFlight = await t.deps.db.sql`SELECT * FROM oauth_states`
      await callback(app, await fake.authorize(started.authorizationUrl), started.cookie)
      await connect(app, fake, token, 'supabase')
      await connect(app, fake, token, 'gitlab')
      for (const provider of ['github', 'supabase', 'gitlab'])
        expect((await (await app.request(`/api/integrations/${provider}/status`, { headers: bearer(token) })).json()).connected).toBe(true)
      expect(await t.deps.integrations.tokenFor(user.id, 'github')).toBeString()
      await app.request('/api/integrations', { headers: bearer(token) })
      // Failures: an upstream error, then a refused refresh.
      fake.failApi(503, 3, '0')
      expect((await app.request('/api/integrations/github/status?fresh=true', { headers: bearer(token) })).status).toBe(502)
      fake.revokeAll()
      expect((await (await app.request('/api/integrations/gitlab/status?fresh=true', { headers: bearer(token) })).json()).reason).toBe('refresh_failed')
      await app.request('/api/integrations/supabase', { method: 'DELETE', headers: bearer(token) })
      fake.accessTokenTtlSeconds = 3600

      const connections = await t.deps.db.sql`SELECT * FROM integration_connections`
      const states = await t.deps.db.sql`SELECT * FROM oauth_states`
      const tokens = fake.issuedTokens.slice(issuedBefore)
      const verifiers = fake.requests.map((r) => new URLSearchParams(r.body).get('code_verifier')).filter((v): v is string => !!v)
      // The scan would find them if they were there: there is plenty to look at, and in the right places.
      expect(tokens.length).toBeGreaterThanOrEqual(10)
      expect(verifiers.length).toBeGreaterThanOrEqual(3)
      expect(t.logs.some((line) => line.msg === 'integration token refreshed')).toBe(true)
      expect(statesInFlight.length).toBe(1)
      for (const row of connections) {
        expect(row.access_token).toStartWith('sb1.')
        if (row.refresh_token) expect(row.refresh_token).toStartWith('sb1.')
      }

      const haystacks = {
        logs: JSON.stringify(t.logs),
        responses: responses.join('\n'),
        connections: JSON.stringify(connections),
        states: JSON.stringify([...statesInFlight, ...states]),
      }
      for (const [where, text] of Object.entries(haystacks))
        for (const secret of [...tokens, ...verifiers]) expect(text.includes(secret), `${where} holds a secret`).toBe(false)
    } finally {
      fake.failApi(200, 0)
      fake.accessTokenTtlSeconds = 3600
      await t.close()
    }
  })
})
