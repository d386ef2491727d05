/**
 * docs/deployment/nginx.conf in front of two real service processes sharing PostgreSQL, Redis and
 * DATA_DIR: readiness, both replicas used, chat SSE passed on as it is written, the agent WebSocket
 * upgraded, the client's own address seen behind the proxy, and a stopped replica skipped.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { EventSourceParserStream } from 'eventsource-parser/stream'
import { connectAgent } from '../agents/helpers.ts'
import { startFakeOpenAi, type FakeOpenAi } from '../fakes/openai.ts'
import { announceSkip, postgresUrl, redisUrl } from '../helpers.ts'
import { clusterAdmin, createCluster, type Cluster, type ServiceProcess } from '../scale-out/cluster.ts'
import { nginxBinary, startNginx, type RunningNginx } from './files.ts'

const runnable = Boolean(nginxBinary && postgresUrl && redisUrl)
if (!nginxBinary) console.warn('[skip] the service behind nginx: nginx is not installed')
else if (!postgresUrl) announceSkip('the service behind nginx', 'DATABASE_URL')
else if (!redisUrl) announceSkip('the service behind nginx', 'REDIS_URL')

// nginx connects to the replicas from this address, so that the proxy and the client differ as they
// would on a network: the replicas trust it, and the client is 127.0.0.1.
const PROXY_ADDRESS = '127.0.0.2'
// Few words, far apart: a buffering proxy would hold all of them (well under one buffer) until the end.
const ANSWER = Array.from({ length: 6 }, (_, i) => `word${i} `)

describe.skipIf(!runnable)('the service behind nginx', () => {
  let model: FakeOpenAi
  let cluster: Cluster
  let replicas: ServiceProcess[]
  let proxy: RunningNginx
  let token: string

  beforeAll(async () => {
    model = startFakeOpenAi()
    model.fallback = () => ({ text: ANSWER, delayMs: 150 })
    cluster = await createCluster(redisUrl!, {
      OPENAI_BASE_URL: model.baseUrl,
      CHAT_MODEL: 'fake-model',
      // Answer tokens stream as they come, without a confidence check holding the first ones back.
      CHAT_SEARCH_AUGMENTATION: 'false',
      TRUSTED_PROXIES: PROXY_ADDRESS,
    })
    // One after the other: the first creates the owner account, the second finds it.
    replicas = [await cluster.start('replica-a'), await cluster.start('replica-b')]
    proxy = await startNginx({
      upstreams: replicas.map((r) => new URL(r.url).host),
      extraHttp: [`proxy_bind ${PROXY_ADDRESS};`],
    })
    const login = await fetch(`${proxy.url}/auth/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(clusterAdmin),
    })
    expect(login.status).toBe(200)
    token = ((await login.json()) as { accessToken: string }).accessToken
  }, 120_000)

  afterAll(async () => {
    await proxy?.stop()
    await cluster?.close()
    await model?.close()
  })

  /** The access log line a replica wrote for a request id, if that replica served it. */
  const servedBy = (requestId: string) =>
    replicas.filter((r) => r.logs.some((line) => line.msg === 'request' && line.requestId === requestId)).map((r) => r.name)

  test('GET /ready answers through the proxy', async () => {
    const res = await fetch(`${proxy.url}/ready`)
    expect(res.status).toBe(200)
    expect(await res.json()).toMatchObject({ status: 'ready' })
  })

  test('requests reach both replicas', async () => {
    const ids = Array.from({ length: 6 }, (_, i) => `spread-${i}-${crypto.randomUUID().slice(0, 8)}`)
    for (const id of ids) expect((await fetch(`${proxy.url}/health`, { headers: { 'x-request-id': id } })).status).toBe(200)
    // The log line is written once the response is out: wait for each.
    await Promise.all(ids.map((id) => Promise.any(replicas.map((r) => r.waitForLog((l) => l.msg === 'request' && l.requestId === id, 5000)))))
    const served = ids.flatMap(servedBy)
    expect(served.length).toBe(ids.length)
    expect(new Set(served)).toEqual(new Set(['replica-a', 'replica-b']))
  })

  test("the service logs the client's address, not the proxy's nor one the client made up", async () => {
    const id = `address-${crypto.randomUUID().slice(0, 8)}`
    // A refusal: its access line always names the client.
    const res = await fetch(`${proxy.url}/auth/me`, { headers: { 'x-request-id': id, 'x-forwarded-for': '203.0.113.7' } })
    expect(res.status).toBe(401)
    const line = await Promise.any(replicas.map((r) => r.waitForLog((l) => l.msg === 'request' && l.requestId === id, 5000)))
    expect(line.ip).toBe('127.0.0.1')
  })

  test('a chat stream reaches the client as it is written: the first words arrive while the model is still answering', async () => {
    const res = await fetch(`${proxy.url}/api/chat`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body: JSON.stringify({ messages: [{ role: 'user', content: 'Say six words.' }] }),
    })
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toStartWith('text/event-stream')
    const events = res.body!.pipeThrough(new TextDecoderStream()).pipeThrough(new EventSourceParserStream())
    let text = ''
    let modelAnsweringAtFirstWord: boolean | undefined
    let done = false
    for await (const event of events) {
      if (event.data === '[DONE]') {
        done = true
        continue
      }
      const chunk = JSON.parse(event.data) as { type: string; delta?: string }
      if (chunk.type !== 'text-delta') continue
      // Buffered by the proxy, the first word would come only once the model had finished.
      modelAnsweringAtFirstWord ??= model.open > 0
      text += chunk.delta
    }
    expect(modelAnsweringAtFirstWord).toBe(true)
    expect(text).toBe(ANSWER.join(''))
    expect(done).toBe(true)
  })

  test('the agent WebSocket upgrades through the proxy (token as the subprotocol) and answers a ping', async () => {
    const ws = proxy.url.replace(/^http/, 'ws')
    const client = await connectAgent(`${ws}/ws/agent`, token, { protocols: ['bearer', token] })
    try {
      expect(client.socket.protocol).toBe('bearer')
      client.send({ type: 'ping', id: 'through-the-proxy' })
      expect(await client.next((m) => m.type === 'pong')).toMatchObject({ type: 'pong', id: 'through-the-proxy' })
    } finally {
      client.close()
    }
  })

  // Last: it stops a replica.
  test('a replica that stops is skipped: requests keep being answered by the other', async () => {
    const [stopped, remaining] = replicas as [ServiceProcess, ServiceProcess]
    expect(await stopped.stop()).toBe(0)
    const ids = Array.from({ length: 4 }, (_, i) => `after-stop-${i}-${crypto.randomUUID().slice(0, 8)}`)
    for (const id of ids) expect((await fetch(`${proxy.url}/health`, { headers: { 'x-request-id': id } })).status).toBe(200)
    await Promise.all(ids.map((id) => remaining.waitForLog((l) => l.msg === 'request' && l.requestId === id, 5000)))
    expect(ids.flatMap(servedBy)).toEqual(ids.map(() => remaining.name))
  })
})
