/**
 * Writes the data a release leaves behind, for test/upgrades/upgrade.test.ts: the release's own code, driven
 * through its API against fake upstreams, writes one row or more of every kind into a fresh DATA_DIR (and, when
 * DATABASE_URL is set, into a fresh PostgreSQL database, dumped as plain SQL), then this packs them.
 *
 * Run it from a checkout of the release being recorded, with this file copied into that checkout's
 * test/upgrades/ (its imports are that release's code) and the dependencies installed there:
 *
 *   git worktree add /tmp/release v0.1.0 && ln -s "$PWD/node_modules" /tmp/release/node_modules
 *   cp test/upgrades/write-fixture.ts /tmp/release/test/upgrades/
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres bun /tmp/release/test/upgrades/write-fixture.ts test/fixtures/upgrade/0.1.0
 */
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import * as tar from 'tar'
import { loadConfig } from '../../src/main/config.ts'
import { buildDependencies } from '../../src/main/dependencies.ts'
import { createApp } from '../../src/main/app.ts'
import { memoryLogger } from '../../src/log.ts'
import { startGitServer } from '../fakes/git-server.ts'
import { startFakeOpenAi } from '../fakes/openai.ts'
import { startFakeStripe } from '../fakes/stripe-api.ts'
import { freshPostgres } from '../helpers.ts'
import { integrationEnv, startProvider } from '../integrations/support.ts'
import { checkoutSession, event, ids, seconds, subscription } from '../payments/events.ts'
import { PRICES, SECRET_KEY, paymentEnv, payloadOf, signature } from '../payments/harness.ts'

/** Who and what the fixture holds; the upgrade test reads this file to know what to look for. */
export const FIXTURE_FACTS = {
  owner: { email: 'fixture-owner@example.com', password: 'fixture-owner-password', organizationName: 'Fixture Labs' },
  member: { email: 'fixture-member@example.com', password: 'fixture-member-password' },
  registered: { email: 'fixture-registered@example.com', password: 'fixture-registered-password', organizationName: 'Registered Co' },
  question: 'What does frobnicateWidget return?',
  answer: 'It returns the size times 42.',
  repository: 'acme/widgets',
  searchTerm: 'frobnicateWidget',
  searchHit: 'src/widgets.ts',
  plan: 'pro',
}

const BASE = 'http://localhost'

