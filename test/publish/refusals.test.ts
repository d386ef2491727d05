/** Requests refused before anything is pushed: auth, scope, rate, connection, input, and GitHub's own refusals. */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { bearer } from '../helpers.ts'
import { LOGIN, sampleSite, startWorld, type Member, type PublishWorld } from './support.ts'

const site = sampleSite().files

describe('publishing refusals', () => {
  let w: PublishWorld
  let connected: Member
  beforeAll(async () => {
    w = await startWorld('sqlite', { PUBLISH_MAX_FILES: '5', PUBLISH_MAX_SITE_BYTES: '2000', RATE_LIMIT_INTEGRATIONS_PER_MINUTE: '12' })
    connected = await w.connectedMember()
  })
  afterAll(() => w.close())

  /** Requests the fakes received so far: nothing may reach GitHub or the git server for a refused input. */
  const traffic = () => w.api.requests.length + w.git.requests.length

  test('no bearer token is 401, a bad one too', async () => {
    const none = await w.t.send('POST', '/api/publish-codehost-pages', { repository: `${LOGIN}/site`, files: site })
    expect(none.status).toBe(401)
    expect((await none.json()).code).toBe('unauthenticated')
    const bad = await w.publish('not-a-token', { repository: `${LOGIN}/site`, files: site })
    expect(bad.status).toBe(401)
    expect((await bad.json()).code).toBe('invalid_token')
  })

  test('roles without integrations:write are 403 insufficient_scope', async () => {
    for (const role of ['viewer', 'billing'] as const) {
      const m = await w.member(role)
      const res = await w.publish(m.token, { repository: `${LOGIN}/site`, files: site })
      expect(res.status).toBe(403)
      expect(await res.json()).toMatchObject({ code: 'insufficient_scope', requiredScope: 'integrations:write' })
    }
  })

  test('a user without a GitHub connection is told to connect it (409), and GitHub is not called', async () => {
    const m = await w.member()
    const before = traffic()
    const res = await w.publish(m.token, { repository: `${LOGIN}/site`, files: site })
    expect(res.status).toBe(409)
    const body = await res.json()
    expect(body).toMatchObject({ code: 'codehost_not_connected', provider: 'github', connect: 'POST /api/integrations/github/auth' })
    expect(body.detail).toContain('POST /api/integrations/github/auth')
    expect(traffic()).toBe(before)
  })

  test('input problems are answered before GitHub or git is contacted', async () => {
    const before = traffic()
    const cases: [unknown, number, string, string][] = [
      [{ repository: `${LOGIN}/site`, files: [...site, { path: '../escape.html', content: 'x' }] }, 422, 'invalid_site', 'files.4.path'],
      [{ repository: `${LOGIN}/site`, files: [{ path: 'docs/index.html', content: 'x' }] }, 422, 'invalid_site', 'files'],
      [{ repository: `${LOGIN}/site`, files: [...site, { path: 'a', content: '' }, { path: 'b', content: '' }] }, 413, 'site_too_large', ''],
      [{ repository: `${LOGIN}/site`, files: [{ path: 'index.html', content: 'x'.repeat(2001) }] }, 413, 'site_too_large', ''],
      [{ repository: 'not a repository', files: site }, 422, 'validation_failed', 'repository'],
      [{ repository: `${LOGIN}/site`, branch: 'a..b', files: site }, 422, 'validation_failed', 'branch'],
      [{ repository: `${LOGIN}/site`, customDomain: '10.0.0.1', files: site }, 422, 'validation_failed', 'customDomain'],
      [{ repository: `${LOGIN}/site`, files: [] }, 422, 'validation_failed', 'files'],
      [{ repository: `${LOGIN}/site`, files: site, force: true }, 422, 'validation_failed', 'force'],
      [{ repository: `${LOGIN}/site`, files: [{ path: 'index.html', content: 'x', encoding: 'hex' }] }, 422, 'validation_failed', 'files.0.encoding'],
    ]
    for (const [body, status, code, field] of cases) {
      const res = await w.publish(connected.token, body)
      expect(res.status, JSON.stringify(body).slice(0, 120)).toBe(status)
      expect(res.headers.get('content-type')).toContain('application/problem+json')
      const problem = await res.json()
      expect(problem.code).toBe(code)
      if (field) expect(problem.errors.map((e: { field: string }) => e.field)).toContain(field)
    }
    expect(traffic()).toBe(before)
  })

  test('a missing repository of another account is 404 repository_not_found; nothing is created or pushed', async () => {
    const pushes = w.git.requests.length
    const res = await w.publish(connected.token, { repository: 'someone-else/site', files: site })
    expect(res.status).toBe(404)
    expect(await res.json()).toMatchObject({ code: 'repository_not_found', account: LOGIN })
    expect(w.api.repositoriesCreated).toBe(0)
    expect(w.git.requests.length).toBe(pushes)
  })

  test('a repository the account may only read is 403 codehost_forbidden before any push', async () => {
    w.existingRepository('someone-else', 'docs', { 'README.md': 'x' })
    const pushes = w.git.requests.length
    const res = await w.publish(connected.token, { repository: 'someone-else/docs', files: site })
    expect(res.status).toBe(403)
    expect(await res.json()).toMatchObject({ code: 'codehost_forbidden', repository: 'someone-else/docs' })
    expect(w.git.requests.length).toBe(pushes)
    expect(w.tip('someone-else', 'docs', 'gh-pages')).toBeUndefined()
  })

  test('a token GitHub no longer accepts is 409 codehost_not_connected', async () => {
    const m = await w.connectedMember()
    // GitHub answers 401 Bad credentials for a token revoked on its side.
    w.api.fail('GET', /^\/user$/, 401)
    const res = await w.publish(m.token, { repository: `${LOGIN}/site`, files: site })
    expect(res.status).toBe(409)
    expect((await res.json()).code).toBe('codehost_not_connected')
  })

  test('the integrations rate limit applies, with Retry-After', async () => {
    const m = await w.member()
    const statuses: number[] = []
    for (let i = 0; i < 12; i++)
      statuses.push((await w.t.send('POST', '/api/publish-codehost-pages', { repository: `${LOGIN}/site`, files: site }, bearer(m.token))).status)
    expect(statuses).toEqual(Array(12).fill(409))
    const limited = await w.publish(m.token, { repository: `${LOGIN}/site`, files: site })
    expect(limited.status).toBe(429)
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0)
  })
})
