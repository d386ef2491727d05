/**
 * The page-load check: each page of a site is loaded by happy-dom inside the sandbox with its scripts on. An
 * uncaught error or a request for a missing file is a problem; what may come from the missing network is a
 * warning; without a sandbox nothing is loaded, and a warning says so.
 */
import { afterAll, describe, expect, test } from 'bun:test'
import { loadSitePages, type PageLoadSandbox } from '../../plugins/agents/sites/site-load.ts'
import { makeSandbox } from '../sandbox/support.ts'
import { bakerySite, page, siteOf } from './site-support.ts'

const { sandbox } = makeSandbox()
if (!sandbox.available) console.warn(`[skip] pages loaded in the sandbox: this machine refuses the sandbox (${sandbox.enforcement.isolation})`)
afterAll(() => sandbox.close())

describe.skipIf(!sandbox.available)('pages loaded in the sandbox', () => {
  test('a realistic site whose scripts fill the page from a module and JSON loads with no problems', async () => {
    expect(await loadSitePages(sandbox, bakerySite())).toEqual({ problems: [], warnings: [] })
  })

  test('a throwing script and a request for a missing file are problems; a working page passes; unreachable addresses only warn', async () => {
    const site = siteOf({
      // Works only if its classic script, its module and the module's import and fetch all ran: otherwise it throws.
      'index.html': page(
        '<p id="out"></p><ul id="list"></ul>\n<script src="js/first.js"></script>\n<script type="module">\n' +
          "import { fill } from './js/fill.js'\nawait fill(document.getElementById('list'))\n" +
          "if (document.getElementById('out').textContent !== 'first' || document.querySelectorAll('li').length !== 2) throw new Error('the page did not build')\n</script>",
      ),
      'js/first.js': "document.getElementById('out').textContent = 'first'",
      'js/fill.js':
        "export async function fill(list) {\n  for (const item of await (await fetch('data/items.json')).json()) list.append(Object.assign(document.createElement('li'), { textContent: item }))\n}",
      'data/items.json': '["bread", "buns"]',
      'throws.html': page("<script>document.querySelector('#missing').textContent = 'x'</script>"),
      'missing.html': page('<script type="module">import \'./js/nowhere.js\'</script>'),
      'offline.html': page('<script src="https://cdn.example.com/carousel.js"></script><script>Carousel.start()</script>'),
    })
    const outcome = await loadSitePages(sandbox, site)
    expect(outcome.problems).toEqual([
      expect.stringMatching(/^throws\.html: script error: TypeError: .*textContent/),
      'missing.html: a script asked for js/nowhere.js, which is not a file of the site',
      expect.stringMatching(/^missing\.html: script error: .*js\/nowhere\.js.*404/),
    ])
    expect(outcome.warnings).toEqual([
      'offline.html: asked for 1 address outside the site (https://cdn.example.com/carousel.js); the sandbox has no network',
      expect.stringMatching(/^offline\.html: script error, perhaps from what could not be fetched: ReferenceError: .*Carousel/),
    ])
  })

  test('a page whose script never returns is a problem once the time is up', async () => {
    const { sandbox: quick } = makeSandbox({ defaults: { timeoutMs: 3000, memoryMb: 128, maxOutputBytes: 64 * 1024, maxProcesses: 32 } })
    try {
      const site = siteOf({ 'index.html': page('<p>fine</p>'), 'spin.html': page('<script>for (;;) {}</script>') })
      expect(await loadSitePages(quick, site)).toEqual({
        problems: ['spin.html: the page did not finish loading in 3 s (a script that never returns?)'],
        warnings: [],
      })
    } finally {
      await quick.close()
    }
  })
})

test('without a sandbox the pages are not loaded, and a warning says so', async () => {
  const none: PageLoadSandbox = { available: false, limits: sandbox.limits, run: () => Promise.reject(new Error('not called')) }
  expect(await loadSitePages(none, siteOf({ 'index.html': page('<script>throw new Error("never run")</script>') }))).toEqual({
    problems: [],
    warnings: ['The pages were not loaded: this machine has no sandbox, so their scripts were not run'],
  })
})
