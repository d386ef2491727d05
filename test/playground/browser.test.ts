/** The playground driven in Chromium: sign in, chat, enhanced chat, and agent tasks run and cancelled. */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { chromiumAvailable, launchChromium } from '../chromium.ts'
import type { Browser, Page } from 'playwright-core'
import { eventually } from '../chat/helpers.ts'
import { startFakeOpenAi, type FakeOpenAi } from '../fakes/openai.ts'
import { startFakeSearxng, type FakeSearchEngine } from '../fakes/search-providers.ts'
import { ADMIN, makeApp, type TestApp } from '../helpers.ts'

const available = chromiumAvailable('browser test of the playground')

const addTests = `import { expect, test } from 'bun:test'
import { add } from './main'
test('adds', () => expect(add(2, 3)).toBe(5))
`
const fence = (code: string) => `Here is the code:\n\`\`\`ts\n${code}\n\`\`\`\n`
const buggy = 'export function add(a: number, b: number) { return a - b }'
const fixed = 'export function add(a: number, b: number) { return a + b }'

/** A promise and the function that settles it, to hold a scripted model stream mid-answer. */
function gate() {
  let open!: () => void
  const until = new Promise<void>((resolve) => (open = resolve))
  return { until, open }
}

describe.skipIf(!available)('the playground in a browser', () => {
  let t: TestApp
  let model: FakeOpenAi
  let search: FakeSearchEngine
  let browser: Browser
  let page: Page
  let origin: string
  const problems: string[] = []
  const elsewhere: string[] = []

  beforeAll(async () => {
    model = startFakeOpenAi()
    search = startFakeSearxng()
    t = await makeApp({
      ADMIN_EMAIL: ADMIN.email,
      ADMIN_PASSWORD: ADMIN.password,
      OPENAI_BASE_URL: model.baseUrl,
      CHAT_MODEL: 'fake-model',
      SEARXNG_URL: search.url,
      CHAT_CONFIDENCE_TOKENS: '4',
      RATE_LIMIT_CHAT_PER_MINUTE: '100000',
      RATE_LIMIT_BURST: '100000',
    })
    // Listening for real: the agent panel needs the WebSocket upgrade.
    t.app.listen({ hostname: '127.0.0.1', port: 0 })
    origin = `http://127.0.0.1:${t.app.server!.port}`
    browser = await launchChromium()
    page = await (await browser.newContext()).newPage()
    page.on('console', (message) => {
      if (message.type() === 'error') problems.push(message.text())
    })
    page.on('pageerror', (error) => problems.push(error.message))
    page.on('request', (request) => {
      const url = new URL(request.url())
      if (url.host !== new URL(origin).host) elsewhere.push(request.url())
    })
    const response = await page.goto(`${origin}/playground`)
    expect(response!.status()).toBe(200)
    // The page asks for the browser's session first (POST /auth/refresh); a first visit has none, a 401 the browser reports.
    await page.locator('body[data-session="signed-out"]').waitFor()
    expect(problems.splice(0)).toEqual(['Failed to load resource: the server responded with a status of 401 (Unauthorized)'])
  })

  afterAll(async () => {
    await browser?.close()
    await t?.app.stop(true)
    await t?.close()
    await model?.close()
    await search?.close()
  })

  const tab = (name: string) => page.getByRole('tab', { name }).click()
  const assistant = (panel: string) => page.locator(`#${panel} .message[data-role="assistant"]`).last()

  test('a wrong password is refused with the reason, and the right one opens the workspace', async () => {
    await page.fill('#sign-in [name="email"]', ADMIN.email)
    await page.fill('#sign-in [name="password"]', 'not the password')
    await page.click('#sign-in button[type="submit"]')
    await page.locator('#sign-in-error', { hasText: 'Sign-in failed: 401' }).waitFor()
    expect(await page.locator('#workspace').isVisible()).toBe(false)
    // The browser reports the refused request itself; nothing else has gone wrong so far.
    expect(problems.splice(0)).toEqual(['Failed to load resource: the server responded with a status of 401 (Unauthorized)'])

    await page.fill('#sign-in [name="password"]', ADMIN.password)
    await page.click('#sign-in button[type="submit"]')
    await page.locator('#workspace').waitFor()
    expect(await page.locator('#who').textContent()).toBe(`Signed in as ${ADMIN.email}`)
    expect(await page.locator('#sign-in').isVisible()).toBe(false)
  })

  test('chat streams the answer as it is written, with the tool call, its sources and the search decision', async () => {
    const held = gate()
    model.queue = [
      { toolCalls: [{ name: 'web_search', arguments: JSON.stringify({ query: 'bun sql' }) }] },
      { text: 'Bun ships a SQL client [1].', logprobs: [-0.01, -0.01, -0.01, -0.01, -0.01, -0.01], pause: { after: 2, until: held.until } },
    ]
    await page.fill('#chat [name="text"]', 'What does Bun ship for SQL?')
    await page.click('#chat button[type="submit"]')
    // Held mid-answer: the first words are on the page while the rest is still being written.
    await assistant('chat').locator('[data-part="text"]', { hasText: 'Bun ships' }).waitFor()
    expect(await assistant('chat').locator('[data-part="text"]').textContent()).toBe('Bun ships ')
    expect(await page.locator('#chat .status').getAttribute('data-status')).toBe('streaming')
    expect(await page.locator('#chat [data-action="stop"]').isEnabled()).toBe(true)
    held.open()
    await assistant('chat').locator('[data-part="text"]', { hasText: 'Bun ships a SQL client [1].' }).waitFor()
    await page.locator('#chat .status[data-status="ready"]').waitFor()

    const tool = assistant('chat').locator('[data-part="tool"][data-tool="web_search"]')
    expect(await tool.getAttribute('data-state')).toBe('output-available')
    expect(await tool.locator('.input').textContent()).toContain('"query": "bun sql"')
    const source = assistant('chat').locator('[data-part="sources"] a').first()
    expect(await source.getAttribute('href')).toBe('https://bun.sh/docs/api/sql')
    expect(await source.getAttribute('rel')).toBe('noopener noreferrer')
    const decision = assistant('chat').locator('[data-part="search-decision"]')
    expect(await decision.getAttribute('data-decision')).toBe('answer')
    expect(await decision.textContent()).toContain('the model called a tool')
    expect(await page.locator('#chat .message[data-role="user"]').textContent()).toContain('What does Bun ship for SQL?')
  })

  test('an unsure draft gives way to a search-grounded answer, and the search decision says why', async () => {
    await page.click('#chat [data-action="new"]')
    expect(await page.locator('#chat .message').count()).toBe(0)
    model.queue = [{ text: 'Maybe it is Lyon or so.', logprobs: Array(4).fill(Math.log(0.5)) }, { text: 'It is Paris [1].' }]
    await page.fill('#chat [name="text"]', 'capital of France?')
    await page.click('#chat button[type="submit"]')
    await page.locator('#chat .status[data-status="ready"]').waitFor()
    const decision = assistant('chat').locator('[data-part="search-decision"]')
    expect(await decision.getAttribute('data-decision')).toBe('search')
    expect(await decision.textContent()).toMatch(
      /^Searching the web: confidence below the threshold \(confidence 0\.50, threshold 0\.8, logprobs over [1-4] tokens\)$/,
    )
    // The draft was withdrawn (reset-step): only the grounded answer is left, with its sources.
    expect(await assistant('chat').locator('[data-part="text"]').allTextContents()).toEqual(['It is Paris [1].'])
    expect(await assistant('chat').locator('[data-part="sources"] a').count()).toBeGreaterThan(0)
  })

  test('enhanced chat shows the plan, each step and every check as they happen', async () => {
    model.queue = [{ text: '{"steps": ["Write add"]}' }, { text: fence(buggy) }, { text: fence(fixed) }]
    await tab('Enhanced chat')
    expect(await page.locator('#chat').isVisible()).toBe(false)
    await page.fill('#enhanced [name="text"]', 'write add(a, b)')
    await page.fill('#enhanced [name="tests"]', addTests)
    await page.click('#enhanced button[type="submit"]')
    await page.locator('#enhanced .status[data-status="ready"]').waitFor()
    await assistant('enhanced').locator('[data-part="text"]', { hasText: 'all code checks passed' }).waitFor()

    const plan = assistant('enhanced').locator('[data-part="plan"] li')
    expect(await plan.count()).toBe(1)
    expect(await plan.first().getAttribute('data-status')).toBe('passed')
    expect(await plan.first().textContent()).toContain('Write add')
    expect(await assistant('enhanced').locator('[data-part="step"]').last().textContent()).toBe('Step 1: Write add (passed · passed after 2 attempts)')
    const checks = assistant('enhanced').locator('[data-part="check"]')
    expect(await checks.evaluateAll((nodes) => nodes.map((n) => n.getAttribute('data-verdict')))).toEqual(['failed', 'passed'])
    expect(await checks.first().textContent()).toContain('Check of step 1, attempt 1 of 3 (test): failed')
    // The request carried the tests from the form.
    const request = model.completions.find((c) => c.messages.at(-1).content.includes('The code must pass these tests'))
    expect(request).toBeDefined()
  })

  test('an agent debug task shows progress with the time left, its log and the fix', async () => {
    const held = gate()
    model.queue = [
      { text: '{"steps": ["Find the fault", "Fix add"]}' },
      { text: 'It subtracts instead of adding.', pause: { after: 1, until: held.until } },
      { text: fence(buggy) },
      { text: fence(fixed) },
    ]
    await tab('Agent task')
    await page.fill('#agent [name="code"]', buggy)
    await page.fill('#agent [name="error"]', 'add(2, 3) returned -1')
    await page.fill('#agent [name="tests"]', addTests)
    await page.click('#agent [data-action="run"]')
    // Held in the first step of the plan: earlier steps are done, so the time left is known.
    await page.locator('#agent .progress-text', { hasText: 'Step 1: Find the fault' }).waitFor()
    await page.locator('#agent .progress-text', { hasText: 'left' }).waitFor()
    expect(await page.locator('#agent .progress-text').textContent()).toMatch(/^\d+% · Step 1: Find the fault · about (\d+s|\d+m|\d+h(\d+m)?) left$/)
    const midway = Number(await page.locator('#agent progress').evaluate((bar) => (bar as unknown as { value: number }).value))
    expect(midway).toBeGreaterThan(0)
    expect(midway).toBeLessThan(100)
    expect(await page.locator('#agent [data-action="cancel"]').isEnabled()).toBe(true)
    expect(await page.locator('#agent [data-action="run"]').isEnabled()).toBe(false)
    held.open()

    await page.locator('#agent .status[data-status="succeeded"]').waitFor({ timeout: 60_000 })
    expect(await page.locator('#agent progress').evaluate((bar) => (bar as unknown as { value: number }).value)).toBe(100)
    expect(await page.locator('#agent .log li').allTextContents()).toEqual(['Step 2, attempt 1 of 3: failed', 'Step 2, attempt 2 of 3: passed'])
    expect(await page.locator('#agent .result [data-passed]').textContent()).toBe('The fix passed its checks')
    expect(await page.locator('#agent .result .fix').textContent()).toBe(`${fixed}\n`)
    expect(await page.locator('#agent [data-action="cancel"]').isEnabled()).toBe(false)
  })

  test('Cancel stops a running agent task', async () => {
    model.queue = [{ text: '{"steps": ["Think"]}' }, { text: 'word '.repeat(1000), delayMs: 20 }]
    await page.fill('#agent [name="code"]', '')
    await page.fill('#agent [name="tests"]', '')
    await page.fill('#agent [name="error"]', 'TypeError: x is undefined')
    await page.click('#agent [data-action="run"]')
    await page.locator('#agent .progress-text', { hasText: 'Step 1: Think' }).waitFor()
    await eventually(() => model.open > 0, "the step's model stream to start")
    const abandonedBefore = model.abandoned
    await page.click('#agent [data-action="cancel"]')
    await page.locator('#agent .status[data-status="cancelled"]').waitFor()
    expect(await page.locator('#agent .status').textContent()).toStartWith('Cancelled:')
    expect(await page.locator('#agent .status').textContent()).toEndWith('(task_cancelled)')
    await eventually(() => model.abandoned > abandonedBefore, 'the model stream to be abandoned')
    expect(await page.locator('#agent [data-action="run"]').isEnabled()).toBe(true)
    expect(await page.locator('#agent .result').textContent()).toBe('')
  })

  test('the page keeps to its origin and its Content-Security-Policy, and signing out closes the workspace', async () => {
    const response = await fetch(`${origin}/playground`)
    const csp = response.headers.get('content-security-policy')!
    expect(csp).toContain("script-src 'self'")
    expect(csp).not.toContain('unsafe-inline')
    expect(await response.text()).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>|\sstyle=|\son[a-z]+=/i)
    expect(elsewhere).toEqual([])
    expect(problems).toEqual([])

    await page.click('#sign-out')
    await page.locator('#sign-in').waitFor()
    expect(await page.locator('#workspace').isVisible()).toBe(false)
    expect(await page.locator('#who').textContent()).toBe('')
  })
})
