import { afterEach, describe, expect, test } from 'bun:test'
import { AppError } from '../src/errors.ts'
import { classifyAddress, createHttpClient, guardUrl, parseHostAddress, type AddressKind } from '../src/http.ts'
import { startFakeServer, type FakeServer } from './fakes/server.ts'

const servers: FakeServer[] = []
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()))
})

function fake(handle: Parameters<typeof startFakeServer>[0]): FakeServer {
  const server = startFakeServer(handle)
  servers.push(server)
  return server
}

/** A fake that answers with `statuses` in turn, then 200. */
function answering(...answers: (number | Response)[]): FakeServer {
  let next = 0
  return fake(() => {
    const answer = answers[next++] ?? 200
    return typeof answer === 'number' ? new Response(`status ${answer}`, { status: answer }) : answer
  })
}

/** A client whose backoff waits are recorded instead of slept. */
function recordingClient(options: Parameters<typeof createHttpClient>[0] = {}) {
  const sleeps: number[] = []
  const client = createHttpClient({ sleep: async (ms) => void sleeps.push(ms), ...options })
  return { client, sleeps }
}

async function failureOf(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => {
      throw new Error('expected the request to fail')
    },
    (error: unknown) => error,
  )
}

/** A port nothing listens on: a server's, after it stopped. */
async function closedPort(): Promise<number> {
  const server = startFakeServer(() => new Response())
  await server.close()
  return server.port
}

