/**
 * Every request example of the documentation pages (see test/docs/exchanges.ts for the convention) is
 * sent to one service with every upstream faked, page by page in navigation order, and the answer must
 * have the documented status, headers and body shape. Values a response hands out (`accessToken`,
 * `importId`, `x-chat-id`...) fill the `<name>` placeholders of later examples.
 */
import { afterAll, describe, expect, test } from 'bun:test'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { externalOrgKey } from '../../src/auth/access-service.ts'
import { startFakeOpenAi, tokensOf, type CompletionScript } from '../fakes/openai.ts'
import { startOidcIssuer } from '../fakes/oidc-issuer.ts'
import { startFakeSearxng } from '../fakes/search-providers.ts'
import { startFakeStripe } from '../fakes/stripe-api.ts'
import { ADMIN, BASE } from '../helpers.ts'
import { paymentEnv, PRICES, SECRET_KEY, signature, YEARLY_PRICES } from '../payments/harness.ts'
import { startWorld } from '../publish/support.ts'
import { exchanges, headerProblems, parseSse, shapeProblems, sseProblems, type Exchange } from './exchanges.ts'

const ROOT = join(import.meta.dir, '..', '..')

interface NavigationGroup {
  group: string
  pages: (string | NavigationGroup)[]
}

/** Pages in navigation order, as docs.json lists them. */
function navigationPages(): string[] {
  const config = JSON.parse(readFileSync(join(ROOT, 'docs.json'), 'utf8')) as { navigation: { groups: NavigationGroup[] } }
  const visit = (group: NavigationGroup): string[] => group.pages.flatMap((entry) => (typeof entry === 'string' ? [entry] : visit(entry)))
  return config.navigation.groups.flatMap(visit)
}

/** Each page's examples; a page whose examples break the convention gets a failing test instead. */
const pages = navigationPages().map((page) => {
  try {
    return { page, exchanges: exchanges(readFileSync(join(ROOT, `${page}.mdx`), 'utf8')) }
  } catch (error) {
    return { page, exchanges: [], error: `${page}.mdx: ${(error as Error).message}` }
  }
})

// The upstreams: a model provider, a search engine, Stripe, an identity provider, and (from the publishing
// suites' world) GitHub's OAuth, REST API and git server, which also serves the repositories imported.
const model = startFakeOpenAi()
const sure = (text: string): CompletionScript => ({ text, logprobs: tokensOf(text).map(() => -0.01) })
model.fallback = () => sure('Use `Bun.SQL` (or the `sql` tag): one client for PostgreSQL and SQLite, with tagged-template queries.')
const searxng = startFakeSearxng()
const stripe = startFakeStripe({ secretKey: SECRET_KEY, prices: [...Object.values(PRICES), ...Object.values(YEARLY_PRICES)] })
const idp = await startOidcIssuer()
// The world's own PUBLIC_BASE_URL stays: its OAuth app has the redirect URI registered for it.
const { PUBLIC_BASE_URL: _paymentsBaseUrl, ...payments } = paymentEnv(stripe)
const world = await startWorld('sqlite', {
  ADMIN_EMAIL: ADMIN.email,
  ADMIN_PASSWORD: ADMIN.password,
  ALLOW_REGISTRATION: 'true',
  OPENAI_BASE_URL: model.baseUrl,
  SEARXNG_URL: searxng.url,
  OIDC_ISSUER: idp.url,
  OIDC_AUDIENCE: 'realtime-ai-backend-api',
  OIDC_ORG_CLAIM: 'org_id',
  ...payments,
})
const { t } = world

// The reader of the pages: the owner of an organisation on the enterprise plan, with GitHub connected.
const owner = await world.connectedMember('owner')
await t.deps.accounts.setPlan(owner.orgId, 'enterprise')
t.deps.plans.forget(owner.orgId)
const viewer = await world.member('viewer')
// The identity provider's users of organisation "example-labs" join the reader's organisation.
await t.deps.accounts.linkOrganization(owner.orgId, externalOrgKey(idp.url, 'org_id', 'example-labs'))

