/**
 * The rolling restart of docs/deployment.mdx, behind docs/deployment/nginx.conf: each of two replicas is
 * restarted in turn, by the documented steps, while clients keep sending GET and POST requests through nginx:
 * short and 10-second chat streams, agent tasks over the WebSocket and repository imports among them. No request
 * may fail: nginx moves what a stopping replica cannot take (new long work it refuses with 503 while it drains,
 * a closed listener) to the other, the stopping replica finishes what it took, a cut chat stream resumes on the
 * other replica, and an agent client told to go away (1001) reconnects and subscribes to its task again.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createParser, type EventSourceMessage } from 'eventsource-parser'
import { connectAgent, isFinal, type AgentMessage } from '../agents/helpers.ts'
import { startGitServer, type GitServer } from '../fakes/git-server.ts'
import { asking, startFakeOpenAi, type FakeOpenAi } from '../fakes/openai.ts'
import { UNLIMITED_BUDGETS, announceSkip, postgresUrl, redisUrl } from '../helpers.ts'
import { clusterAdmin, createCluster, type Cluster, type ServiceProcess } from '../scale-out/cluster.ts'
import { composeFile, environmentOf, freePort, nginxBinary, replicas as composeReplicas, startNginx, type RunningNginx } from './files.ts'

const runnable = Boolean(nginxBinary && postgresUrl && redisUrl)
if (!nginxBinary) console.warn('[skip] rolling restart behind nginx: nginx is not installed')
else if (!postgresUrl) announceSkip('rolling restart behind nginx', 'DATABASE_URL')
else if (!redisUrl) announceSkip('rolling restart behind nginx', 'REDIS_URL')

const PROXY_ADDRESS = '127.0.0.2'
const ANSWER = Array.from({ length: 8 }, (_, i) => `w${i} `)
/** About 10 s of answer: long work accepted just before a stop finishes within SHUTDOWN_TIMEOUT_MS. */
const LONG_ANSWER = Array.from({ length: 100 }, (_, i) => `l${i} `)
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
  let git: GitServer
  let cluster: Cluster
  let proxy: RunningNginx
  const ports = [freePort(), freePort()]
  const names = ['replica-a', 'replica-b']
  const replicas: ServiceProcess[] = []

  beforeAll(async () => {
    model = startFakeOpenAi()
    model.fallback = (body) => (asking('a long answer')(body) ? { text: LONG_ANSWER, delayMs: 100 } : { text: ANSWER, delayMs: 25 })
    git = startGitServer()
    cluster = await createCluster(redisUrl!, {
      IMPORT_CODEHOST_URL: git.url,
      IMPORT_ALLOW_HOSTS: `127.0.0.1:${git.port}`,
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
  }, 120_000)

  afterAll(async () => {
    await proxy?.stop()
    await cluster?.close()
    await model?.close()
    await git?.close()
  })

  /** docs/deployment.mdx, "Rolling restarts", for replica `i`. */
  async function restart(i: number) {
    const stopping = replicas[i]!
    // 1-3: SIGTERM; it drains and exits 0.
    expect(await stopping.stop()).toBe(0)
    // 4: start it again on the same address, and wait until its /ready answers 200.
    const started = await cluster.start(names[i]!, { PORT: String(ports[i]) })
    for (
      let attempt = 0;
      (await started.request('/ready').then(
        (r) => r.status,
        () => 0,
      )) !== 200;
      attempt++
    ) {
      if (attempt === 100) throw new Error(`${names[i]} not ready`)
      await Bun.sleep(100)
    }
    replicas[i] = started
  }

  test('each replica restarted in turn while clients send GET and POST requests: none fails', async () => {
    const login = await fetch(`${proxy.url}/auth/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(clusterAdmin),
    })
    expect(login.status).toBe(200)
    const token = ((await login.json()) as { accessToken: string }).accessToken
    const headers = { authorization: `Bearer ${token}` }

    const counts: Record<string, number> = {}
    const failures: Failure[] = []
    let sent = 0
    let sentLong = 0
    let resumed = 0
    let resent = 0
    let restarting = true

    // Nothing to resume (204): the answer is no longer running, so it is, or is about to be, stored.
    const storedAnswer = async (id: string, answer: string[]) => {
      let text: string | undefined
      for (let attempt = 0; attempt < 50 && text !== answer.join(''); attempt++) {
        if (attempt) await Bun.sleep(100)
        const stored = (await (await fetch(`${proxy.url}/api/chat/${id}`, { headers })).json()) as {
          messages: { role: string; parts: { type: string; text?: string }[] }[]
        }
        text = stored.messages.at(-1)?.role === 'assistant' ? stored.messages.at(-1)!.parts.find((p) => p.type === 'text')?.text : undefined
      }
      return text === answer.join('') ? undefined : `nothing to resume after a cut stream, and the stored answer is ${JSON.stringify(text)}`
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
        const res = await fetch(`${proxy.url}/auth/login`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(clusterAdmin),
        })
        await res.arrayBuffer()
        return res.status === 200 ? undefined : `status ${res.status}`
      },
      'POST /api/chat': () => chatTurn('eight words', ANSWER),
    }
    // Long work, each kind sent one after the other by a client of its own for as long as the restarts last.
    const longWork: Record<string, () => Promise<string | undefined>> = {
      'POST /api/chat (10 s)': () => chatTurn('a long answer', LONG_ANSWER),
      'agent task': async () => {
        // The task runs where the socket is; a client told to go away (1001) reconnects through the proxy and
        // subscribes again after the last message it has, as docs/agents.mdx says.
        const wsUrl = `${proxy.url.replace('http', 'ws')}/ws/agent`
        // A command that reached a replica as it began to drain is refused with `unavailable` and its socket closed
        // (1001): the client reconnects through the proxy and sends it again, as docs/agents.mdx says.
        let client = await connectAgent(wsUrl, token)
        let first: AgentMessage
        for (let attempt = 0; ; attempt++) {
          client.send({ type: 'agent_command', id: 'c1', command: 'debug', params: { code: 'const total: number = "1"', error: 'TS2322' } })
          first = await client.next((m) => m.type === 'ack' || m.type === 'error', 20_000)
          if (first.type === 'ack') break
          if (first.code !== 'unavailable' || attempt === 5) return `command refused: ${first.code} ${first.message}`
          if ((await client.closed).code !== 1001) return `command refused with ${first.code}, and its socket not closed with 1001`
          resent++
          client = await connectAgent(wsUrl, token)
        }
        const taskId = first.taskId as string
        const seen: AgentMessage[] = []
        for (let reconnects = 0; ; reconnects++) {
          const ended = await Promise.race([client.next(isFinal(taskId), 60_000).then((m) => ({ final: m })), client.closed.then((c) => ({ closed: c }))])
          seen.push(...client.taskMessages(taskId).filter((m) => m.seq > (seen.at(-1)?.seq ?? 0)))
          client.close()
          if ('final' in ended) return ended.final.type === 'result' ? undefined : `task ended ${JSON.stringify(ended.final)}`
          if (ended.closed.code !== 1001) return `socket closed with ${ended.closed.code} ${ended.closed.reason}`
          if (reconnects === 5) return 'told to go away five times'
          resumed++
          client = await connectAgent(wsUrl, token)
          client.send({ type: 'subscribe', id: 's1', taskId, afterSeq: seen.at(-1)?.seq ?? 0 })
        }
      },
      'POST /api/codehost/import': async () => {
        const name = `acme/repo-${crypto.randomUUID().slice(0, 8)}`
        git.createRepository(name, { 'src/index.ts': `export const name = ${JSON.stringify(name)}\n` })
        const res = await fetch(`${proxy.url}/api/codehost/import`, {
          method: 'POST',
          headers: { ...headers, 'content-type': 'application/json' },
          body: JSON.stringify({ repository: name }),
        })
        if (res.status !== 202) return `status ${res.status}: ${(await res.text()).slice(0, 200)}`
        const { importId } = (await res.json()) as { importId: string }
        for (let attempt = 0; attempt < 300; attempt++) {
          const view = await fetch(`${proxy.url}/api/codehost/imports/${importId}`, { headers }).then(
            (r) => r.json() as Promise<{ status: string; error?: unknown }>,
          )
          if (view.status === 'succeeded') return undefined
          if (view.status === 'failed') return `import failed: ${JSON.stringify(view.error)}`
          await Bun.sleep(100)
        }
        return 'import not finished within 30 s'
      },
    }

    /** A chat turn through the proxy, resumed on the other replica when a stopping one cuts it. */
    async function chatTurn(question: string, answer: string[]): Promise<string | undefined> {
      {
        const id = crypto.randomUUID()
        const res = await fetch(`${proxy.url}/api/chat`, {
          method: 'POST',
          headers: { ...headers, 'content-type': 'application/json' },
          body: JSON.stringify({ id, messages: [{ role: 'user', content: question }] }),
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
          if (again.status === 204) return storedAnswer(id, answer)
          if (again.status !== 200) return `resume answered ${again.status}`
          part = await readStream(again)
          events = [...events, ...part.events]
        }
        const text = textOf(events)
        return text === answer.join('') ? undefined : `answer ${JSON.stringify(text)}`
      }
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
    const longClient = async (kind: string) => {
      while (restarting) {
        counts[kind] = (counts[kind] ?? 0) + 1
        sentLong++
        const problem = await longWork[kind]!().catch((err: Error) => `${err.name}: ${err.message}`)
        if (problem) failures.push({ kind, detail: problem })
        await Bun.sleep(150)
      }
    }
    const clients = [...Array.from({ length: CLIENTS }, client), ...Object.keys(longWork).map(longClient)]
    // Some traffic before the first restart, so connections to both replicas are open and pooled.
    while (sent < 40) await Bun.sleep(20)
    try {
      for (let i = 0; i < replicas.length; i++) await restart(i)
    } finally {
      restarting = false
    }
    await Promise.all(clients)

    const upstreamErrors = proxy
      .errorLog()
      .split('\n')
      .filter((l) => l.includes('upstream'))
    // Long work a draining replica refused (503) and nginx passed to the other one.
    const refusedWhileDraining = proxy
      .accessLog()
      .split('\n')
      .filter((l) => /upstream=503, /.test(l)).length
    console.log(
      `rolling restart behind nginx: ${sent + sentLong} requests (${[...kinds, ...Object.keys(longWork)].map((k) => `${counts[k]} ${k}`).join(', ')}), ` +
        `${failures.length} failed, ${resumed} chat streams and agent tasks resumed on the other replica, ${resent} agent commands sent again after a draining replica refused them, ${upstreamErrors.length} upstream errors in nginx's log, ${refusedWhileDraining} requests refused by a draining replica and taken by the other`,
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
