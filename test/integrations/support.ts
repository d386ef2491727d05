/** Shared setup of the integrations suites: the fake provider, the app pointed at it, and a connect helper. */
import { expect } from 'bun:test'
import { createAccessTokens } from '../../src/auth/access-tokens.ts'
import { grantedScopes, type Role } from '../../src/auth/roles.ts'
import { loadConfig } from '../../src/main/config.ts'
import { createHttpClient } from '../../src/http.ts'
import { memoryLogger } from '../../src/log.ts'
import type { LeaseClock } from '../../src/refresh-lease.ts'
import { createSecretBox } from '../../src/secret-box.ts'
import type { Database } from '../../src/storage/database.ts'
import { providersFromConfig } from '../../plugins/integrations/providers/index.ts'
import { createIntegrationsService, type IntegrationsService } from '../../plugins/integrations/service.ts'
import { startFakeOAuthProvider, type FakeOAuthProvider } from '../fakes/oauth-provider.ts'
import { announceSkip, bearer, freshPostgres, makeApp, postgresUrl, tempDir, type TestApp } from '../helpers.ts'

/** The service's public address in these suites; redirect URIs and the return page live under it. */
export const PUBLIC_BASE_URL = 'https://app.example'
export const RETURN_URL = `${PUBLIC_BASE_URL}/integrations`

export const CLIENTS = {
  github: { id: 'gh-client-id', secret: 'gh-client-secret-0123456789' },
  supabase: { id: 'sb-client-id', secret: 'sb-client-secret-0123456789' },
  gitlab: { id: 'gl-client-id', secret: 'gl-client-secret-0123456789' },
} as const

export const redirectUriOf = (provider: string) => `${PUBLIC_BASE_URL}/api/integrations/${provider}/callback`

export function startProvider(): FakeOAuthProvider {
  return startFakeOAuthProvider(
    Object.fromEntries(Object.entries(CLIENTS).map(([provider, c]) => [c.id, { secret: c.secret, redirectUri: redirectUriOf(provider) }])),
  )
}

/** A generic provider entry for OAUTH_PROVIDERS, GitLab-like, on the fake. */
export const gitlabEntry = (fake: FakeOAuthProvider) => ({
  label: 'GitLab',
  clientId: CLIENTS.gitlab.id,
  clientSecret: CLIENTS.gitlab.secret,
  authorizeUrl: `${fake.url}/oauth/authorize`,
  tokenUrl: `${fake.url}/oauth/token`,
  revokeUrl: `${fake.url}/oauth/revoke`,
  accountUrl: `${fake.url}/api/v4/user`,
  accountName: 'username',
  scopes: ['read_user', 'read_repository'],
  clientAuth: 'basic',
})

export function integrationEnv(fake: FakeOAuthProvider): Record<string, string> {
  return {
    PUBLIC_BASE_URL,
    GITHUB_CLIENT_ID: CLIENTS.github.id,
    GITHUB_CLIENT_SECRET: CLIENTS.github.secret,
    GITHUB_AUTHORIZE_URL: `${fake.url}/login/oauth/authorize`,
    GITHUB_TOKEN_URL: `${fake.url}/login/oauth/access_token`,
    GITHUB_API_URL: fake.url,
    SUPABASE_CLIENT_ID: CLIENTS.supabase.id,
    SUPABASE_CLIENT_SECRET: CLIENTS.supabase.secret,
    SUPABASE_AUTHORIZE_URL: `${fake.url}/v1/oauth/authorize`,
    SUPABASE_TOKEN_URL: `${fake.url}/v1/oauth/token`,
    SUPABASE_API_URL: fake.url,
    SUPABASE_REVOKE_URL: `${fake.url}/v1/oauth/revoke`,
    OAUTH_PROVIDERS: JSON.stringify({ gitlab: gitlabEntry(fake) }),
  }
}

export type Backend = 'sqlite' | 'postgres'

/** SQLite always; PostgreSQL when DATABASE_URL is set. */
export const BACKENDS: Backend[] = postgresUrl ? ['sqlite', 'postgres'] : ['sqlite']
if (!postgresUrl) announceSkip('PostgreSQL variants of the integrations suites', 'DATABASE_URL')

/** The whole service on `backend` (a throwaway PostgreSQL database when asked), pointed at the fake. */
export async function integrationApp(fake: FakeOAuthProvider, backend: Backend, env: Record<string, string> = {}): Promise<TestApp> {
  const pg = backend === 'postgres' ? await freshPostgres() : undefined
  const t = await makeApp({ ...integrationEnv(fake), ...(pg ? { DATABASE_URL: pg.url } : {}), ...env })
  const close = t.close
  return Object.assign(t, {
    async close() {
      await close()
      await pg?.drop()
    },
  })
}