describe('createHttpClient', () => {
  test('retries a 503 and answers the success, keeping the connection alive', async () => {
    const upstream = answering(503, 200)
    const { client, sleeps } = recordingClient()
    const response = await client.request(`${upstream.url}/v1/models`)
    expect(response.status).toBe(200)
    expect(upstream.requests).toHaveLength(2)
    expect(sleeps).toHaveLength(1)
    expect(upstream.requests[0]!.headers.connection).not.toBe('close')
  })

  test('backs off exponentially with jitter', async () => {
    const upstream = answering(502, 504, 200)
    const { client, sleeps } = recordingClient()
    expect((await client.request(upstream.url)).status).toBe(200)
    expect(sleeps).toHaveLength(2)
    expect(sleeps[0]).toBeGreaterThanOrEqual(125)
    expect(sleeps[0]).toBeLessThanOrEqual(250)
    expect(sleeps[1]).toBeGreaterThanOrEqual(250)
    expect(sleeps[1]).toBeLessThanOrEqual(500)
  })

  test('waits as long as Retry-After asks, in seconds or as an HTTP date', async () => {
    const inSeconds = answering(new Response('slow down', { status: 429, headers: { 'retry-after': '7' } }))
    const seconds = recordingClient()
    expect((await seconds.client.request(inSeconds.url)).status).toBe(200)
    expect(seconds.sleeps).toEqual([7000])

    const at = new Date(Date.now() + 20_000).toUTCString()
    const asDate = answering(new Response('maintenance', { status: 503, headers: { 'retry-after': at } }))
    const date = recordingClient()
    expect((await date.client.request(asDate.url)).status).toBe(200)
    expect(date.sleeps).toHaveLength(1)
    // HTTP dates have whole seconds; the wait is what is left until then.
    expect(date.sleeps[0]).toBeGreaterThan(15_000)
    expect(date.sleeps[0]).toBeLessThanOrEqual(20_000)
  })

  test('answers a Retry-After beyond the cap at once instead of waiting', async () => {
    const upstream = answering(new Response('come back later', { status: 429, headers: { 'retry-after': '120' } }))
    const { client, sleeps } = recordingClient({ maxRetryAfterSeconds: 30 })
    const response = await client.request(upstream.url)
    expect(response.status).toBe(429)
    expect(response.headers.get('retry-after')).toBe('120')
    expect(await response.text()).toBe('come back later')
    expect(sleeps).toEqual([])
    expect(upstream.requests).toHaveLength(1)
  })

  test('returns the last 429 or 5xx when retries run out, for the adapter to map', async () => {
    const upstream = answering(503, 503, 503, 200)
    const { client } = recordingClient({ retries: 2 })
    const response = await client.request(upstream.url)
    expect(response.status).toBe(503)
    expect(await response.text()).toBe('status 503')
    expect(upstream.requests).toHaveLength(3)
  })

  test('does not retry a POST unless it is declared idempotent', async () => {
    const once = answering(503, 200)
    const { client } = recordingClient()
    const response = await client.request(`${once.url}/v1/charges`, { method: 'POST', body: '{"amount":100}' })
    expect(response.status).toBe(503)
    expect(once.requests).toHaveLength(1)

    const retried = answering(503, 200)
    const keyed = await client.request(`${retried.url}/v1/charges`, {
      method: 'POST',
      body: '{"amount":100}',
      headers: { 'idempotency-key': 'k-1' },
      idempotent: true,
    })
    expect(keyed.status).toBe(200)
    expect(retried.requests.map((r) => [r.method, r.body])).toEqual([
      ['POST', '{"amount":100}'],
      ['POST', '{"amount":100}'],
    ])
  })

  test('does not retry 500 or 4xx answers', async () => {
    const upstream = answering(500, 200)
    const { client } = recordingClient()
    expect((await client.request(upstream.url)).status).toBe(500)
    expect(upstream.requests).toHaveLength(1)
  })

  test('an upstream that never answers is upstream_timeout', async () => {
    const silent = fake(() => new Promise<Response>(() => {}))
    const { client } = recordingClient()
    const error = await failureOf(client.request(`${silent.url}/search`, { timeoutMs: 100, upstream: 'search provider' }))
    expect(error).toBeInstanceOf(AppError)
    expect((error as AppError).code).toBe('upstream_timeout')
    expect((error as AppError).message).toBe(`search provider did not answer within 100 ms (GET ${silent.url}/search)`)
    expect(silent.requests).toHaveLength(1)
  })

  test('the timeout covers the wait for headers, not a body that keeps streaming', async () => {
    const streaming = fake(
      () =>
        new Response(
          (async function* () {
            for (let i = 0; i < 4; i++) {
              yield `data: ${i}\n\n`
              await Bun.sleep(60)
            }
          })(),
        ),
    )
    const { client } = recordingClient()
    const response = await client.request(streaming.url, { timeoutMs: 100 })
    expect(await response.text()).toBe('data: 0\n\ndata: 1\n\ndata: 2\n\ndata: 3\n\n')
  })

  test("a caller's abort is rethrown as is and not retried", async () => {
    const arrived = Promise.withResolvers<void>()
    const silent = fake(() => {
      arrived.resolve()
      return new Promise<Response>(() => {})
    })
    const { client, sleeps } = recordingClient()
    const caller = new AbortController()
    const reason = new Error('user pressed stop')
    const pending = client.request(silent.url, { signal: caller.signal })
    await arrived.promise
    caller.abort(reason)
    expect(await failureOf(pending)).toBe(reason)
    expect(silent.requests).toHaveLength(1)
    expect(sleeps).toEqual([])
  })

  test("a caller's abort during a Retry-After wait ends the wait", async () => {
    const upstream = answering(new Response('busy', { status: 503, headers: { 'retry-after': '20' } }))
    const waiting = Promise.withResolvers<void>()
    const client = createHttpClient({
      sleep: () => {
        waiting.resolve()
        return new Promise<void>(() => {})
      },
    })
    const caller = new AbortController()
    const pending = client.request(upstream.url, { signal: caller.signal })
    await waiting.promise
    caller.abort(new Error('client left'))
    expect(((await failureOf(pending)) as Error).message).toBe('client left')
    expect(upstream.requests).toHaveLength(1)
  })

  test('an unreachable upstream is upstream_error after the retries', async () => {
    const port = await closedPort()
    const { client, sleeps } = recordingClient()
    const error = await failureOf(client.request(`http://127.0.0.1:${port}/v1/chat`, { upstream: 'model provider' }))
    expect(error).toBeInstanceOf(AppError)
    expect((error as AppError).code).toBe('upstream_error')
    expect((error as AppError).message).toStartWith('model provider is unreachable: ')
    expect((error as AppError).message).toEndWith(`(GET http://127.0.0.1:${port}/v1/chat)`)
    expect(sleeps).toHaveLength(2)
  })

  test('a network failure on an idempotent request is retried', async () => {
    const upstream = answering(200)
    let calls = 0
    const flaky: typeof fetch = Object.assign(
      (input: string | URL | Request, init?: RequestInit) =>
        calls++ === 0 ? Promise.reject(Object.assign(new TypeError('socket closed'), { code: 'ECONNRESET' })) : fetch(input, init),
      { preconnect: fetch.preconnect },
    )
    const { client, sleeps } = recordingClient({ fetch: flaky })
    expect((await client.request(upstream.url, { method: 'DELETE' })).status).toBe(200)
    expect(calls).toBe(2)
    expect(sleeps).toHaveLength(1)
  })

  test('errors never carry the query string or headers', async () => {
    const port = await closedPort()
    const silent = fake(() => new Promise<Response>(() => {}))
    const { client } = recordingClient({ retries: 0 })
    const secretInit = { headers: { authorization: 'Bearer sk-HEADER-SECRET' } }
    const failures = [
      await failureOf(client.request(`http://user:pw-SECRET@127.0.0.1:${port}/v1/x?api_key=QUERY-SECRET`, secretInit)),
      await failureOf(client.request(`${silent.url}/v1/x?api_key=QUERY-SECRET`, { ...secretInit, timeoutMs: 50 })),
    ]
    for (const error of failures) {
      expect(error).toBeInstanceOf(AppError)
      // Bun.inspect shows the message, stack, cause and every own property, as a log line would.
      const printed = Bun.inspect(error)
      expect(printed).toContain('/v1/x')
      for (const secret of ['QUERY-SECRET', 'sk-HEADER-SECRET', 'pw-SECRET', 'api_key']) expect(printed).not.toContain(secret)
    }
  })
})