world.git.createRepository('octo-dev/hello-api', {
  'README.md': '# hello-api\n\nA small HTTP API that receives payment webhooks and serves a status page.\n',
  LICENSE: 'MIT License\n\nCopyright (c) 2026 Octo Dev\n\nPermission is hereby granted, free of charge, to any person obtaining a copy\n',
  'package.json': JSON.stringify(
    { name: 'hello-api', main: 'src/index.ts', dependencies: { elysia: '^1.4.0' }, devDependencies: { typescript: '^5.9.0' } },
    null,
    2,
  ),
  'src/index.ts':
    "import { Elysia } from 'elysia'\nimport { verifyWebhookSignature } from './webhooks'\n\nexport const app = new Elysia()\n  .get('/health', () => ({ status: 'ok' }))\n  .post('/webhooks', async ({ request, headers }) => {\n    const payload = await request.text()\n    if (!(await verifyWebhookSignature(payload, headers['stripe-signature'] ?? '', process.env.WEBHOOK_SECRET!))) return new Response('bad signature', { status: 400 })\n    return { received: true }\n  })\n",
  'src/webhooks.ts': [
    '/** Checks a Stripe-Signature header (t=<unix time>,v1=<hex HMAC>) over the raw payload. */',
    'export async function verifyWebhookSignature(payload: string, header: string, secret: string): Promise<boolean> {',
    "  const parts = Object.fromEntries(header.split(',').map((kv) => kv.split('=') as [string, string]))",
    '  if (!parts.t || !parts.v1) return false',
    "  const key = await crypto.subtle.importKey('raw', new TextEncoder().encode(secret), { name: 'HMAC', hash: 'SHA-256' }, false, ['sign'])",
    // biome-ignore lint/suspicious/noTemplateCurlyInString: code quoted from the documentation, as text
    "  const mac = await crypto.subtle.sign('HMAC', key, new TextEncoder().encode(`${parts.t}.${payload}`))",
    "  return Buffer.from(mac).toString('hex') === parts.v1",
    '}',
    '',
  ].join('\n'),
  'test/webhooks.test.ts':
    "import { expect, test } from 'bun:test'\nimport { verifyWebhookSignature } from '../src/webhooks'\n\ntest('refuses a header without a signature', async () => {\n  expect(await verifyWebhookSignature('{}', 't=1', 'secret')).toBe(false)\n})\n",
  'site/index.html': '<!doctype html><title>hello-api</title><h1>hello-api status</h1>',
  'site/style.css': 'body { font-family: system-ui }\n',
})

/** Values the examples name as `<name>`; responses add theirs as the pages go. */
const values: Record<string, string> = {
  token: owner.token,
  viewerToken: viewer.token,
  externalToken: await idp.token({
    claims: { aud: 'realtime-ai-backend-api', sub: 'idp|4711', role: 'member', scope: 'chat:write search:read', org_id: 'example-labs' },
  }),
}

/** Upstream behaviour an example needs beyond the defaults above, by a pattern over its request line and body. */
const arrange: { when: RegExp; script: () => void }[] = [
  {
    // A draft the model is unsure of (confidence e^-1.2 ≈ 0.30), then the answer grounded on the search results.
    when: /^POST \/api\/chat\n.*Which Bun release/s,
    script: () => {
      model.queue = [
        { text: 'I think it was Bun 1.1, but I am not certain.', logprobs: tokensOf('I think it was Bun 1.1, but I am not certain.').map(() => -1.2) },
        sure('Bun 1.2 added the built-in S3 client, together with Postgres support [3].'),
      ]
    },
  },
  {
    // A plan, code that fails the request's test, the repair, then the explanation step.
    when: /^POST \/api\/enhanced-chat\n/,
    script: () => {
      const code = (body: string) => `Here it is:\n\`\`\`ts\nexport function slugify(title: string): string {\n  return ${body}\n}\n\`\`\`\n`
      model.queue = [
        sure('{"steps": ["Write slugify", "Explain the edge cases"]}'),
        sure(code("title.toLowerCase().normalize('NFKD').replace(/[^a-z0-9]+/g, '-').replace(/^-|-$/g, '')")),
        sure(code("title.normalize('NFKD').replace(/[\\u0300-\\u036f]/g, '').toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-|-$/g, '')")),
        sure('Accents are removed after NFKD splits them from their letters, and runs of punctuation collapse into one hyphen.'),
      ]
    },
  },
]

afterAll(async () => {
  await world.close()
  await Promise.all([model.close(), searxng.close(), stripe.close(), idp.close()])
})

function substitute(text: string, strict: boolean): string {
  return text.replace(/<([A-Za-z][A-Za-z0-9]*)>/g, (whole, name: string) => {
    if (name in values) return values[name]!
    if (strict) throw new Error(`${whole} is not a value an earlier example answered (known: ${Object.keys(values).join(', ')})`)
    return whole
  })
}