async function writeRelease(dataDir: string, databaseUrl: string | undefined): Promise<Record<string, number>> {
  const facts = FIXTURE_FACTS
  const model = startFakeOpenAi()
  model.fallback = () => ({ text: facts.answer })
  const stripe = startFakeStripe({ secretKey: SECRET_KEY, prices: Object.values(PRICES) })
  const oauth = startProvider()
  const git = startGitServer()
  git.createRepository(facts.repository, {
    'src/widgets.ts': 'export function frobnicateWidget(size: number): number {\n  return size * 42\n}\n',
    'README.md': '# widgets\n\nWidgets, frobnicated.\n',
  })
  const env: Record<string, string> = {
    DATA_DIR: dataDir,
    ...(databaseUrl && { DATABASE_URL: databaseUrl }),
    ALLOW_REGISTRATION: 'true',
    OPENAI_BASE_URL: model.baseUrl,
    CHAT_MODEL: 'fake-model',
    CHAT_SEARCH_AUGMENTATION: 'false',
    IMPORT_CODEHOST_URL: git.url,
    IMPORT_ALLOW_HOSTS: `127.0.0.1:${git.port}`,
    CODE_INDEX_SNAPSHOT_DELAY_MS: '0',
    ...paymentEnv(stripe),
    // The OAuth apps' redirect URIs are registered for the integrations' base URL.
    ...integrationEnv(oauth),
  }
  const deps = await buildDependencies(loadConfig(env), { logger: memoryLogger('warn') })
  const app = createApp(deps)
  const call = async (method: string, path: string, body?: unknown, token?: string, headers: Record<string, string> = {}) => {
    const res = await app.handle(
      new Request(BASE + path, {
        method,
        headers: { ...(body !== undefined && { 'content-type': 'application/json' }), ...(token && { authorization: `Bearer ${token}` }), ...headers },
        body: body === undefined ? undefined : JSON.stringify(body),
      }),
    )
    return res
  }
  const ok = async (res: Response, what: string) => {
    if (res.status >= 300 && res.status !== 303) throw new Error(`${what}: ${res.status} ${await res.text()}`)
    return res
  }
  try {
    // The first owner through the first-run setup (setup_completion), then sign-ins of every kind.
    const code = (await deps.setup.createCode())!.code
    await ok(await call('POST', '/setup', { code, ...facts.owner }), 'setup')
    const signIn = async (who: { email: string; password: string }) =>
      (await (await ok(await call('POST', '/auth/login', { email: who.email, password: who.password }), `sign-in of ${who.email}`)).json()) as {
        accessToken: string
        refreshToken: string
        user: { id: string; organizationId: string }
      }
    const owner = await signIn(facts.owner)
    await deps.access.createAccount({ ...facts.member, role: 'member', orgId: owner.user.organizationId })
    await ok(await call('POST', '/auth/register', facts.registered), 'registration')
    const member = await signIn(facts.member)
    // A session ended by its logout (ended_sessions, revoked_sessions), and one refreshed (a rotated refresh token).
    const leaving = await signIn(facts.member)
    await ok(await call('POST', '/auth/logout', { refreshToken: leaving.refreshToken }, leaving.accessToken), 'logout')
    await ok(await call('POST', '/auth/refresh', { refreshToken: member.refreshToken }), 'refresh')

    // A chat with its answer (chats, chat_messages, usage_events).
    const chat = await ok(
      await call('POST', '/api/chat', { id: crypto.randomUUID(), messages: [{ role: 'user', content: facts.question }] }, owner.accessToken),
      'chat',
    )
    await chat.text()

    // Billing: a checkout, then Stripe's events for it (checkout_requests, payment_events, billing_*, audit_log).
    await ok(await call('POST', '/api/payment/create-checkout', { plan: facts.plan }, owner.accessToken), 'checkout')
    const customer = ids.customer()
    const sub = ids.subscription()
    const orgId = owner.user.organizationId
    for (const e of [
      event(
        'checkout.session.completed',
        checkoutSession({ customer, subscription: sub, orgId, userId: owner.user.id, plan: facts.plan, paymentStatus: 'paid' }),
        seconds(),
      ),
      event(
        'customer.subscription.created',
        subscription({ id: sub, customer, orgId, plan: facts.plan, priceId: PRICES.pro, status: 'active', periodEnd: seconds() + 30 * 86_400 }),
        seconds(),
      ),
    ]) {
      const payload = payloadOf(e)
      await ok(
        await app.handle(
          new Request(`${BASE}/api/payment/webhook`, {
            method: 'POST',
            headers: { 'content-type': 'application/json', 'stripe-signature': await signature(payload) },
            body: payload,
          }),
        ),
        `webhook ${e.type}`,
      )
    }

    // An integration connected (integration_connections) and one left half-way (oauth_states).
    const connect = async () => {
      const res = await ok(await call('POST', '/api/integrations/github/auth', {}, owner.accessToken), 'connect')
      const { authorizationUrl } = (await res.json()) as { authorizationUrl: string }
      return { authorizationUrl, binding: (res.headers.get('set-cookie') ?? '').split(';')[0]! }
    }
    await connect()
    const started = await connect()
    const back = new URL(await oauth.authorize(started.authorizationUrl))
    await ok(await app.handle(new Request(BASE + back.pathname + back.search, { headers: { cookie: started.binding } })), 'integration callback')

    // An import, indexed and saved (codehost_*, code_index_versions).
    const imported = (await (await ok(await call('POST', '/api/codehost/import', { repository: facts.repository }, owner.accessToken), 'import')).json()) as {
      importId: string
    }
    for (;;) {
      const view = (await (await call('GET', `/api/codehost/imports/${imported.importId}`, undefined, owner.accessToken)).json()) as { status: string }
      if (view.status === 'succeeded') break
      if (view.status === 'failed') throw new Error('the import failed')
      await Bun.sleep(50)
    }
    while ((await deps.db.sql`SELECT COUNT(*) AS n FROM code_index_versions`)[0].n < 1) await Bun.sleep(50)
    // A failed sign-in no later success clears (login_failures); usage written by the meter's next flush.
    await call('POST', '/auth/login', { email: facts.registered.email, password: 'not the password at all' })
    await Bun.sleep(1500)

    const tables = (
      deps.db.dialect === 'sqlite'
        ? await deps.db.sql`SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name`
        : await deps.db.sql`SELECT table_name AS name FROM information_schema.tables WHERE table_schema = 'public' ORDER BY table_name`
    ).map((r: { name: string }) => r.name)
    const counts: Record<string, number> = {}
    for (const table of tables) counts[table] = Number((await deps.db.sql.unsafe(`SELECT COUNT(*) AS n FROM ${table}`))[0].n)
    return counts
  } finally {
    await deps.close()
    await model.close()
    await stripe.close()
    oauth.close()
    git.close()
  }
}

/** DATA_DIR without what the service rebuilds (checked-out trees, agent workspaces). */
async function pack(dataDir: string, file: string) {
  const entries = readdirSync(dataDir).filter((name) => name !== 'agent-workspaces')
  await tar.create(
    { gzip: true, file, cwd: dataDir, portable: true, filter: (path) => !/^imports\/[^/]+\/[^/]+\/tree(\/|$)/.test(path.replace(/^\.\//, '')) },
    entries,
  )
}

if (import.meta.main) {
  const out = resolve(process.argv[2] ?? 'fixture-out')
  mkdirSync(out, { recursive: true })
  const work = mkdtempSync(join(tmpdir(), 'upgrade-fixture-'))
  try {
    const sqliteDir = join(work, 'sqlite')
    const counts: Record<string, Record<string, number>> = { sqlite: await writeRelease(sqliteDir, undefined) }
    await pack(sqliteDir, join(out, 'sqlite-data.tar.gz'))
    const pg = await freshPostgres()
    if (pg) {
      try {
        const pgDir = join(work, 'postgres')
        counts.postgres = await writeRelease(pgDir, pg.url)
        await pack(pgDir, join(out, 'postgres-data.tar.gz'))
        const dumped = Bun.spawnSync(['pg_dump', '--format=plain', '--no-owner', '--no-privileges', '--inserts', '--file', join(out, 'postgres.sql'), pg.url])
        if (dumped.exitCode !== 0) throw new Error(`pg_dump failed: ${dumped.stderr.toString()}`)
      } finally {
        await pg.drop()
      }
    } else console.warn('DATABASE_URL is not set: no PostgreSQL fixture written')
    const release = (await Bun.file(join(import.meta.dir, '..', '..', 'package.json')).json()) as { version: string }
    const commit = Bun.spawnSync(['git', 'rev-parse', 'HEAD'], { cwd: import.meta.dir })
      .stdout.toString()
      .trim()
    writeFileSync(
      join(out, 'release.json'),
      `${JSON.stringify({ release: release.version, commit, writtenAt: new Date().toISOString(), rows: counts }, null, 2)}\n`,
    )
    console.log(JSON.stringify(counts, null, 2))
  } finally {
    rmSync(work, { recursive: true, force: true })
  }
}
