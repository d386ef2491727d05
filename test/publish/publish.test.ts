/** Publishing end to end: the service pushes to a real git server and sets Pages up at the fake GitHub API; the result is cloned. */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { BACKENDS, LOGIN, sampleSite, startWorld, text, type PublishWorld } from './support.ts'

for (const backend of BACKENDS) {
  describe(`publishing a site (${backend})`, () => {
    let w: PublishWorld
    let token: string
    beforeAll(async () => {
      w = await startWorld(backend)
      token = (await w.connectedMember()).token
    })
    afterAll(() => w.close())

    test('a new repository is created, the site pushed as one commit, Pages enabled, and a clone holds exactly the site', async () => {
      const { files, png } = sampleSite()
      const res = await w.publish(token, { repository: `${LOGIN}/site`, files, message: 'First version' })
      expect(res.status).toBe(200)
      const answer = await res.json()
      expect(answer).toMatchObject({
        repository: `${LOGIN}/site`,
        branch: 'gh-pages',
        previousCommit: null,
        unchanged: false,
        url: `https://${LOGIN}.github.io/site/`,
        repositoryCreated: true,
        pages: 'enabled',
        files: 5,
      })
      expect(answer.commit).toBe(w.tip(LOGIN, 'site', 'gh-pages')!)
      expect(w.api.repositoriesCreated).toBe(1)
      expect(w.api.repository(LOGIN, 'site')!.pages).toMatchObject({ branch: 'gh-pages', path: '/', cname: null })

      const clone = await w.clone(LOGIN, 'site', 'gh-pages')
      expect(Object.keys(clone).sort()).toEqual(['.nojekyll', 'assets/logo.png', 'assets/site.css', 'docs/guide/intro.html', 'index.html'])
      for (const file of files.filter((f) => !f.encoding)) expect(text(clone, file.path)).toBe(file.content)
      expect(clone['assets/logo.png']!.equals(png)).toBe(true)
      expect(clone['.nojekyll']!.byteLength).toBe(0)
      expect(answer.bytes).toBe(Object.values(clone).reduce((sum, b) => sum + b.byteLength, 0))

      // One root commit, written as the connected account, with the message asked for.
      expect(w.gitIn(LOGIN, 'site', 'rev-list', '--count', 'gh-pages')).toBe('1')
      expect(w.gitIn(LOGIN, 'site', 'log', '-1', '--format=%an <%ae>|%s', 'gh-pages')).toBe(`${LOGIN} <4242+${LOGIN}@users.noreply.github.com>|First version`)
    })

    test('the next publish is one commit on top of the previous one and replaces the tree entirely; Pages is not enabled again', async () => {
      const before = w.tip(LOGIN, 'site', 'gh-pages')!
      const res = await w.publish(token, {
        repository: `${LOGIN}/site`,
        files: [
          { path: 'index.html', content: '<h1>second</h1>' },
          { path: 'about/index.html', content: '<p>about</p>' },
        ],
      })
      expect(res.status).toBe(200)
      const answer = await res.json()
      expect(answer).toMatchObject({ previousCommit: before, unchanged: false, repositoryCreated: false, pages: 'unchanged', files: 3 })
      expect(answer.commit).not.toBe(before)
      expect(w.tip(LOGIN, 'site', 'gh-pages')).toBe(answer.commit)
      expect(w.gitIn(LOGIN, 'site', 'rev-parse', `${answer.commit}^`)).toBe(before)
      expect(w.gitIn(LOGIN, 'site', 'log', '-1', '--format=%s', 'gh-pages')).toBe('Publish site')
      expect(w.api.pagesEnabled).toBe(1)
      expect(w.api.pagesUpdated).toBe(0)

      const clone = await w.clone(LOGIN, 'site', 'gh-pages')
      expect(Object.keys(clone).sort()).toEqual(['.nojekyll', 'about/index.html', 'index.html'])
      expect(text(clone, 'index.html')).toBe('<h1>second</h1>')
    })

    test('publishing the same content again makes no commit and answers the existing one', async () => {
      const before = w.tip(LOGIN, 'site', 'gh-pages')!
      const count = w.gitIn(LOGIN, 'site', 'rev-list', '--count', 'gh-pages')
      const pushesBefore = w.git.requests.filter((r) => r.path.endsWith('/git-receive-pack')).length
      const res = await w.publish(token, {
        repository: `${LOGIN}/site`,
        // Same files in another order: the same tree.
        files: [
          { path: 'about/index.html', content: '<p>about</p>' },
          { path: 'index.html', content: '<h1>second</h1>' },
        ],
        message: 'Nothing new',
      })
      expect(res.status).toBe(200)
      expect(await res.json()).toMatchObject({ commit: before, previousCommit: before, unchanged: true, pages: 'unchanged' })
      expect(w.tip(LOGIN, 'site', 'gh-pages')).toBe(before)
      expect(w.gitIn(LOGIN, 'site', 'rev-list', '--count', 'gh-pages')).toBe(count)
      expect(w.git.requests.filter((r) => r.path.endsWith('/git-receive-pack')).length).toBe(pushesBefore)
      expect(w.api.pagesEnabled).toBe(1)
    })

    test('a custom domain is written as CNAME, set on the Pages site, and is the answered URL', async () => {
      const res = await w.publish(token, {
        repository: `${LOGIN}/site`,
        files: [
          { path: 'index.html', content: '<h1>second</h1>' },
          { path: 'about/index.html', content: '<p>about</p>' },
        ],
        customDomain: 'Docs.Example.com',
      })
      expect(res.status).toBe(200)
      const answer = await res.json()
      expect(answer).toMatchObject({ unchanged: false, url: 'https://docs.example.com/', pages: 'updated' })
      expect(text(await w.clone(LOGIN, 'site', 'gh-pages'), 'CNAME')).toBe('docs.example.com\n')
      expect(w.api.repository(LOGIN, 'site')!.pages).toMatchObject({ branch: 'gh-pages', cname: 'docs.example.com' })
      expect(w.api.pagesEnabled).toBe(1)
    })

    test('a later publish without the custom domain removes it, from the files and the Pages site', async () => {
      const res = await w.publish(token, {
        repository: `${LOGIN}/site`,
        files: [
          { path: 'index.html', content: '<h1>second</h1>' },
          { path: 'about/index.html', content: '<p>about</p>' },
        ],
      })
      expect(await res.json()).toMatchObject({ unchanged: false, url: `https://${LOGIN}.github.io/site/`, pages: 'updated' })
      expect(Object.keys(await w.clone(LOGIN, 'site', 'gh-pages'))).not.toContain('CNAME')
      expect(w.api.repository(LOGIN, 'site')!.pages!.cname).toBeNull()
    })

    test('an existing repository of the account gets the site on another branch, next to what it holds', async () => {
      w.existingRepository(LOGIN, 'project', { 'README.md': '# project\n' })
      const mainTip = w.tip(LOGIN, 'project', 'main')
      const res = await w.publish(token, { repository: `${LOGIN}/project`, branch: 'site/live', files: sampleSite('project').files })
      expect(res.status).toBe(200)
      expect(await res.json()).toMatchObject({
        repositoryCreated: false,
        branch: 'site/live',
        pages: 'enabled',
        previousCommit: null,
        url: `https://${LOGIN}.github.io/project/`,
      })
      expect(w.tip(LOGIN, 'project', 'main')).toBe(mainTip)
      expect(text(await w.clone(LOGIN, 'project', 'site/live'), 'index.html')).toContain('Hello project')
      expect(w.api.repository(LOGIN, 'project')!.pages).toMatchObject({ branch: 'site/live' })
    })

    test('a branch with history of its own gets the site as one more commit on its tip (shallow fetch)', async () => {
      w.existingRepository(LOGIN, 'history', { 'index.html': 'v1', 'old.html': 'old' }, { branch: 'gh-pages' })
      w.moveBranch(LOGIN, 'history', 'gh-pages', { 'index.html': 'v2' })
      const tip = w.moveBranch(LOGIN, 'history', 'gh-pages', { 'index.html': 'v3' })
      // Names whose order differs between plain sorting and git's (a directory sorts as "docs/"), and non-ASCII ones.
      const files = ['index.html', 'docs.html', 'docs/a.html', 'docs-x/b.html', 'été/ü.html', 'Z.html', '_x.html'].map((path) => ({ path, content: path }))
      const res = await w.publish(token, { repository: `${LOGIN}/history`, files })
      expect(res.status).toBe(200)
      const answer = await res.json()
      expect(answer).toMatchObject({ previousCommit: tip, unchanged: false, repositoryCreated: false })
      expect(w.gitIn(LOGIN, 'history', 'rev-list', '--count', 'gh-pages')).toBe('4')
      expect(w.gitIn(LOGIN, 'history', 'rev-parse', `${answer.commit}^`)).toBe(tip)
      expect(w.gitIn(LOGIN, 'history', 'fsck', '--no-dangling')).toBe('')
      expect(Object.keys(await w.clone(LOGIN, 'history', 'gh-pages')).sort()).toEqual(['.nojekyll', ...files.map((f) => f.path)].sort())
    })

    test("the account's own <login>.github.io repository is served at the root", async () => {
      const res = await w.publish(token, { repository: `${LOGIN}/${LOGIN}.github.io`, files: sampleSite().files })
      expect(res.status).toBe(200)
      expect((await res.json()).url).toBe(`https://${LOGIN}.github.io/`)
    })

    test("the answered URL is the one the Pages API reports: an account's custom domain serves project sites under it", async () => {
      w.api.pagesDomains.set(LOGIN.toLowerCase(), 'www.example.org')
      try {
        const first = await w.publish(token, { repository: `${LOGIN}/moved`, files: sampleSite('moved').files })
        expect(first.status).toBe(200)
        expect(await first.json()).toMatchObject({ pages: 'enabled', url: 'https://www.example.org/moved/' })
        // Unchanged Pages: the address comes from the site as read.
        const again = await w.publish(token, { repository: `${LOGIN}/moved`, files: sampleSite('again').files })
        expect(await again.json()).toMatchObject({ pages: 'unchanged', url: 'https://www.example.org/moved/' })
        // Updated Pages (another branch): read again after the update.
        const moved = await w.publish(token, { repository: `${LOGIN}/moved`, branch: 'live', files: sampleSite('live').files })
        expect(await moved.json()).toMatchObject({ pages: 'updated', url: 'https://www.example.org/moved/' })
      } finally {
        w.api.pagesDomains.delete(LOGIN.toLowerCase())
      }
    })

    test('when the Pages API reports no html_url the address is built from the repository', async () => {
      w.api.omitHtmlUrl = true
      try {
        const res = await w.publish(token, { repository: `${LOGIN}/unreported`, files: sampleSite().files })
        expect(res.status).toBe(200)
        expect(await res.json()).toMatchObject({ pages: 'enabled', url: `https://${LOGIN}.github.io/unreported/` })
      } finally {
        w.api.omitHtmlUrl = false
      }
    })

    test('without index.html the site is published when the caller says so', async () => {
      const res = await w.publish(token, { repository: `${LOGIN}/assets-only`, requireIndex: false, files: [{ path: 'data.json', content: '{"a":1}' }] })
      expect(res.status).toBe(200)
      expect(Object.keys(await w.clone(LOGIN, 'assets-only', 'gh-pages')).sort()).toEqual(['.nojekyll', 'data.json'])
    })

    test('each successful publish is metered as a publish usage event', async () => {
      const m = await w.connectedMember()
      expect((await w.publish(m.token, { repository: `${LOGIN}/metered`, files: sampleSite().files })).status).toBe(200)
      expect((await w.publish(m.token, { repository: `${LOGIN}/metered`, files: sampleSite().files })).status).toBe(200)
      await w.t.deps.meter.flush()
      // The meter writes every second, so the two events may land in one row or two.
      const rows = await w.t.deps.db.sql`SELECT kind, SUM(quantity) AS quantity FROM usage_events WHERE user_id = ${m.userId} GROUP BY kind`
      expect(rows.map((r: { kind: string; quantity: unknown }) => [r.kind, Number(r.quantity)])).toEqual([['publish', 2]])
    })
  })
}