async function send(exchange: Exchange): Promise<Response> {
  const { method, path } = exchange.request
  for (const step of arrange) if (step.when.test(`${method} ${path}\n${exchange.request.body}`)) step.script()
  const body = exchange.request.body ? substitute(exchange.request.body, false) : undefined
  // What every HTTP client sends, unless the example names another Host.
  const headers = new Headers({ host: new URL(t.config.publicBaseUrl).host })
  for (const [name, value] of exchange.request.headers) {
    // Signed over the exact bytes sent, as the payment provider does.
    if (name.toLowerCase() === 'stripe-signature' && value.includes('<signature>')) headers.set(name, await signature(body ?? ''))
    else headers.set(name, substitute(value, true))
  }
  return t.app.handle(new Request(BASE + substitute(path, true), { method, headers, body }))
}

const camel = (name: string) => name.replace(/-([a-z])/g, (_, c: string) => c.toUpperCase())

/**
 * Top-level values of an answer, its `x-` headers (x-chat-id becomes chatId) and the cookies it sets (refresh_token
 * becomes refreshTokenCookie), for later examples.
 */
function remember(headers: Headers, body: unknown) {
  for (const [name, value] of headers) if (name.startsWith('x-')) values[camel(name.slice(2))] = value
  for (const cookie of headers.getSetCookie()) {
    const [, name, value] = /^([^=;\s]+)=([^;]*)/.exec(cookie) ?? []
    if (name && value) values[`${camel(name.replace(/_/g, '-'))}Cookie`] = value
  }
  if (body && typeof body === 'object' && !Array.isArray(body))
    for (const [key, value] of Object.entries(body)) if (typeof value === 'string' || typeof value === 'number') values[key] = String(value)
}

/** The real answer written the way the pages write one, to compare or copy from. */
function asWritten(response: Response, text: string): string {
  const shown = ['content-type', 'cache-control', 'x-cache', 'location', 'ratelimit-policy', 'ratelimit', 'retry-after', 'allow'].flatMap((name) =>
    response.headers.get(name) ? [`${name}: ${response.headers.get(name)}`] : [],
  )
  let body = text
  try {
    body = JSON.stringify(JSON.parse(text), null, 2)
  } catch {
    // an event stream or empty
  }
  return [`HTTP/1.1 ${response.status}`, ...shown, '', body.slice(0, 6000)].join('\n')
}

/** Where the real answer differs from the documented one; the answer's JSON, when it is JSON, for later examples. */
function compare(documented: Exchange['response'], response: Response, text: string): { problems: string[]; answered?: unknown } {
  const problems: string[] = []
  if (response.status !== documented.status) problems.push(`status: documented ${documented.status}, answered ${response.status}`)
  problems.push(...headerProblems(documented.headers, response.headers))
  const streamed = (response.headers.get('content-type') ?? '').startsWith('text/event-stream')
  const documentedEvents = parseSse(documented.body)
  if (documentedEvents.length > 0) {
    if (!streamed) return { problems: [...problems, `body: documented an event stream, answered ${text.slice(0, 200)}`] }
    const events = parseSse(text)
    problems.push(...sseProblems(documentedEvents, events))
    for (const event of events) if (event.data.startsWith('{')) remember(new Headers(), JSON.parse(event.data))
    return { problems }
  }
  if (streamed) return { problems: [...problems, 'body: documented JSON, answered an event stream'] }
  const answered = text.trim() === '' ? undefined : JSON.parse(text)
  if (!documented.body) {
    if (answered !== undefined) problems.push(`body: documented none, answered ${text.slice(0, 200)}`)
    return { problems, answered }
  }
  problems.push(...shapeProblems(JSON.parse(documented.body), answered))
  return { problems, answered }
}

for (const { page, exchanges: examples, error } of pages) {
  describe(page, () => {
    if (error)
      test('its examples follow the convention', () => {
        throw new Error(error)
      })
    for (const exchange of examples) {
      const { method, path } = exchange.request
      test(`line ${exchange.line}: ${method} ${path} answers ${exchange.response.status} as documented`, async () => {
        const response = await send(exchange)
        const text = await response.text()
        const { problems, answered } = compare(exchange.response, response, text)
        remember(response.headers, answered)
        if (problems.length > 0) throw new Error(`${page}.mdx line ${exchange.line}:\n  ${problems.join('\n  ')}\nanswered:\n${asWritten(response, text)}`)
        expect(problems).toEqual([])
      })
    }
  })
}

test('the pages hold request examples to check', () => {
  expect(pages.reduce((n, p) => n + p.exchanges.length, 0)).toBeGreaterThan(20)
})
