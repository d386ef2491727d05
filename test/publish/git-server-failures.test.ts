/** A git server that is slow, oversized or gone: clear errors, nothing published, the workspace removed. */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { readdirSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { createHttpClient } from '../../src/http.ts'
import { memoryLogger } from '../../src/log.ts'
import { createGitHttp } from '../../plugins/publish/git-http.ts'
import { createPublisher } from '../../plugins/publish/service.ts'
import { LOGIN, sampleSite, startWorld, type Member, type PublishWorld } from './support.ts'

describe('git server failures', () => {
  let w: PublishWorld
  let m: Member
  beforeAll(async () => {
    w = await startWorld()
    m = await w.connectedMember()
    // The branch exists, so every publish below fetches it first.
    expect((await w.publish(m.token, { repository: `${LOGIN}/fragile`, files: sampleSite().files })).status).toBe(200)
  })
  afterAll(() => w.close())

  /** A publisher like the service's, with a small response cap and deadline so the failures come quickly. */
  const publisherWith = (gitUrl: string, limits: { timeoutMs: number; maxResponseBytes: number }) =>
    createPublisher({
      integrations: w.t.deps.integrations,
      meter: w.t.deps.meter,
      logger: memoryLogger('warn'),
      http: createHttpClient({ timeoutMs: 2000 }),
      apiUrl: w.api.url,
      gitUrl,
      limits: { maxFiles: 100, maxBytes: 100_000 },
      gitHttp: createGitHttp(limits),
    })

  const workspaces = () => readdirSync(tmpdir()).filter((name) => name.startsWith('pages-publish-')).length

  async function failure(publisher: ReturnType<typeof createPublisher>) {
    const job = await publisher.prepare({ userId: m.userId, orgId: m.orgId }, { repository: `${LOGIN}/fragile`, files: sampleSite('next').files })
    return job.run().then(
      () => {
        throw new Error('the publish succeeded')
      },
      (error: unknown) => error,
    )
  }

  test('a branch too large to fetch is 502 upstream_error naming the cap; the branch is untouched', async () => {
    const tip = w.tip(LOGIN, 'fragile', 'gh-pages')
    const before = workspaces()
    w.git.behaviour = { kind: 'huge-pack', bytes: 2_000_000 }
    try {
      const error = await failure(publisherWith(w.git.url, { timeoutMs: 10_000, maxResponseBytes: 200_000 }))
      expect(error).toMatchObject({ code: 'upstream_error', options: { extensions: { limitBytes: 200_000 } } })
    } finally {
      w.git.behaviour = { kind: 'normal' }
    }
    expect(w.tip(LOGIN, 'fragile', 'gh-pages')).toBe(tip)
    expect(workspaces()).toBe(before)
  })

  test('a git server slower than the deadline is 504 upstream_timeout', async () => {
    w.git.behaviour = { kind: 'trickle', chunkBytes: 8, delayMs: 100 }
    try {
      const error = await failure(publisherWith(w.git.url, { timeoutMs: 300, maxResponseBytes: 10_000_000 }))
      expect(error).toMatchObject({ code: 'upstream_timeout', status: 504 })
    } finally {
      w.git.behaviour = { kind: 'normal' }
    }
  })

  test('a git server that is not there is 502 upstream_error', async () => {
    const closed = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: () => new Response() })
    const url = `http://127.0.0.1:${closed.port}`
    await closed.stop(true)
    const error = await failure(publisherWith(url, { timeoutMs: 2000, maxResponseBytes: 10_000_000 }))
    expect(error).toMatchObject({ code: 'upstream_error', status: 502 })
  })

  test('a redirect is not followed: the token never goes to another host', async () => {
    const seen: (string | null)[] = []
    const recorder = Bun.serve({
      hostname: '127.0.0.1',
      port: 0,
      fetch: (request) => {
        seen.push(request.headers.get('authorization'))
        return new Response('', { status: 401, headers: { 'www-authenticate': 'Basic realm="git"' } })
      },
    })
    w.git.behaviour = { kind: 'redirect', location: `http://127.0.0.1:${recorder.port}` }
    try {
      const error = await failure(publisherWith(w.git.url, { timeoutMs: 2000, maxResponseBytes: 10_000_000 }))
      expect(error).toMatchObject({ code: 'upstream_error' })
      expect(seen).toEqual([])
    } finally {
      w.git.behaviour = { kind: 'normal' }
      await recorder.stop(true)
    }
  })
})
