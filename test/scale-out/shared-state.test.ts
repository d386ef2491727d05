/**
 * Two processes of the service behind no load balancer at all: the test itself sends each request
 * to one or the other, and nothing may depend on which one it reaches.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { SQL } from 'bun'
import { call, connectAgent, expectContiguous, isFinal } from '../agents/helpers.ts'
import { chunks, expectWholeAnswer, readEvents, readSome } from '../chat/helpers.ts'
import { startFakeOpenAi, type FakeOpenAi } from '../fakes/openai.ts'
import { startGitServer, type GitServer } from '../fakes/git-server.ts'
import { sampleHits, startFakeSearxng, type FakeSearchEngine } from '../fakes/search-providers.ts'
import { startFakeStripe, type FakeStripe } from '../fakes/stripe-api.ts'
import { announceSkip, postgresUrl, redisUrl } from '../helpers.ts'
import { checkoutSession, event, ids } from '../payments/events.ts'
import { paymentEnv, payloadOf, PRICES, SECRET_KEY, signature } from '../payments/harness.ts'
import { createCluster, json, signIn, type Cluster, type ServiceProcess } from './cluster.ts'

const ready = Boolean(postgresUrl && redisUrl)
if (!ready) announceSkip('scale-out suites (two service processes on PostgreSQL and Redis)', postgresUrl ? 'REDIS_URL' : 'DATABASE_URL')

describe.skipIf(!ready)('two processes sharing PostgreSQL, Redis and DATA_DIR', () => {
  let cluster: Cluster
  let model: FakeOpenAi
  let searxng: FakeSearchEngine
  let git: GitServer
  let stripe: FakeStripe
  let a: ServiceProcess
  let b: ServiceProcess
  let token: string
  let orgId: string
  const auth = () => ({ authorization: `Bearer ${token}` })

  beforeAll(async () => {
    model = startFakeOpenAi()
    searxng = startFakeSearxng()
    searxng.behaviour = { kind: 'results', hits: sampleHits }
    git = startGitServer()
    stripe = startFakeStripe({ secretKey: SECRET_KEY, prices: Object.values(PRICES) })
    cluster = await createCluster(redisUrl!, {
      OPENAI_BASE_URL: model.baseUrl,
      CHAT_MODEL: 'fake-model',
      CHAT_SEARCH_AUGMENTATION: 'off',
      SEARXNG_URL: searxng.url,
      IMPORT_CODEHOST_URL: git.url,
      IMPORT_ALLOW_HOSTS: `127.0.0.1:${git.port}`,
      CODE_INDEX_SNAPSHOT_DELAY_MS: '100',
      CODE_INDEX_REFRESH_MS: '200',
      ALLOW_REGISTRATION: 'true',
      ...paymentEnv(stripe),
    })
    ;[a, b] = await Promise.all([cluster.start('a'), cluster.start('b')])
    const pair = await signIn(a)
    token = pair.accessToken
    orgId = pair.user.organizationId
  })

  afterAll(async () => {
    await cluster?.close()
    await Promise.all([model?.close(), searxng?.close(), git?.close(), stripe?.close()])
  })

  test('one chat budget: the 101st chat request in a minute is refused, whichever process gets it', async () => {
    const user = await newAccount()
    const send = (via: ServiceProcess) =>
      via.request('/api/chat', json({ id: crypto.randomUUID(), messages: [{ role: 'user', content: 'hi' }] }, user.accessToken))
    // 100 requests, half to each process, in batches of 10.
    const startedAt = performance.now()
    for (let batch = 0; batch < 10; batch++) {
      const answers = await Promise.all(Array.from({ length: 10 }, (_, i) => send(i % 2 ? b : a)))
      expect(answers.map((r) => r.status)).toEqual(Array(10).fill(200))
      await Promise.all(answers.map((r) => r.text()))
    }
    // The budget refills one request every 600 ms (100 a minute), so a slow machine may earn a few back while
    // the hundred run; two budgets, one per process, would allow fifty more at once.
    let extra = 0
    const refusedBy = new Set<string>()
    for (let i = 0; i < 30 && refusedBy.size < 2; i++) {
      const via = i % 2 ? b : a
      const answer = await send(via)
      if (answer.status === 200) {
        extra++
        await answer.text()
        continue
      }
      expect(answer.status).toBe(429)
      const body = await answer.json()
      expect(body.code).toBe('rate_limited')
      expect(Number(answer.headers.get('retry-after'))).toBeGreaterThan(0)
      refusedBy.add(via.name)
    }
    expect(refusedBy.size).toBe(2)
    expect(extra).toBeLessThanOrEqual(Math.ceil((performance.now() - startedAt) / 600))
  })

  test('a chat answer produced on A is resumed on B with Last-Event-ID, with no gap and no duplicate', async () => {
    const words = Array.from({ length: 40 }, (_, i) => `t${i} `)
    model.queue = [{ text: words, delayMs: 15 }]
    const abort = new AbortController()
    const chatId = crypto.randomUUID()
    const first = await a.request('/api/chat', { ...json({ id: chatId, messages: [{ role: 'user', content: 'count' }] }, token), signal: abort.signal })
    expect(first.status).toBe(200)
    const before = await readSome(first, 10, abort)
    const resumed = await b.request(`/api/chat/${chatId}/stream`, { headers: { ...auth(), 'last-event-id': before.at(-1)!.id! } })
    expect(resumed.status).toBe(200)
    const all = [...before, ...(await readEvents(resumed))]
    expectWholeAnswer(all, words.join(''))
    expect(chunks(all).filter((c) => c.type === 'finish')).toHaveLength(1)
    // Either process shows the stored answer.
    const stored = await (await b.request(`/api/chat/${chatId}`, { headers: auth() })).json()
    expect(stored.messages.at(-1).parts.find((p: any) => p.type === 'text').text).toBe(words.join(''))
  })

  test('an agent task running on A is followed to its result by a WebSocket client on B', async () => {
    model.queue = [{ text: '{"steps": ["Read", "Explain"]}' }, { text: 'a b c d e f', delayMs: 40 }, { text: 'done now', delayMs: 40 }]
    const onA = await connectAgent(`${a.url.replace('http', 'ws')}/ws/agent`, token)
    const onB = await connectAgent(`${b.url.replace('http', 'ws')}/ws/agent`, token)
    try {
      onA.send({ type: 'agent_command', id: 'go', command: 'debug', params: { error: 'TypeError: x is undefined' } })
      const taskId = (await onA.next((m) => m.id === 'go')).taskId as string
      await onA.next((m) => m.taskId === taskId && m.type === 'progress' && m.status === 'running')
      onB.send({ type: 'subscribe', id: 'follow', taskId, afterSeq: 0 })
      expect(await onB.next((m) => m.id === 'follow')).toMatchObject({ type: 'subscribed', taskId })
      expect((await onB.next(isFinal(taskId), 20_000)).type).toBe('result')
      await onA.next(isFinal(taskId))
      expectContiguous(onB.taskMessages(taskId))
      expect(onB.taskMessages(taskId)).toEqual(onA.taskMessages(taskId))
      expect(onB.taskMessages(taskId).some((m) => m.type === 'progress' && m.percent > 0)).toBe(true)
    } finally {
      onA.close()
      onB.close()
    }
  })

  test("a development task's workspace, made on A, is read through B while the task is kept", async () => {
    model.queue = [call('write_file', { path: 'hello.txt', content: 'hello from A\n' }), call('finish', { summary: 'wrote hello.txt' })]
    const onA = await connectAgent(`${a.url.replace('http', 'ws')}/ws/agent`, token)
    try {
      onA.send({ type: 'agent_command', id: 'dev', command: 'develop', params: { instruction: 'Write hello.txt' } })
      const taskId = (await onA.next((m) => m.id === 'dev')).taskId as string
      expect((await onA.next(isFinal(taskId), 20_000)).type).toBe('result')
      const onB = (path: string) => fetch(`${b.url}/api/agents/tasks/${taskId}${path}`, { headers: auth() })
      expect(await (await onB('/file?path=hello.txt')).text()).toBe('hello from A\n')
      const { diff, files } = await (await onB('/diff')).json()
      expect(files).toEqual([{ path: 'hello.txt', status: 'added' }])
      expect(diff).toContain('+hello from A')
      expect((await fetch(`${b.url}/api/agents/tasks/task_unknown/diff`, { headers: auth() })).status).toBe(404)
    } finally {
      onA.close()
    }
  })

  test('the same payment event delivered to both processes at once is applied exactly once', async () => {
    const customer = ids.customer()
    const subscriptionId = ids.subscription()
    const completed = event(
      'checkout.session.completed',
      checkoutSession({ customer, subscription: subscriptionId, orgId, plan: 'pro', paymentStatus: 'paid' }),
      Math.floor(Date.now() / 1000),
    )
    const payload = payloadOf(completed)
    const header = await signature(payload)
    const deliver = (via: ServiceProcess) =>
      via.request('/api/payment/webhook', { method: 'POST', headers: { 'content-type': 'application/json', 'stripe-signature': header }, body: payload })
    const answers = await Promise.all([deliver(a), deliver(b), deliver(a), deliver(b)])
    expect(answers.map((r) => r.status)).toEqual([200, 200, 200, 200])
    const bodies = await Promise.all(answers.map((r) => r.json()))
    expect(bodies.filter((body) => body.duplicate === false)).toHaveLength(1)

    const db = new SQL(cluster.env.DATABASE_URL!, { max: 1 })
    try {
      const [stored] = await db`SELECT count(*)::int AS n, max(processed_at) AS processed FROM payment_events WHERE id = ${completed.id}`
      expect(stored.n).toBe(1)
      expect(stored.processed).not.toBeNull()
      const audit = await db`SELECT action FROM audit_log WHERE details LIKE ${`%${completed.id}%`}`
      expect(audit.length).toBeGreaterThan(0)
      // Each entry the event causes is written once, not once per delivery.
      expect(new Set(audit.map((row: { action: string }) => row.action)).size).toBe(audit.length)
    } finally {
      await db.close()
    }
    const plan = await (await b.request('/auth/me', { headers: auth() })).json()
    expect(plan.plan).toBe('pro')
  })

  test('a repository imported through A is searchable through B', async () => {
    git.createRepository('acme/ledger', {
      'ledger/reconcile.ts':
        'export function reconcileLedgerEntries(entries: { amount: number }[]) {\n  return entries.reduce((sum, e) => sum + e.amount, 0)\n}\n',
      'README.md': '# Ledger\n',
    })
    const started = await a.request('/api/codehost/import', json({ repository: 'acme/ledger' }, token))
    expect(started.status).toBe(202)
    const { importId } = await started.json()
    // Its progress reads the same on B.
    let view: any
    for (let i = 0; i < 200; i++) {
      view = await (await b.request(`/api/codehost/imports/${importId}`, { headers: auth() })).json()
      if (view.status === 'succeeded' || view.status === 'failed') break
      await Bun.sleep(50)
    }
    expect(view.status).toBe('succeeded')
    const search = await b.request('/api/search', json({ query: 'reconcile ledger entries', mode: 'text' }, token))
    expect(search.status).toBe(200)
    const { results } = await search.json()
    expect(results[0]).toMatchObject({ path: 'ledger/reconcile.ts', repositoryName: 'acme/ledger' })
  })

  test('a web search answered on A is a cache hit on B', async () => {
    const query = `bun sql ${crypto.randomUUID().slice(0, 8)}`
    const callsBefore = searxng.calls
    const first = await a.request('/api/web-search', json({ query }, token))
    expect(first.status).toBe(200)
    expect(first.headers.get('x-cache')).toBe('MISS')
    const second = await b.request('/api/web-search', json({ query }, token))
    expect(second.status).toBe(200)
    expect(second.headers.get('x-cache')).toBe('HIT')
    expect((await second.json()).results).toEqual((await first.json()).results)
    expect(searxng.calls).toBe(callsBefore + 1)
  })

  test('logout on A revokes the refresh token on B too, and its access token', async () => {
    const pair = await signIn(b)
    const me = () => b.request('/auth/me', { headers: { authorization: `Bearer ${pair.accessToken}` } })
    expect((await me()).status).toBe(200)
    const logout = await a.request('/auth/logout', json({ refreshToken: pair.refreshToken }))
    expect(logout.status).toBe(204)
    const refused = await b.request('/auth/refresh', json({ refreshToken: pair.refreshToken }))
    expect(refused.status).toBe(401)
    // B hears of the sign-out through Redis a moment after A answered; well before its next reload of the list.
    let answer = await me()
    for (const deadline = Date.now() + 1000; answer.status === 200 && Date.now() < deadline; answer = await me()) await Bun.sleep(10)
    expect(answer.status).toBe(401)
    // A token rotated before the logout is revoked with it.
    const other = await signIn(a)
    const rotated = await (await b.request('/auth/refresh', json({ refreshToken: other.refreshToken }))).json()
    expect((await b.request('/auth/logout', json({ refreshToken: other.refreshToken }))).status).toBe(204)
    expect((await a.request('/auth/refresh', json({ refreshToken: rotated.refreshToken }))).status).toBe(401)
  })

  test('a logout on A closes an agent connection open on B, and a role changed by the admin command closes another', async () => {
    const pair = await signIn(b)
    const socket = await connectAgent(`${b.url.replace('http', 'ws')}/ws/agent`, pair.accessToken)
    const loggedOutAt = performance.now()
    expect((await a.request('/auth/logout', json({ refreshToken: pair.refreshToken }))).status).toBe(204)
    expect(await socket.closed).toEqual({ code: 4401, reason: expect.stringContaining('signed out') })
    const logoutCloseMs = Math.round(performance.now() - loggedOutAt)

    const member = await newAccount()
    const held = await connectAgent(`${a.url.replace('http', 'ws')}/ws/agent`, member.accessToken)
    const setRole = Bun.spawnSync([process.execPath, 'src/main/index.ts', 'admin', 'users', 'set-role', '--user', member.user.id, '--role', 'viewer'], {
      cwd: `${import.meta.dir}/../..`,
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', ...cluster.env },
    })
    const roleSetAt = performance.now()
    expect(setRole.exitCode).toBe(0)
    expect(await held.closed).toEqual({ code: 4403, reason: 'the viewer role does not allow agents:run' })
    console.log(
      `agent socket on the other process closed ${logoutCloseMs} ms after the logout request was sent; ${Math.round(performance.now() - roleSetAt)} ms after the role-change command exited`,
    )
  })

  /** A new account (its own organisation and budgets), registered through A and signed in through B. */
  async function newAccount() {
    const credentials = { email: `user-${crypto.randomUUID().slice(0, 8)}@cluster.example`, password: 'user-password-1234' }
    const registered = await a.request('/auth/register', json(credentials))
    if (registered.status !== 201 && registered.status !== 200) throw new Error(`register: ${registered.status} ${await registered.text()}`)
    return signIn(b, credentials)
  }
})