describe('classifyAddress', () => {
  const table: [string, AddressKind][] = [
    ['8.8.8.8', 'public'],
    ['1.1.1.1', 'public'],
    ['127.0.0.1', 'loopback'],
    ['127.255.255.254', 'loopback'],
    ['10.0.0.1', 'private'],
    ['10.255.255.255', 'private'],
    ['172.16.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['172.15.255.255', 'public'],
    ['172.32.0.0', 'public'],
    ['192.168.1.1', 'private'],
    ['100.64.0.1', 'private'],
    ['100.127.255.255', 'private'],
    ['100.128.0.0', 'public'],
    ['169.254.169.254', 'metadata'],
    ['169.254.1.1', 'link-local'],
    ['0.0.0.0', 'unspecified'],
    ['0.1.2.3', 'reserved'],
    ['224.0.0.1', 'reserved'],
    ['239.255.255.255', 'reserved'],
    ['240.0.0.1', 'reserved'],
    ['255.255.255.255', 'reserved'],
    ['::1', 'loopback'],
    ['::', 'unspecified'],
    ['fc00::1', 'private'],
    ['fd12:3456::1', 'private'],
    ['fe80::1', 'link-local'],
    ['febf::1', 'link-local'],
    ['fe80::1%eth0', 'link-local'],
    ['::ffff:127.0.0.1', 'loopback'],
    ['::ffff:7f00:1', 'loopback'],
    ['::ffff:10.1.2.3', 'private'],
    ['::ffff:a9fe:a9fe', 'metadata'],
    ['::ffff:8.8.8.8', 'public'],
    ['64:ff9b::127.0.0.1', 'loopback'],
    ['64:ff9b::a9fe:a9fe', 'metadata'],
    ['64:ff9b::808:808', 'public'],
    ['fd00:ec2::254', 'metadata'],
    ['ff02::1', 'reserved'],
    ['2001:db8::1', 'reserved'],
    ['2606:4700:4700::1111', 'public'],
    ['2a00:1450:4001::200e', 'public'],
  ]
  test.each(table)('%s is %s', (ip, kind) => {
    expect(classifyAddress(ip)).toBe(kind)
  })

  test('refuses something that is not an address', () => {
    expect(() => classifyAddress('example.com')).toThrow(TypeError)
  })
})

describe('parseHostAddress', () => {
  const spellings = ['127.0.0.1', '0x7f000001', '0177.1', '2130706433', '127.1', '0x7f.1', '0x7f.0.0.1', '0177.0.0.01', '127.0.0.1.']
  test.each(spellings)('the URL parser already reads %s as 127.0.0.1', (spelling) => {
    expect(new URL(`http://${spelling}/`).hostname).toBe('127.0.0.1')
    expect(parseHostAddress(spelling)).toBe('127.0.0.1')
  })

  test('IPv6 literals come back compressed, with embedded IPv4 in hex', () => {
    expect(parseHostAddress('[::ffff:127.0.0.1]')).toBe('::ffff:7f00:1')
    expect(parseHostAddress('0:0:0:0:0:0:0:1')).toBe('::1')
    expect(parseHostAddress('[FD00:EC2:0:0:0:0:0:254]')).toBe('fd00:ec2::254')
  })

  test('names and junk are not addresses', () => {
    for (const host of ['example.com', 'localhost', '127.0.0.1.nip.io', 'user@127.0.0.1', '127.0.0.1/x', '', '256.0.0.1', '127.0.0.1:80']) {
      expect(parseHostAddress(host)).toBeUndefined()
    }
  })
})

describe('guardUrl', () => {
  const noLookup = async (host: string): Promise<string[]> => {
    throw new Error(`unexpected lookup of ${host}`)
  }

  async function refusal(url: string, options: Parameters<typeof guardUrl>[1] = { lookup: noLookup }): Promise<AppError> {
    const error = await failureOf(guardUrl(url, options))
    expect(error).toBeInstanceOf(AppError)
    expect((error as AppError).code).toBe('bad_request')
    return error as AppError
  }

  const loopbackSpellings = [
    'http://127.0.0.1/',
    'http://0x7f000001/',
    'http://0177.1/',
    'http://2130706433/',
    'http://127.1/',
    'http://0x7f.1/',
    'http://127.0.0.1./',
    'http://017700000001/',
    'http://127.000.000.001:8080/',
    'http://[::1]/',
    'http://[::ffff:127.0.0.1]/',
    'http://[::ffff:7f00:1]/',
    'http://[0:0:0:0:0:ffff:7f00:1]/',
    'http://[64:ff9b::7f00:1]/',
    'https://0x7F000001/repo.git',
  ]
  test.each(loopbackSpellings)('refuses %s as loopback', async (url) => {
    const error = await refusal(url)
    expect(error.message).toMatch(/^URL resolves to a loopback address \(/)
  })

  test('refuses metadata and private addresses, named in the message', async () => {
    expect((await refusal('http://169.254.169.254/latest/meta-data/')).message).toBe('URL resolves to a cloud metadata address (169.254.169.254)')
    expect((await refusal('http://[fd00:ec2::254]/')).message).toContain('cloud metadata address')
    expect((await refusal('http://10.0.0.5/')).message).toContain('private network address (10.0.0.5)')
    expect((await refusal('http://0.0.0.0:3000/')).message).toContain('unspecified address (0.0.0.0)')
  })

  test('refuses a name when any address it resolves to is internal', async () => {
    const lookup = async (host: string) => (host === 'git.example.com' ? ['140.82.112.3', '10.1.2.3'] : [])
    const error = await refusal('https://git.example.com/org/repo.git', { lookup, label: 'repository URL' })
    expect(error.message).toBe('repository URL resolves to a private network address (10.1.2.3)')

    const mapped = await refusal('https://rebind.example/', { lookup: async () => ['::ffff:127.0.0.1'] })
    expect(mapped.message).toContain('loopback address')
  })

  test('lets a public name through and returns the address to connect to', async () => {
    const lookup = async () => ['140.82.112.3', '2606:4700::1111']
    const guarded = await guardUrl('https://git.example.com/org/repo.git', { lookup })
    expect(guarded.address).toBe('140.82.112.3')
    expect(guarded.url.href).toBe('https://git.example.com/org/repo.git')
  })

  test('allowPrivate admits private networks but never loopback or metadata', async () => {
    const at = (address: string) => ({ allowPrivate: true, lookup: async () => [address] })
    expect((await guardUrl('http://gitea.internal/', at('192.168.1.20'))).address).toBe('192.168.1.20')
    await refusal('http://gitea.internal/', at('127.0.0.1'))
    await refusal('http://gitea.internal/', at('169.254.169.254'))
  })

  test('allowHosts lets a local test server through, only on its port', async () => {
    const server = fake(() => new Response('ok'))
    const allowHosts = [`127.0.0.1:${server.port}`]
    const guarded = await guardUrl(`${server.url}/repo.git`, { allowHosts, lookup: noLookup })
    expect(guarded.address).toBe('127.0.0.1')
    expect(await (await fetch(guarded.url)).text()).toBe('ok')
    await refusal(`http://127.0.0.1:${server.port + 1}/repo.git`, { allowHosts, lookup: noLookup })
  })

  test('refuses credentials in the URL', async () => {
    const error = await refusal('https://user:token@github.com/org/repo.git')
    expect(error.message).toBe('URL must not contain a username or password')
    expect(error.message).not.toContain('token')
  })

  test('refuses schemes other than http and https', async () => {
    for (const url of ['ftp://example.com/file', 'file:///etc/passwd', 'gopher://127.0.0.1:6379/_INFO']) {
      expect((await refusal(url)).message).toBe('URL must use http or https')
    }
    expect((await refusal('not a url')).message).toBe('URL is not a valid URL')
  })

  test('a name that does not resolve is a bad request', async () => {
    const lookup = async () => {
      throw Object.assign(new Error('getaddrinfo ENOTFOUND'), { code: 'ENOTFOUND' })
    }
    expect((await refusal('https://nowhere.invalid/', { lookup })).message).toBe('URL host nowhere.invalid does not resolve')
  })
})
