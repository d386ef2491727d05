/** Opening pull requests through the code-host API client, against the fake's POST /repos/{owner}/{repo}/pulls. */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createHttpClient } from '../../src/http.ts'
import { createPagesApi } from '../../plugins/publish/pages-api.ts'
import { startFakePagesApi, type FakePagesApi } from '../fakes/pages-api.ts'

const TOKEN = 'gho_pull-requests-token'

describe('pull requests at the code-host API', () => {
  let fake: FakePagesApi
  let api: ReturnType<typeof createPagesApi>
  beforeAll(() => {
    fake = startFakePagesApi({
      accountOf: (token) => (token === TOKEN ? { login: 'octo', id: 7 } : undefined),
      branchExists: (_, branch) => branch === 'main' || branch === 'fix/a',
    })
    fake.addRepository('acme', 'calc', { access: { octo: 'push' } })
    fake.addRepository('acme', 'readonly')
    api = createPagesApi({ http: createHttpClient({ timeoutMs: 5000 }), apiUrl: fake.url })
  })
  afterAll(() => fake.close())

  test('a pull request is opened with its number and address; a second one for the same head is answered as existing', async () => {
    const first = await api.openPullRequest(TOKEN, 'acme', 'calc', { head: 'fix/a', base: 'main', title: 'Fix a', body: 'Why' })
    expect(first).toEqual({ number: 1, url: 'https://github.com/acme/calc/pull/1' })
    expect(fake.repository('acme', 'calc')!.pulls[0]).toMatchObject({ head: 'fix/a', base: 'main', title: 'Fix a', body: 'Why', user: 'octo' })
    expect(await api.openPullRequest(TOKEN, 'acme', 'calc', { head: 'fix/a', base: 'main', title: 'Again', body: '' })).toBe('exists')
    expect(fake.repository('acme', 'calc')!.pulls).toHaveLength(1)
  })

  test('a missing head branch is an upstream error naming the 422; no push rights is codehost_forbidden', async () => {
    await expect(api.openPullRequest(TOKEN, 'acme', 'calc', { head: 'nowhere', base: 'main', title: 'x', body: '' })).rejects.toMatchObject({
      code: 'upstream_error',
      message: expect.stringContaining('422'),
    })
    await expect(api.openPullRequest(TOKEN, 'acme', 'readonly', { head: 'fix/a', base: 'main', title: 'x', body: '' })).rejects.toMatchObject({
      code: 'codehost_forbidden',
    })
  })
})