/**
 * A user with `role` and an access token, minted directly: these suites test integrations, and a
 * password hash per user would make them slow for nothing.
 */
export async function quickUser(t: TestApp, role: Role = 'member'): Promise<{ user: { id: string; orgId: string }; token: string }> {
  const org = await t.deps.accounts.createOrganization('integrations test', t.config.plans.ids[0]!)
  const user = (await t.deps.accounts.createUser({ orgId: org.id, email: `${role}-${crypto.randomUUID()}@example.com`, role }))!
  const tokens = createAccessTokens({ secret: t.config.secrets.jwtSecret, issuer: t.config.tokens.issuer, audience: t.config.tokens.audience })
  const { token } = await tokens.issue({ userId: user.id, orgId: org.id, role, scopes: grantedScopes(role) })
  return { user, token }
}

/** `name=value` of the Set-Cookie a response carries. */
export function cookieOf(response: Response): string {
  const header = response.headers.get('set-cookie')
  if (!header) throw new Error('no Set-Cookie')
  return header.split(';')[0]!
}

/** The path and query of an absolute URL, for `t.request`. */
export const pathOf = (url: string) => {
  const parsed = new URL(url)
  return parsed.pathname + parsed.search
}

export interface StartedConnect {
  authorizationUrl: string
  cookie: string
}

export async function startConnect(t: TestApp, token: string, provider = 'github', body: Record<string, unknown> = {}): Promise<StartedConnect> {
  const res = await t.send('POST', `/api/integrations/${provider}/auth`, body, bearer(token))
  expect(res.status).toBe(200)
  const answer = (await res.json()) as { authorizationUrl: string }
  return { authorizationUrl: answer.authorizationUrl, cookie: cookieOf(res) }
}

/** Follows the callback the provider sent the browser to; answers the 303's Location. */
export async function callback(t: TestApp, callbackUrl: string, cookie?: string): Promise<string> {
  expect(callbackUrl.startsWith(`${PUBLIC_BASE_URL}/api/integrations/`)).toBe(true)
  const res = await t.request(pathOf(callbackUrl), { headers: cookie ? { cookie } : {} })
  expect(res.status).toBe(303)
  return res.headers.get('location')!
}

/** The whole browser round trip: start, approve at the fake, come back. Answers the final Location. */
export async function connect(t: TestApp, fake: FakeOAuthProvider, token: string, provider = 'github'): Promise<string> {
  const started = await startConnect(t, token, provider)
  return callback(t, await fake.authorize(started.authorizationUrl), started.cookie)
}

export const outcome = (location: string) => Object.fromEntries(new URL(location).searchParams)

/**
 * An integrations service on `db` as one process of the service would build it (its own single-flight
 * map and status cache), pointed at the fake. Several on one database stand for several processes.
 */
export async function serviceOn(
  db: Database,
  fake: FakeOAuthProvider,
  options: { key: string; previousKeys?: string[]; now?: () => number; statusCacheTtlSeconds?: number; leaseClock?: LeaseClock },
): Promise<IntegrationsService & { logs: Record<string, unknown>[] }> {
  const dir = tempDir()
  try {
    const config = loadConfig({ DATA_DIR: dir.path, ...integrationEnv(fake) })
    const logger = memoryLogger('debug')
    const service = createIntegrationsService({
      db,
      box: await createSecretBox({ key: options.key, previousKeys: options.previousKeys }),
      http: createHttpClient({ sleep: async () => {} }),
      logger,
      providers: providersFromConfig(config.integrations),
      publicBaseUrl: PUBLIC_BASE_URL,
      returnUrl: RETURN_URL,
      statusCacheTtlSeconds: options.statusCacheTtlSeconds,
      now: options.now,
      leaseClock: options.leaseClock,
    })
    return Object.assign(service, { logs: logger.lines })
  } finally {
    dir.remove()
  }
}

/** Connects `userId` through a service directly (no HTTP app): begin, approve at the fake, complete. */
export async function connectThrough(service: IntegrationsService, fake: FakeOAuthProvider, userId: string, provider = 'github'): Promise<void> {
  const flow = await service.begin(userId, provider)
  const back = new URL(await fake.authorize(flow.authorizationUrl))
  const result = await service.complete(
    provider,
    { state: back.searchParams.get('state') ?? undefined, code: back.searchParams.get('code') ?? undefined },
    flow.binding,
  )
  expect(result).toMatchObject({ connected: true })
}
