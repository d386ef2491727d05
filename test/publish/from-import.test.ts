/** A site given as a directory of an imported repository: read at the import's commit, published, cloned back. */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { LOGIN, startWorld, text, type Member, type PublishWorld } from './support.ts'

describe('publishing from an import', () => {
  let w: PublishWorld
  let m: Member
  let importId: string
  beforeAll(async () => {
    w = await startWorld()
    m = await w.connectedMember()
    w.existingRepository('acme', 'site-source', {
      'README.md': '# Site source\n',
      'package.json': '{"name":"site-source"}\n',
      'dist/index.html': '<!doctype html><h1>From the import</h1>',
      'dist/assets/app.js': 'console.log("ünïcode ✓")\n',
      'dist/nested/deep/page.html': '<p>deep</p>',
    })
    const started = await w.t.deps.imports.start({ orgId: m.orgId, userId: m.userId }, { repository: `${w.git.url}/acme/site-source.git` })
    importId = started.id
    await w.t.deps.imports.settled(importId)
    expect((await w.t.deps.imports.get(m.orgId, importId))?.status).toBe('succeeded')
  })
  afterAll(() => w.close())

  test('the directory becomes the site root; the clone holds exactly its files, .nojekyll and CNAME', async () => {
    const response = await w.publish(m.token, { repository: `${LOGIN}/from-import`, source: { importId, directory: 'dist' }, customDomain: 'site.example.com' })
    expect(response.status).toBe(200)
    const answer = (await response.json()) as { files: number; commit: string }
    expect(answer.files).toBe(5)
    const files = await w.clone(LOGIN, 'from-import', 'gh-pages')
    expect(Object.keys(files).sort()).toEqual(['.nojekyll', 'CNAME', 'assets/app.js', 'index.html', 'nested/deep/page.html'])
    expect(text(files, 'assets/app.js')).toBe('console.log("ünïcode ✓")\n')
    expect(text(files, 'CNAME')).toBe('site.example.com\n')

    // The same import again: nothing new to commit.
    const again = await w.publish(m.token, { repository: `${LOGIN}/from-import`, source: { importId, directory: '/dist/' }, customDomain: 'site.example.com' })
    expect(await again.json()).toMatchObject({ unchanged: true, commit: answer.commit })
  })

  test('a later change to the repository does not change what the import id names', async () => {
    w.moveBranch('acme', 'site-source', 'main', { 'dist/index.html': '<h1>changed later</h1>' })
    const reimport = await w.t.deps.imports.start({ orgId: m.orgId, userId: m.userId }, { repository: `${w.git.url}/acme/site-source.git` })
    await w.t.deps.imports.settled(reimport.id)
    expect((await w.publish(m.token, { repository: `${LOGIN}/pinned`, source: { importId, directory: 'dist' } })).status).toBe(200)
    expect(text(await w.clone(LOGIN, 'pinned', 'gh-pages'), 'index.html')).toBe('<!doctype html><h1>From the import</h1>')
    expect((await w.publish(m.token, { repository: `${LOGIN}/latest`, source: { importId: reimport.id, directory: 'dist' } })).status).toBe(200)
    expect(text(await w.clone(LOGIN, 'latest', 'gh-pages'), 'index.html')).toBe('<h1>changed later</h1>')
  })

  test('the root of the repository without index.html is refused naming source.directory; nothing is pushed', async () => {
    const response = await w.publish(m.token, { repository: `${LOGIN}/root-site`, source: { importId } })
    expect(response.status).toBe(422)
    expect(await response.json()).toMatchObject({ code: 'invalid_site', errors: [{ field: 'source.directory' }] })
    expect(w.tip(LOGIN, 'root-site', 'gh-pages')).toBeUndefined()
  })

  test('a directory with no files, or one that leaves the repository, is refused', async () => {
    const empty = await w.publish(m.token, { repository: `${LOGIN}/x`, source: { importId, directory: 'nowhere' } })
    expect(empty.status).toBe(422)
    expect(await empty.json()).toMatchObject({ code: 'invalid_site', errors: [{ field: 'source.directory' }] })
    for (const directory of ['../dist', 'dist/../..', '.git', 'dist\\x']) {
      const response = await w.publish(m.token, { repository: `${LOGIN}/x`, source: { importId, directory } })
      expect(response.status).toBe(422)
      expect(await response.json()).toMatchObject({ code: 'validation_failed', errors: [{ field: 'source.directory' }] })
    }
  })

  test('files and source together, or neither, is 422 naming both fields', async () => {
    for (const body of [{ repository: `${LOGIN}/x` }, { repository: `${LOGIN}/x`, files: [{ path: 'index.html', content: 'x' }], source: { importId } }]) {
      const response = await w.publish(m.token, body)
      expect(response.status).toBe(422)
      const problem = (await response.json()) as { code: string; errors: { field: string }[] }
      expect(problem.code).toBe('validation_failed')
      expect(problem.errors.map((e) => e.field).sort()).toEqual(['files', 'source'])
    }
  })

  test("another organisation's import is 404, as is an unknown id", async () => {
    const stranger = await w.connectedMember()
    for (const [token, id] of [
      [stranger.token, importId],
      [m.token, 'no-such-import'],
    ] as const) {
      const response = await w.publish(token, { repository: `${LOGIN}/x`, source: { importId: id, directory: 'dist' } })
      expect(response.status).toBe(404)
      expect(await response.json()).toMatchObject({ code: 'not_found', errors: [{ field: 'source.importId' }] })
    }
  })

  test('a directory over the file limit is 413 before anything is pushed', async () => {
    const small = await startWorld('sqlite', { PUBLISH_MAX_FILES: '2' })
    try {
      const member = await small.connectedMember()
      small.existingRepository('acme', 'big', { 'site/index.html': '<h1>x</h1>', 'site/a.html': 'a', 'site/b.html': 'b' })
      const started = await small.t.deps.imports.start({ orgId: member.orgId, userId: member.userId }, { repository: `${small.git.url}/acme/big.git` })
      await small.t.deps.imports.settled(started.id)
      const response = await small.publish(member.token, { repository: `${LOGIN}/big`, source: { importId: started.id, directory: 'site' } })
      expect(response.status).toBe(413)
      expect(await response.json()).toMatchObject({ code: 'site_too_large' })
      expect(small.tip(LOGIN, 'big', 'gh-pages')).toBeUndefined()
    } finally {
      await small.close()
    }
  })
})
