/**
 * The rolling restart of docs/deployment.mdx, behind docs/deployment/nginx.conf: each of two replicas is
 * restarted in turn, by the documented steps, while clients keep sending GET and POST requests (chat streams
 * among them) through nginx. No request may fail: nginx moves what a stopping replica cannot take to the other,
 * the stopping replica finishes what it took, and a cut chat stream resumes on the other replica.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createParser, type EventSourceMessage } from 'eventsource-parser'
import { startFakeOpenAi, type FakeOpenAi } from '../fakes/openai.ts'
import { UNLIMITED_BUDGETS, announceSkip, postgresUrl, redisUrl } from '../helpers.ts'
import { clusterAdmin, createCluster, type Cluster, type ServiceProcess } from '../scale-out/cluster.ts'
import { composeFile, environmentOf, freePort, nginxBinary, replicas as composeReplicas, startNginx, type RunningNginx } from './files.ts'

const runnable = Boolean(nginxBinary && postgresUrl && redisUrl)
if (!nginxBinary) console.warn('[skip] rolling restart behind nginx: nginx is not installed')
else if (!postgresUrl) announceSkip('rolling restart behind nginx', 'DATABASE_URL')
else if (!redisUrl) announceSkip('rolling restart behind nginx', 'REDIS_URL')

const PROXY_ADDRESS = '127.0.0.2'
const ANSWER = Array.from({ length: 8 }, (_, i) => `w${i} `)
/** Requests the clients send at least, and at most; the restarts happen while they run. */
const MIN_REQUESTS = 450
const MAX_REQUESTS = 900
const CLIENTS = 4
// The replicas' shutdown settings as compose.yaml gives them, to go with nginx.conf.
const composeEnv = environmentOf(composeReplicas(composeFile())[0]![1])
const SHUTDOWN = { SHUTDOWN_DRAIN_DELAY_MS: composeEnv.SHUTDOWN_DRAIN_DELAY_MS!, SHUTDOWN_TIMEOUT_MS: composeEnv.SHUTDOWN_TIMEOUT_MS! }

interface Failure {
  kind: string
  detail: string
}

/** Reads an SSE answer: its events, whether it ended with [DONE], and the retry hint if it was cut. */
async function readStream(response: Response): Promise<{ events: EventSourceMessage[]; done: boolean; retry?: number }> {
  const events: EventSourceMessage[] = []
  let retry: number | undefined
  const parser = createParser({ onEvent: (e) => events.push(e), onRetry: (ms) => (retry = ms) })
  const decoder = new TextDecoder()
  for await (const bytes of response.body!) parser.feed(decoder.decode(bytes, { stream: true }))
  return { events, done: events.at(-1)?.data === '[DONE]', retry }
}

const textOf = (events: EventSourceMessage[]) =>
  events
    .filter((e) => e.data !== '[DONE]')
    .map((e) => JSON.parse(e.data) as { type: string; delta?: string })
    .filter((c) => c.type === 'text-delta')
    .map((c) => c.delta)
    .join('')

