/**
 * A develop task with push from the playground, in Chromium: the branch is pushed to the git server with the
 * signed-in user's GitHub connection (fakes for the OAuth provider and the code-host API), and the result links
 * the pull request the code host opened. A build_site task from the same page: the site is written, checked and
 * published, and the result links the address the Pages API reports.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { Browser, Page } from 'playwright-core'
import { call } from '../agents/helpers.ts'
import { chromiumAvailable, launchChromium } from '../chromium.ts'
import { startFakeOpenAi, type FakeOpenAi } from '../fakes/openai.ts'
import { startGitServer, type GitServer } from '../fakes/git-server.ts'
import { defaultAccount, startFakeOAuthProvider, type FakeOAuthProvider } from '../fakes/oauth-provider.ts'
import { startFakePagesApi, type FakePagesApi } from '../fakes/pages-api.ts'
import { ADMIN, login, makeApp, type TestApp } from '../helpers.ts'

const available = chromiumAvailable('browser test of a pull request from the playground')

const PUBLIC_BASE_URL = 'https://app.example'
const CLIENT = { id: 'gh-playground-client', secret: 'gh-playground-client-secret-0123456789' }

describe.skipIf(!available)('a pull request from the playground', () => {
  let t: TestApp
  let model: FakeOpenAi
  let git: GitServer
  let oauth: FakeOAuthProvider
  let api: FakePagesApi
  let browser: Browser
  let page: Page
  let importId: string

  beforeAll(async () => {
    model = startFakeOpenAi()
    git = startGitServer()
    oauth = startFakeOAuthProvider({ [CLIENT.id]: { secret: CLIENT.secret, redirectUri: `${PUBLIC_BASE_URL}/api/integrations/github/callback` } })
    // Without branchExists the fake takes every branch as there, so the pull request's base and head are.
    api = startFakePagesApi({
      accountOf: (token) => (oauth.issuedTokens.includes(token) ? { login: oauth.account.login, id: oauth.account.id } : undefined),
    })
    t = await makeApp({
      ADMIN_EMAIL: ADMIN.email,
      ADMIN_PASSWORD: ADMIN.password,
      OPENAI_BASE_URL: model.baseUrl,
      CHAT_MODEL: 'fake-model',
      PUBLIC_BASE_URL,
      GITHUB_CLIENT_ID: CLIENT.id,
      GITHUB_CLIENT_SECRET: CLIENT.secret,
      GITHUB_AUTHORIZE_URL: `${oauth.url}/login/oauth/authorize`,
      GITHUB_TOKEN_URL: `${oauth.url}/login/oauth/access_token`,
      GITHUB_API_URL: api.url,
      CODEHOST_GIT_URL: git.url,
      IMPORT_ALLOW_HOSTS: `127.0.0.1:${git.port}`,
    })
    t.app.listen({ hostname: '127.0.0.1', port: 0 })
    git.createRepository('acme/calc', { 'README.md': '# Calc\n', 'src/sum.ts': 'export const sum = (a: number, b: number) => a - b\n' })
    api.addRepository('acme', 'calc', { access: { [defaultAccount.login]: 'push' } })

    const admin = await login(t, ADMIN.email, ADMIN.password)
    const started = await t.deps.imports.start({ orgId: admin.user.organizationId, userId: admin.user.id }, { repository: git.urlOf('acme/calc') })
    await t.deps.imports.settled(started.id)
    importId = started.id
    const flow = await t.deps.integrations.begin(admin.user.id, 'github')
    const back = new URL(await oauth.authorize(flow.authorizationUrl))
    const outcome = await t.deps.integrations.complete(
      'github',
      { state: back.searchParams.get('state') ?? undefined, code: back.searchParams.get('code') ?? undefined },
      flow.binding,
    )
    if (!outcome.connected) throw new Error(`GitHub connection failed: ${outcome.error}`)
    git.basicAuth = `x-access-token:${await t.deps.integrations.tokenFor(admin.user.id, 'github')}`

    browser = await launchChromium()
    page = await (await browser.newContext()).newPage()
    await page.goto(`http://127.0.0.1:${t.app.server!.port}/playground`)
    await page.locator('body[data-session="signed-out"]').waitFor()
    await page.fill('#sign-in [name="email"]', ADMIN.email)
    await page.fill('#sign-in [name="password"]', ADMIN.password)
    await page.click('#sign-in button[type="submit"]')
    await page.locator('#workspace').waitFor()
  })

  afterAll(async () => {
    await browser?.close()
    await t?.app.stop(true)
    await t?.close()
    await model?.close()
    await api?.close()
    await oauth?.close()
    await git?.close()
  })

  test('the result links the pull request, opened outside the page', async () => {
    model.queue = [call('edit_file', { path: 'src/sum.ts', old_text: 'a - b', new_text: 'a + b' }), call('finish', { summary: 'sum now adds.' })]
    await page.getByRole('tab', { name: 'Agent task' }).click()
    await page.selectOption('#agent [name="command"]', 'develop')
    const fields = page.locator('#agent fieldset[data-command="develop"]')
    await fields.locator('[name="instruction"]').fill('Fix sum')
    await fields.locator('[name="importId"]').fill(importId)
    await fields.locator('[name="branch"]').fill('fix/sum')
    await fields.locator('[name="push"]').check()
    await page.click('#agent [data-action="run"]')
    await page.locator('#agent [data-action="run"]:enabled').waitFor({ timeout: 90_000 })
    expect(await page.locator('#agent .status').textContent()).toBe('Succeeded')

    const pulls = api.repository('acme', 'calc')!.pulls
    expect(pulls).toHaveLength(1)
    const link = page.locator('#agent .result a', { hasText: `#${pulls[0]!.number}` })
    expect(await link.getAttribute('href')).toBe(pulls[0]!.htmlUrl)
    expect(await link.getAttribute('rel')).toBe('noopener noreferrer')
    expect(await link.getAttribute('target')).toBe('_blank')
    expect(await page.locator('#agent .result .branch').textContent()).toBe('fix/sum')
    expect(await page.locator('#agent .result pre.diff').textContent()).toContain('+export const sum = (a: number, b: number) => a + b')
  })

  test('a build_site result shows its summary as Markdown and links the published site, opened outside the page', async () => {
    api.pagesDomains.set(defaultAccount.login.toLowerCase(), 'sites.example.org')
    git.createRepository(`${defaultAccount.login}/bakery`, { 'README.md': '# Bakery\n' })
    api.addRepository(defaultAccount.login, 'bakery', { access: { [defaultAccount.login]: 'admin' } })
    model.queue = [
      call('write_file', { path: 'index.html', content: '<!doctype html><title>Bakery</title><h1>Bakery</h1><a href="menu.html">Menu</a>' }),
      call('write_file', { path: 'menu.html', content: '<!doctype html><title>Menu</title><ul><li>Bread</ul><a href="index.html">Home</a>' }),
      call('finish', { summary: 'A **two-page** bakery site.' }),
    ]
    await page.getByRole('tab', { name: 'Agent task' }).click()
    await page.selectOption('#agent [name="command"]', 'build_site')
    const fields = page.locator('#agent fieldset[data-command="build_site"]')
    await fields.locator('[name="instruction"]').fill('A site for my bakery')
    await fields.locator('[name="repository"]').fill(`${defaultAccount.login}/bakery`)
    await page.click('#agent [data-action="run"]')
    await page.locator('#agent [data-action="run"]:enabled').waitFor({ timeout: 90_000 })
    expect(await page.locator('#agent .status').textContent()).toBe('Succeeded')
    expect(await page.locator('#agent .result strong', { hasText: 'two-page' }).count()).toBe(1)
    const site = page.locator('#agent .result a', { hasText: 'https://sites.example.org/bakery/' })
    expect(await site.getAttribute('href')).toBe('https://sites.example.org/bakery/')
    expect(await site.getAttribute('rel')).toBe('noopener noreferrer')
    expect(await site.getAttribute('target')).toBe('_blank')
  })
})
