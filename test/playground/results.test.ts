/**
 * The playground's agent results and Markdown in Chromium: a develop task on an imported repository shows its diff,
 * each check with its verdict, its branch and its summary; a result whose checks failed is labelled Failed (develop
 * and debug alike); a model's Markdown is rendered, and what it carries of HTML or script links is left inert.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { Browser, Page } from 'playwright-core'
import { call } from '../agents/helpers.ts'
import { chromiumAvailable, launchChromium } from '../chromium.ts'
import { startFakeOpenAi, type FakeOpenAi } from '../fakes/openai.ts'
import { startGitServer, type GitServer } from '../fakes/git-server.ts'
import { ADMIN, login, makeApp, type TestApp } from '../helpers.ts'

const available = chromiumAvailable('browser test of the playground results')

const BROKEN = 'export const sum = (a: number, b: number) => a - b\n'
const TESTS = "import { expect, test } from 'bun:test'\nimport { sum } from './sum'\ntest('adds', () => expect(sum(2, 3)).toBe(5))\n"
const buggy = 'export function add(a: number, b: number) { return a - b }'
const addTests = "import { expect, test } from 'bun:test'\nimport { add } from './main'\ntest('adds', () => expect(add(2, 3)).toBe(5))\n"

describe.skipIf(!available)('agent results and Markdown in the playground', () => {
  let t: TestApp
  let model: FakeOpenAi
  let git: GitServer
  let browser: Browser
  let page: Page
  let importId: string
  const problems: string[] = []
  const dialogs: string[] = []

  beforeAll(async () => {
    model = startFakeOpenAi()
    git = startGitServer()
    t = await makeApp({
      ADMIN_EMAIL: ADMIN.email,
      ADMIN_PASSWORD: ADMIN.password,
      OPENAI_BASE_URL: model.baseUrl,
      CHAT_MODEL: 'fake-model',
      CHAT_SEARCH_AUGMENTATION: 'false',
      ENHANCED_CHAT_MAX_ATTEMPTS: '1',
      IMPORT_ALLOW_HOSTS: `127.0.0.1:${git.port}`,
      RATE_LIMIT_CHAT_PER_MINUTE: '100000',
      RATE_LIMIT_BURST: '100000',
    })
    t.app.listen({ hostname: '127.0.0.1', port: 0 })
    const origin = `http://127.0.0.1:${t.app.server!.port}`

    git.createRepository('acme/calc', { 'README.md': '# Calc\n', 'src/sum.ts': BROKEN, 'src/sum.test.ts': TESTS })
    const admin = await login(t, ADMIN.email, ADMIN.password)
    const started = await t.deps.imports.start({ orgId: admin.user.organizationId, userId: admin.user.id }, { repository: git.urlOf('acme/calc') })
    await t.deps.imports.settled(started.id)
    importId = started.id

    browser = await launchChromium()
    page = await (await browser.newContext()).newPage()
    page.on('console', (message) => {
      // A first visit has no session: the browser reports the refused POST /auth/refresh itself.
      if (message.type() === 'error' && !message.text().includes('status of 401')) problems.push(message.text())
    })
    page.on('pageerror', (error) => problems.push(error.message))
    page.on('dialog', (dialog) => {
      dialogs.push(dialog.message())
      void dialog.dismiss()
    })
    await page.goto(`${origin}/playground`)
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
    await git?.close()
  })

  const develop = async (instruction: string) => {
    await page.getByRole('tab', { name: 'Agent task' }).click()
    await page.selectOption('#agent [name="command"]', 'develop')
    const fields = page.locator('#agent fieldset[data-command="develop"]')
    await fields.locator('[name="instruction"]').fill(instruction)
    await fields.locator('[name="importId"]').fill(importId)
    await fields.locator('[name="checks"]').fill('bun test')
    await page.click('#agent [data-action="run"]')
  }

  test('a develop task shows its summary as Markdown, the branch, each check with its verdict and the diff as text', async () => {
    model.queue = [
      call('edit_file', { path: 'src/sum.ts', old_text: 'a - b', new_text: 'a + b' }),
      call('finish', { summary: '**Fixed:** `sum` now adds. <b onmouseover=alert(1)>' }),
    ]
    await develop('Make the tests pass')
    await page.locator('#agent .status[data-status="succeeded"]').waitFor({ timeout: 90_000 })
    expect(await page.locator('#agent .status').textContent()).toBe('Succeeded')
    const result = page.locator('#agent .result')
    expect(await result.locator('.summary strong').textContent()).toBe('Fixed:')
    expect(await result.locator('.summary code').textContent()).toBe('sum')
    expect(await result.locator('[onmouseover]').count()).toBe(0)
    expect(await result.locator('.branch').textContent()).toMatch(/^agent\/task_\w+$/)
    expect(await result.locator('.checks li').allTextContents()).toEqual([expect.stringMatching(/^bun test: passed \(exit 0\)/)])
    expect(await result.locator('.checks li').getAttribute('data-verdict')).toBe('passed')
    const diff = await result.locator('pre.diff').textContent()
    expect(diff).toContain('diff --git a/src/sum.ts b/src/sum.ts')
    expect(diff).toContain('-export const sum = (a: number, b: number) => a - b')
    expect(diff).toContain('+export const sum = (a: number, b: number) => a + b')
    expect(await result.locator('.files li').allTextContents()).toEqual(['modified: src/sum.ts'])
  })

  test('a develop task whose check fails is labelled Failed, not Succeeded', async () => {
    model.queue = [call('finish', { summary: 'Nothing changed.' })]
    await develop('Leave it as it is')
    await page.locator('#agent .status[data-status="failed"]').waitFor({ timeout: 90_000 })
    expect(await page.locator('#agent .status').textContent()).toBe('Failed')
    expect(await page.locator('#agent .result .checks li').getAttribute('data-verdict')).toBe('failed')
    expect(await page.locator('#agent .result pre.diff').textContent()).toBe('(no changes)')
  })

  test('a debug task whose fix did not pass is labelled Failed, and its explanation is Markdown', async () => {
    model.queue = [{ text: '{"steps": ["Fix add"]}' }, { text: `**Result:** still wrong\n\`\`\`ts\n${buggy}\n\`\`\`\n` }]
    await page.selectOption('#agent [name="command"]', 'debug')
    const fields = page.locator('#agent fieldset[data-command="debug"]')
    await fields.locator('[name="code"]').fill(buggy)
    await fields.locator('[name="error"]').fill('add(2, 3) returned -1')
    await fields.locator('[name="tests"]').fill(addTests)
    await page.click('#agent [data-action="run"]')
    await page.locator('#agent .status[data-status="failed"]').waitFor({ timeout: 90_000 })
    expect(await page.locator('#agent .status').textContent()).toBe('Failed')
    expect(await page.locator('#agent .result [data-passed]').textContent()).toBe('No fix passed its checks')
    expect(await page.locator('#agent .result [data-passed]').getAttribute('data-passed')).toBe('false')
  })

  test('a chat answer is rendered as Markdown, and its HTML and script links are inert', async () => {
    model.queue = [
      {
        text: '**bold** and *slanted*\n\n<img src=x onerror=alert(1)> <script>alert(2)</script> [x](javascript:alert(3)) [site](https://example.com/a)',
      },
    ]
    await page.getByRole('tab', { name: 'Chat', exact: true }).click()
    await page.fill('#chat [name="text"]', 'Show me Markdown')
    await page.click('#chat button[type="submit"]')
    await page.locator('#chat .status[data-status="ready"]').waitFor()
    const answer = page.locator('#chat .message[data-role="assistant"]').last().locator('[data-part="text"]')
    await answer.locator('strong').waitFor()
    expect(await answer.locator('strong').textContent()).toBe('bold')
    expect(await answer.locator('em').textContent()).toBe('slanted')
    expect(await answer.locator('img, script, [onerror]').count()).toBe(0)
    const hrefs = await answer.locator('a').evaluateAll((links) => links.map((a) => [a.textContent, a.getAttribute('href'), a.getAttribute('rel')]))
    expect(hrefs).toEqual([
      ['x', null, null],
      ['site', 'https://example.com/a', 'noopener noreferrer'],
    ])
    expect(await answer.innerHTML()).not.toContain('javascript:')
    // The HTML the model wrote is shown as the text it is.
    expect(await answer.textContent()).toContain('<img src=x onerror=alert(1)> <script>alert(2)</script>')
    // What the user typed stays text.
    expect(await page.locator('#chat .message[data-role="user"] [data-part="text"]').last().textContent()).toBe('Show me Markdown')
    await Bun.sleep(200)
    expect(dialogs).toEqual([])
    expect(problems).toEqual([])
  })
})
