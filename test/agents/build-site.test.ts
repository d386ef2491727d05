/**
 * build_site: the scripted model writes a multi-file site in an empty workspace; it is checked (see
 * site-check.test.ts and site-load.test.ts) and published to the git server and the Pages API fake, and the
 * result carries the URL that API reports.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { startFakeOpenAi, type FakeOpenAi } from '../fakes/openai.ts'
import { LOGIN, startWorld, text, type Member, type PublishWorld } from '../publish/support.ts'
import { makeSandbox } from '../sandbox/support.ts'
import { call } from './helpers.ts'

const probe = makeSandbox().sandbox
const sandboxAvailable = probe.available
if (!sandboxAvailable) console.warn(`[skip] build_site loading pages: this machine refuses the sandbox (${probe.enforcement.isolation})`)
await probe.close()

describe('build_site', () => {
  let w: PublishWorld
  let model: FakeOpenAi
  let member: Member
  beforeAll(async () => {
    model = startFakeOpenAi()
    w = await startWorld('sqlite', { OPENAI_BASE_URL: model.baseUrl, CHAT_MODEL: 'fake-model' })
    member = await w.connectedMember()
  })
  afterAll(async () => {
    await w.close()
    await model.close()
  })

  /** Runs the command to its end; answers its messages. */
  async function run(params: Record<string, unknown>) {
    const caller = { userId: member.userId, orgId: member.orgId }
    const taskId = w.t.deps.agents.start(caller, 'build_site', params)
    await w.t.deps.agents.settled(taskId)
    const messages: Record<string, any>[] = []
    const { stop } = await w.t.deps.agents.follow(caller, taskId, 0, (wire) => messages.push(JSON.parse(wire)))
    stop()
    return messages
  }

  test('the site is built, checked and published; the answer carries the URL the Pages API reports', async () => {
    w.api.pagesDomains.set(LOGIN.toLowerCase(), 'sites.example.org')
    model.queue = [
      call('write_file', {
        path: 'index.html',
        content: '<!doctype html><title>Bakery</title><link rel="stylesheet" href="style.css"><h1>Bakery</h1><a href="menu.html">Menu</a>',
      }),
      call('write_file', {
        path: 'menu.html',
        content: '<!doctype html><title>Menu</title><link rel="stylesheet" href="style.css"><ul><li>Bread</ul><a href="index.html">Home</a>',
      }),
      call('write_file', { path: 'style.css', content: 'body { font-family: serif }\n' }),
      call('finish', { summary: 'A two-page bakery site.' }),
    ]
    const messages = await run({ instruction: 'A site for my bakery', repository: `${LOGIN}/bakery` })
    const final = messages.at(-1)!
    expect(final).toMatchObject({
      type: 'result',
      output: {
        summary: 'A two-page bakery site.',
        url: 'https://sites.example.org/bakery/',
        repository: `${LOGIN}/bakery`,
        branch: 'gh-pages',
        pages: 'enabled',
      },
    })
    expect(final.output.files.sort()).toEqual(['index.html', 'menu.html', 'style.css'])
    expect(final.output.commit).toBe(w.tip(LOGIN, 'bakery', 'gh-pages'))
    const clone = await w.clone(LOGIN, 'bakery', 'gh-pages')
    expect(Object.keys(clone).sort()).toEqual(['.nojekyll', 'index.html', 'menu.html', 'style.css'])
    expect(text(clone, 'style.css')).toBe('body { font-family: serif }\n')
    const steps = messages.filter((m) => m.type === 'progress' && m.step).map((m) => m.step)
    expect(steps.slice(-2)).toEqual(['Checking the site', `Publishing to ${LOGIN}/bakery`])
  })

  test('a site with a broken link is not published and the task says why', async () => {
    model.queue = [
      call('write_file', { path: 'index.html', content: '<!doctype html><title>x</title><a href="missing.html">gone</a>' }),
      call('finish', { summary: 'done' }),
    ]
    const reposBefore = w.api.repositoriesCreated
    const messages = await run({ instruction: 'Broken', repository: `${LOGIN}/broken` })
    expect(messages.at(-1)).toMatchObject({
      type: 'error',
      code: 'invalid_site',
      message: expect.stringContaining('index.html:1: link missing.html names no file of the site'),
    })
    expect(w.api.repositoriesCreated).toBe(reposBefore)
    expect(w.tip(LOGIN, 'broken', 'gh-pages')).toBeUndefined()
  })

  test.skipIf(!sandboxAvailable)('a site whose script throws when the page loads is not published, and the task names the page and the error', async () => {
    model.queue = [
      call('write_file', { path: 'index.html', content: '<!doctype html><title>x</title><p id="greeting">Hi</p><script src="app.js"></script>' }),
      call('write_file', { path: 'app.js', content: "document.querySelector('#missing').textContent = 'x'\n" }),
      call('finish', { summary: 'done' }),
    ]
    const reposBefore = w.api.repositoriesCreated
    const messages = await run({ instruction: 'Scripted', repository: `${LOGIN}/scripted` })
    expect(messages.at(-1)).toMatchObject({
      type: 'error',
      code: 'invalid_site',
      message: expect.stringMatching(/index\.html: script error: TypeError: .*#missing/),
    })
    expect(w.api.repositoriesCreated).toBe(reposBefore)
  })
})