describe.skipIf(!runnable)('a rolling restart behind nginx', () => {
  let model: FakeOpenAi
  let cluster: Cluster
  let proxy: RunningNginx
  const ports = [freePort(), freePort()]
  const names = ['replica-a', 'replica-b']
  const replicas: ServiceProcess[] = []

  beforeAll(async () => {
    model = startFakeOpenAi()
    model.fallback = () => ({ text: ANSWER, delayMs: 25 })
    cluster = await createCluster(redisUrl!, {
      OPENAI_BASE_URL: model.baseUrl,
      CHAT_MODEL: 'fake-model',
      CHAT_SEARCH_AUGMENTATION: 'false',
      TRUSTED_PROXIES: PROXY_ADDRESS,
      ...SHUTDOWN,
      ...UNLIMITED_BUDGETS,
    })
    // One after the other: the first creates the owner account, the second finds it.
    for (const [i, name] of names.entries()) replicas.push(await cluster.start(name, { PORT: String(ports[i]) }))
    proxy = await startNginx({ upstreams: ports.map((p) => `127.0.0.1:${p}`), extraHttp: [`proxy_bind ${PROXY_ADDRESS};`] })
  }, 60_000)

  afterAll(async () => {
    await proxy?.stop()
    await cluster?.close()
    await model?.close()
  })

  /** docs/deployment.mdx, "Rolling restarts", for replica `i`. */
  async function restart(i: number) {
    const stopping = replicas[i]!
    // 1-3: SIGTERM; it drains and exits 0.
    expect(await stopping.stop()).toBe(0)
    // 4: start it again on the same address, and wait until its /ready answers 200.
    const started = await cluster.start(names[i]!, { PORT: String(ports[i]) })
    for (let attempt = 0; (await started.request('/ready').then((r) => r.status, () => 0)) !== 200; attempt++) {
      if (attempt === 100) throw new Error(`${names[i]} not ready`)
      await Bun.sleep(100)
    }
    replicas[i] = started
  }

  test('each replica restarted in turn while clients send GET and POST requests: none fails', async () => {
    const login = await fetch(`${proxy.url}/auth/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(clusterAdmin) })
    expect(login.status).toBe(200)
    const token = ((await login.json()) as { accessToken: string }).accessToken
    const headers = { authorization: `Bearer ${token}` }

    const counts: Record<string, number> = {}
    const failures: Failure[] = []
    let sent = 0
    let resumed = 0
    let restarting = true

    // Nothing to resume (204): the answer is no longer running, so it is, or is about to be, stored.
    const storedAnswer = async (id: string) => {
      let text: string | undefined
      for (let attempt = 0; attempt < 50 && text !== ANSWER.join(''); attempt++) {
        if (attempt) await Bun.sleep(100)
        const stored = (await (await fetch(`${proxy.url}/api/chat/${id}`, { headers })).json()) as { messages: { role: string; parts: { type: string; text?: string }[] }[] }
        text = stored.messages.at(-1)?.role === 'assistant' ? stored.messages.at(-1)!.parts.find((p) => p.type === 'text')?.text : undefined
      }
      return text === ANSWER.join('') ? undefined : `nothing to resume after a cut stream, and the stored answer is ${JSON.stringify(text)}`
    }

    const requests: Record<string, () => Promise<string | undefined>> = {
      'GET /api/chats': async () => {
        const res = await fetch(`${proxy.url}/api/chats`, { headers })
        await res.arrayBuffer()
        return res.status === 200 ? undefined : `status ${res.status}`
      },
      'GET /auth/me': async () => {
        const res = await fetch(`${proxy.url}/auth/me`, { headers })
        await res.arrayBuffer()
        return res.status === 200 ? undefined : `status ${res.status}`
      },
      'POST /auth/login': async () => {
        const res = await fetch(`${proxy.url}/auth/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(clusterAdmin) })
        await res.arrayBuffer()
        return res.status === 200 ? undefined : `status ${res.status}`
      },
      'POST /api/chat': async () => {
        const id = crypto.randomUUID()
        const res = await fetch(`${proxy.url}/api/chat`, {
          method: 'POST',
          headers: { ...headers, 'content-type': 'application/json' },
          body: JSON.stringify({ id, messages: [{ role: 'user', content: 'eight words' }] }),
        })
        if (res.status !== 200) return `status ${res.status}: ${(await res.text()).slice(0, 200)}`
        let part = await readStream(res)
        let events = part.events
        // Cut by a stopping replica: reconnect through the proxy as an EventSource client does, with the last
        // event's id (none if it was cut before the first: the whole answer again), as often as it is cut.
        for (let reconnects = 0; !part.done; reconnects++) {
          if (part.retry === undefined) return `stream ended without [DONE] or a retry hint after ${events.length} events`
          if (reconnects === 5) return 'cut five times'
          resumed++
          const lastId = events.at(-1)?.id
          const again = await fetch(`${proxy.url}/api/chat/${id}/stream`, { headers: lastId ? { ...headers, 'last-event-id': lastId } : headers })
          if (again.status === 204) return storedAnswer(id)
          if (again.status !== 200) return `resume answered ${again.status}`
          part = await readStream(again)
          events = [...events, ...part.events]
        }
        const text = textOf(events)
        return text === ANSWER.join('') ? undefined : `answer ${JSON.stringify(text)}`
      },
    }
    const kinds = Object.keys(requests)

    const client = async () => {
      while ((restarting || sent < MIN_REQUESTS) && sent < MAX_REQUESTS) {
        const kind = kinds[sent++ % kinds.length]!
        counts[kind] = (counts[kind] ?? 0) + 1
        const problem = await requests[kind]!().catch((err: Error) => `${err.name}: ${err.message}`)
        if (problem) failures.push({ kind, detail: problem })
        // A steady stream rather than a flood: the machine runs two service processes, nginx and PostgreSQL too.
        await Bun.sleep(150)
      }
    }
    const clients = Array.from({ length: CLIENTS }, client)
    // Some traffic before the first restart, so connections to both replicas are open and pooled.
    while (sent < 40) await Bun.sleep(20)
    try {
      for (let i = 0; i < replicas.length; i++) await restart(i)
    } finally {
      restarting = false
    }
    await Promise.all(clients)

    const upstreamErrors = proxy.errorLog().split('\n').filter((l) => l.includes('upstream'))
    console.log(
      `rolling restart behind nginx: ${sent} requests (${kinds.map((k) => `${counts[k]} ${k}`).join(', ')}), ` +
        `${failures.length} failed, ${resumed} chat streams resumed on the other replica, ${upstreamErrors.length} upstream errors in nginx's log`,
    )
    // What nginx met on the way (each one retried on the other replica unless a failure above says otherwise).
    const reasons: Record<string, number> = {}
    for (const line of upstreamErrors) {
      const reason = /\] \d+#\d+: \*\d+ (.*?), client:/.exec(line)?.[1] ?? line
      reasons[reason] = (reasons[reason] ?? 0) + 1
    }
    console.log(reasons)
    if (failures.length) console.log(failures.slice(0, 10))
    expect(sent).toBeGreaterThanOrEqual(MIN_REQUESTS)
    // Requests did meet a stopped replica (nginx logs each refusal before it tries the other one).
    expect(Object.entries(reasons).some(([reason, n]) => reason.includes('Connection refused') && n > 0)).toBe(true)
    expect(failures).toEqual([])
  }, 240_000)
})
