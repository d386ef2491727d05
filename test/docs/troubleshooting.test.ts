/**
 * docs/troubleshooting.mdx, reproduced. Each numbered entry (`## N. Title`) quotes in its `text` blocks what the
 * service prints or answers; `<name>` in a quote stands for any text. Every entry has a reproduction here that
 * causes the error for real (the service started as a process with the bad setting, or the app built in-process
 * where that is the path a request takes) and the quotes must be found in what the service printed or answered.
 */
import { afterAll, describe, expect, test } from 'bun:test'
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { startFakeOpenAi } from '../fakes/openai.ts'
import { ADMIN, bearer, login, makeApp, tempDir } from '../helpers.ts'
import { closedPort, fromSource, runToEnd, startService, type RunningService } from '../operators/processes.ts'
import { billingApp, payloadOf, signature } from '../payments/harness.ts'
import { fencedBlocks, parseSse } from './exchanges.ts'

const ROOT = join(import.meta.dir, '..', '..')
const page = readFileSync(join(ROOT, 'docs', 'troubleshooting.mdx'), 'utf8')

/** The numbered entries, by title, each with the messages its `text` blocks quote. */
function entries(markdown: string): Map<string, string[]> {
  const found = new Map<string, string[]>()
  const blocks = fencedBlocks(markdown)
  const headings = [...markdown.matchAll(/^## (.*)$/gm)].map((m) => ({ title: m[1]!, line: markdown.slice(0, m.index).split('\n').length }))
  for (const block of blocks.filter((b) => b.info === 'text')) {
    const heading = headings.filter((h) => h.line < block.line).at(-1)
    const numbered = heading && /^\d+\. (.*)$/.exec(heading.title)
    if (!numbered) throw new Error(`the text block at line ${block.line} is outside a numbered entry`)
    found.set(numbered[1]!, [...(found.get(numbered[1]!) ?? []), block.text])
  }
  for (const heading of headings) {
    const numbered = /^\d+\. (.*)$/.exec(heading.title)
    if (numbered && !found.has(numbered[1]!)) throw new Error(`"${heading.title}" quotes no message in a text block`)
  }
  return found
}

/** A quote as a pattern: the text itself, with each `<name>` matching anything on its line. */
const pattern = (quote: string) =>
  new RegExp(
    quote
      .split(/<[a-z][a-z' ]*>/i)
      .map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
      .join('.*?'),
  )

const quoted = entries(page)
const dir = tempDir('troubleshooting-')
const model = startFakeOpenAi()
const services: RunningService[] = []
afterAll(async () => {
  for (const service of services) await service.stop()
  await model.close()
  dir.remove()
})

/** A fresh DATA_DIR for each process, so none shares another's database. */
let dirs = 0
const dataDir = () => join(dir.path, `data-${++dirs}`)

/** The exit status and both outputs of the service started with `env`, which must stop it. */
async function failedStart(env: Record<string, string>) {
  const run = await runToEnd(fromSource([]), { DATA_DIR: dataDir(), ...env })
  return { exitCode: run.exitCode, printed: run.stderr + run.stdout }
}

/** A service started as a process; its JSON log lines, as printed, are part of what it said. */
async function started(env: Record<string, string>) {
  const service = await startService(fromSource([]), { DATA_DIR: dataDir(), ADMIN_EMAIL: ADMIN.email, ADMIN_PASSWORD: ADMIN.password, ...env })
  services.push(service)
  const response = await fetch(`${service.url}/auth/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email: ADMIN.email, password: ADMIN.password }),
  })
  const { accessToken } = (await response.json()) as { accessToken: string }
  const post = (path: string, body: unknown) =>
    fetch(`${service.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...bearer(accessToken) }, body: JSON.stringify(body) })
  return { service, post, log: () => service.logs.map((line) => JSON.stringify(line)).join('\n') }
}

const chatBody = { messages: [{ role: 'user', content: 'How do I query PostgreSQL from Bun?' }] }

/** Each entry's reproduction: what the service printed or answered, for the entry's quotes to be found in. */
const reproductions: Record<string, () => Promise<string>> = {
  'A setting is refused': async () => {
    const run = await failedStart({ PUBLIC_BASE_URL: 'api.example.com' })
    expect(run.exitCode).toBe(78)
    return run.printed
  },

  'A secret is too short': async () => {
    const run = await failedStart({ JWT_SECRET: 'too-short-a-secret' })
    expect(run.exitCode).toBe(78)
    return run.printed
  },

  'DATA_DIR cannot be written': async () => {
    // Root may write anywhere; a path through a file fails for every user, as a directory without write permission does for others.
    const file = join(dir.path, 'not-a-directory')
    writeFileSync(file, '')
    const run = await failedStart({ DATA_DIR: join(file, 'data') })
    expect(run.exitCode).toBe(78)
    expect(run.printed).not.toContain('    at ')
    return run.printed
  },

  'PostgreSQL or Redis cannot be reached': async () => {
    const runs = await Promise.all([
      failedStart({ DATABASE_URL: `postgres://service:secret@127.0.0.1:${closedPort()}/service` }),
      failedStart({ REDIS_URL: `redis://127.0.0.1:${closedPort()}` }),
    ])
    expect(runs.map((run) => run.exitCode)).toEqual([78, 78])
    return runs.map((run) => run.printed).join('\n')
  },

  'The port is already in use': async () => {
    const holder = Bun.listen({ hostname: '127.0.0.1', port: 0, socket: { data() {} } })
    try {
      const run = await failedStart({ HOST: '127.0.0.1', PORT: String(holder.port) })
      expect(run.exitCode).toBe(78)
      return run.printed
    } finally {
      holder.stop(true)
    }
  },

  'Chat answers 503 not_configured': async () => {
    const { post, log } = await started({})
    const response = await post('/api/chat', chatBody)
    expect(response.status).toBe(503)
    const problem = (await response.json()) as { code: string; detail: string }
    expect(problem.code).toBe('not_configured')
    return `${log()}\n${problem.detail}`
  },

  'The model provider refuses the key, or cannot be reached': async () => {
    const answers: string[] = []
    for (const baseUrl of [model.baseUrl, `http://127.0.0.1:${closedPort()}/v1`]) {
      const t = await makeApp({ OPENAI_BASE_URL: baseUrl, OPENAI_API_KEY: 'sk-wrong', ADMIN_EMAIL: ADMIN.email, ADMIN_PASSWORD: ADMIN.password })
      try {
        model.queue = [{ status: 401 }]
        const { accessToken } = await login(t, ADMIN.email, ADMIN.password)
        const response = await t.send('POST', '/api/chat', chatBody, bearer(accessToken))
        expect(response.status).toBe(200)
        answers.push(await response.text())
      } finally {
        await t.close()
      }
    }
    return answers.join('\n')
  },

  'A page on another origin is refused (CORS)': async () => {
    const t = await makeApp()
    try {
      const response = await t.request('/api/chat', {
        method: 'OPTIONS',
        headers: { origin: 'http://localhost:5173', 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization, content-type' },
      })
      expect(response.status).toBe(405)
      expect(response.headers.get('access-control-allow-origin')).toBeNull()
      return ((await response.json()) as { detail: string }).detail
    } finally {
      await t.close()
    }
  },

  'Code runs are refused: no sandbox': async () => {
    // A PATH without bwrap, unshare, setpriv, prlimit or even sh: the machine the entry describes.
    const emptyPath = join(dir.path, 'empty-bin')
    mkdirSync(emptyPath)
    const { post, log } = await started({ PATH: emptyPath, OPENAI_BASE_URL: model.baseUrl })
    model.queue = [{ text: '{"steps": ["Write the function"]}' }, { text: 'Here it is:\n```ts\nconsole.log(1 + 1)\n```\n' }]
    const response = await post('/api/enhanced-chat', { ...chatBody, options: { maxSteps: 1, maxAttempts: 1 } })
    expect(response.status).toBe(200)
    const checks = parseSse(await response.text())
      .filter((event) => event.data.startsWith('{'))
      .map((event) => JSON.parse(event.data) as { type: string; data?: { verdict: string; output: string } })
      .filter((chunk) => chunk.type === 'data-check')
    expect(checks.map((check) => check.data!.verdict)).toEqual(['sandbox_unavailable'])
    return `${log()}\n${checks[0]!.data!.output}`
  },

  'Payment webhooks answer 400 invalid_signature': async () => {
    const t = await billingApp()
    try {
      const payload = payloadOf({
        id: 'evt_troubleshooting',
        object: 'event',
        type: 'invoice.paid',
        created: Math.floor(Date.now() / 1000),
        data: { object: {} },
      })
      const response = await t.request('/api/payment/webhook', {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'stripe-signature': await signature(payload, { secret: 'whsec_of_another_endpoint' }) },
        body: payload,
      })
      expect(response.status).toBe(400)
      const problem = (await response.json()) as { code: string; detail: string }
      expect(problem.code).toBe('invalid_signature')
      return problem.detail
    } finally {
      await t.close()
    }
  },
}

describe('docs/troubleshooting.mdx', () => {
  test('has ten entries, each reproduced here', () => {
    expect([...quoted.keys()]).toEqual(Object.keys(reproductions))
  })

  for (const [title, reproduce] of Object.entries(reproductions))
    test(`${title}: the service says what the page quotes`, async () => {
      const said = await reproduce()
      for (const quote of quoted.get(title) ?? []) if (!pattern(quote).test(said)) throw new Error(`the page quotes:\n${quote}\n\nthe service said:\n${said}`)
    })
})
