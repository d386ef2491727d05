/** Pushes that do not go through, and failures after the push: never answered as a success. */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { AppError } from '../../src/errors.ts'
import type { ProgressEvent } from '../../plugins/publish/schemas.ts'
import { LOGIN, sampleSite, startWorld, text, type Member, type PublishWorld } from './support.ts'

describe('rejected and half-done publishes', () => {
  let w: PublishWorld
  let m: Member
  beforeAll(async () => {
    w = await startWorld()
    m = await w.connectedMember()
  })
  afterAll(() => w.close())

  const caller = () => ({ userId: m.userId, orgId: m.orgId })
  const meteredPublishes = async () => {
    await w.t.deps.meter.flush()
    const rows = await w.t.deps.db.sql`SELECT quantity FROM usage_events WHERE user_id = ${m.userId} AND kind = 'publish'`
    return rows.reduce((sum: number, r: { quantity: unknown }) => sum + Number(r.quantity), 0)
  }

  /** Runs a publish through the service, letting `between` act once the commit is made and before it is pushed. */
  async function publishWithRace(repository: string, files: { path: string; content: string }[], between: () => void) {
    const job = await w.t.deps.publisher.prepare(caller(), { repository, files })
    const stages: string[] = []
    const outcome = await job
      .run((event: ProgressEvent) => {
        stages.push(event.stage)
        if (event.stage === 'committed') between()
      })
      .then(
        (answer) => ({ answer, error: undefined }),
        (error: unknown) => ({ answer: undefined, error }),
      )
    return { ...outcome, stages }
  }

  test('a branch moved by someone else between the fetch and the push is 409 push_rejected; their commit stays', async () => {
    expect((await w.publish(m.token, { repository: `${LOGIN}/raced`, files: sampleSite().files })).status).toBe(200)
    const enabled = w.api.pagesEnabled
    const metered = await meteredPublishes()
    let theirs = ''
    const { answer, error, stages } = await publishWithRace(`${LOGIN}/raced`, [{ path: 'index.html', content: 'mine' }], () => {
      theirs = w.moveBranch(LOGIN, 'raced', 'gh-pages', { 'index.html': 'theirs' })
    })
    expect(answer).toBeUndefined()
    expect(error).toBeInstanceOf(AppError)
    expect(error).toMatchObject({ code: 'push_rejected', status: 409, options: { extensions: { reason: 'not_fast_forward', repository: `${LOGIN}/raced` } } })
    expect(stages).toEqual(['accepted', 'repository', 'fetched', 'committed'])
    expect(w.tip(LOGIN, 'raced', 'gh-pages')).toBe(theirs)
    expect(text(await w.clone(LOGIN, 'raced', 'gh-pages'), 'index.html')).toBe('theirs')
    expect(w.api.pagesEnabled).toBe(enabled)
    expect(await meteredPublishes()).toBe(metered)

    // Publishing again builds on their commit.
    const again = await w.publish(m.token, { repository: `${LOGIN}/raced`, files: [{ path: 'index.html', content: 'mine' }] })
    expect(again.status).toBe(200)
    expect(await again.json()).toMatchObject({ previousCommit: theirs, unchanged: false })
    expect(text(await w.clone(LOGIN, 'raced', 'gh-pages'), 'index.html')).toBe('mine')
  })

  test('a branch created by someone else while the first publish ran is refused the same way', async () => {
    w.existingRepository(LOGIN, 'fresh-branch', { 'README.md': 'x' })
    let theirs = ''
    const { error } = await publishWithRace(`${LOGIN}/fresh-branch`, [{ path: 'index.html', content: 'mine' }], () => {
      theirs = w.gitIn(LOGIN, 'fresh-branch', 'rev-parse', 'main')
      w.gitIn(LOGIN, 'fresh-branch', 'branch', 'gh-pages', 'main')
    })
    expect(error).toMatchObject({ code: 'push_rejected' })
    expect(w.tip(LOGIN, 'fresh-branch', 'gh-pages')).toBe(theirs)
    expect(w.api.repository(LOGIN, 'fresh-branch')!.pages).toBeUndefined()
  })

  test('a push the server refuses (protected branch hook) is 409 push_rejected quoting it; Pages is not touched', async () => {
    expect((await w.publish(m.token, { repository: `${LOGIN}/protected`, files: sampleSite().files })).status).toBe(200)
    const tip = w.tip(LOGIN, 'protected', 'gh-pages')
    const updated = w.api.pagesUpdated
    w.refusePushes(LOGIN, 'protected', 'branch is protected')
    const res = await w.publish(m.token, { repository: `${LOGIN}/protected`, files: sampleSite('second').files, customDomain: 'docs.example.com' })
    expect(res.status).toBe(409)
    const problem = await res.json()
    expect(problem).toMatchObject({ code: 'push_rejected', reason: 'refused', repository: `${LOGIN}/protected` })
    expect(problem.refusal).toContain('pre-receive hook declined')
    expect(w.tip(LOGIN, 'protected', 'gh-pages')).toBe(tip)
    expect(w.api.pagesUpdated).toBe(updated)
    expect(w.api.repository(LOGIN, 'protected')!.pages!.cname).toBeNull()
  })

  test('a token the git server refuses is 403 codehost_forbidden and the branch is not created', async () => {
    const accepted = w.git.basicAuth
    w.git.basicAuth = 'x-access-token:some-other-token'
    try {
      const res = await w.publish(m.token, { repository: `${LOGIN}/no-push`, files: sampleSite().files })
      expect(res.status).toBe(403)
      expect(await res.json()).toMatchObject({ code: 'codehost_forbidden', repository: `${LOGIN}/no-push`, status: 401 })
    } finally {
      w.git.basicAuth = accepted
    }
    expect(w.tip(LOGIN, 'no-push', 'gh-pages')).toBeUndefined()
    expect(w.api.repository(LOGIN, 'no-push')!.pages).toBeUndefined()
  })

  test('Pages failing after the push is an error saying what was pushed; publishing again finishes the job without a new commit', async () => {
    w.api.fail('POST', /\/pages$/, 500)
    const res = await w.publish(m.token, { repository: `${LOGIN}/half`, files: sampleSite().files })
    expect(res.status).toBe(502)
    const problem = await res.json()
    const tip = w.tip(LOGIN, 'half', 'gh-pages')!
    expect(problem).toMatchObject({ code: 'upstream_error', commit: tip, pushed: true, repository: `${LOGIN}/half` })
    expect(problem.detail).toContain('could not be set up')
    expect(w.api.repository(LOGIN, 'half')!.pages).toBeUndefined()

    const again = await w.publish(m.token, { repository: `${LOGIN}/half`, files: sampleSite().files })
    expect(again.status).toBe(200)
    expect(await again.json()).toMatchObject({ commit: tip, unchanged: true, pages: 'enabled' })
    expect(w.api.repository(LOGIN, 'half')!.pages).toMatchObject({ branch: 'gh-pages' })
  })

  test('publishes to one branch at the same time run one after the other, each on top of the last', async () => {
    expect((await w.publish(m.token, { repository: `${LOGIN}/busy`, files: sampleSite().files })).status).toBe(200)
    const responses = await Promise.all(['one', 'two', 'three'].map((v) => w.publish(m.token, { repository: `${LOGIN}/busy`, files: sampleSite(v).files })))
    expect(responses.map((r) => r.status)).toEqual([200, 200, 200])
    const answers = await Promise.all(responses.map((r) => r.json()))
    const commits = new Set(answers.map((a) => a.commit))
    expect(commits.size).toBe(3)
    // A chain: every previous commit but one is another answer's commit.
    expect(answers.filter((a) => commits.has(a.previousCommit))).toHaveLength(2)
    expect(w.gitIn(LOGIN, 'busy', 'rev-list', '--count', 'gh-pages')).toBe('4')
  })
})
