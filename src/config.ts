import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join, resolve } from 'node:path'

/**
 * The only reader of the environment. `loadConfig` validates every variable at once
 * and throws a `ConfigError` listing each problem; the result is frozen.
 */

type Env = Record<string, string | undefined>

type Parser<T> = (raw: string) => T

interface Variable<T> {
  /** What the variable controls, shown in README and in error messages. */
  doc: string
  parse: Parser<T>
  /** Value used when the variable is unset; `undefined` means optional and unset. */
  fallback?: T | ((env: Env) => T)
}

const integer =
  (min: number, max: number): Parser<number> =>
  (raw) => {
    if (!/^-?\d+$/.test(raw.trim())) throw new Error(`must be a whole number, got "${raw}"`)
    const n = Number(raw)
    if (n < min || n > max) throw new Error(`must be between ${min} and ${max}, got ${n}`)
    return n
  }

const oneOf =
  <const T extends string>(...allowed: T[]): Parser<T> =>
  (raw) => {
    if (!(allowed as string[]).includes(raw)) throw new Error(`must be one of ${allowed.join(', ')}, got "${raw}"`)
    return raw as T
  }

const url =
  (...protocols: string[]): Parser<string> =>
  (raw) => {
    let parsed: URL
    try {
      parsed = new URL(raw)
    } catch {
      throw new Error(`must be a URL, got "${raw}"`)
    }
    if (!protocols.includes(parsed.protocol)) throw new Error(`must use ${protocols.join(' or ')}, got "${parsed.protocol}"`)
    return raw.replace(/\/+$/, '')
  }

const text: Parser<string> = (raw) => {
  if (raw.trim() === '') throw new Error('must not be empty')
  return raw
}

const secret: Parser<string> = (raw) => {
  if (raw.length < 32) throw new Error('must be at least 32 characters')
  return raw
}

const list: Parser<string[]> = (raw) =>
  raw
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)

const boolean: Parser<boolean> = (raw) => {
  if (/^(1|true|yes|on)$/i.test(raw)) return true
  if (/^(0|false|no|off)$/i.test(raw)) return false
  throw new Error(`must be true or false, got "${raw}"`)
}

export const WEB_SEARCH_PROVIDERS = ['searxng', 'brave', 'tavily'] as const
export type WebSearchProviderName = (typeof WEB_SEARCH_PROVIDERS)[number]

/** The variable that makes each web search provider usable. */
export const WEB_SEARCH_PROVIDER_VARIABLES: Readonly<Record<WebSearchProviderName, string>> = {
  searxng: 'SEARXNG_URL',
  brave: 'BRAVE_API_KEY',
  tavily: 'TAVILY_API_KEY',
}

/** The search engine web search talks to, with what it needs to reach it. */
export type WebSearchProviderSettings =
  | { readonly name: 'searxng'; readonly baseUrl: string }
  | { readonly name: 'brave' | 'tavily'; readonly baseUrl: string; readonly apiKey: string }

const variables = {
  PORT: { doc: 'TCP port the server listens on', parse: integer(0, 65535), fallback: 3000 },
  HOST: { doc: 'Interface the server binds to', parse: text, fallback: '0.0.0.0' },
  DATA_DIR: { doc: 'Directory for the SQLite database, generated secrets and indexes', parse: text, fallback: './data' },
  PUBLIC_BASE_URL: {
    doc: 'Public URL of the service, used in links it hands out',
    parse: url('http:', 'https:'),
    fallback: (env: Env) => `http://localhost:${env.PORT ?? 3000}`,
  },
  DATABASE_URL: { doc: 'PostgreSQL URL; unset means embedded SQLite in DATA_DIR', parse: url('postgres:', 'postgresql:') },
  REDIS_URL: { doc: 'Redis URL for shared rate limits, caches and stream logs; unset means in-process', parse: url('redis:', 'rediss:') },
  LOG_LEVEL: { doc: 'debug, info, warn or error', parse: oneOf('debug', 'info', 'warn', 'error'), fallback: 'info' as const },
  LOG_FORMAT: { doc: 'json (one line per event) or pretty (for development)', parse: oneOf('json', 'pretty'), fallback: 'json' as const },
  BODY_LIMIT_BYTES: { doc: 'Largest request body accepted, in bytes', parse: integer(1024, 512 * 1024 * 1024), fallback: 1024 * 1024 },
  SHUTDOWN_TIMEOUT_MS: { doc: 'How long in-flight requests may run after SIGTERM', parse: integer(0, 600_000), fallback: 10_000 },
  TRUSTED_PROXIES: {
    doc: 'Comma-separated proxy addresses whose X-Forwarded-For is believed; empty trusts none',
    parse: list,
    fallback: [] as string[],
  },
  JWT_SECRET: { doc: 'HS256 key for access tokens (generated into DATA_DIR when unset)', parse: secret },
  TOKEN_ENCRYPTION_KEY: { doc: 'Base64 32-byte AES key for stored provider tokens (generated when unset)', parse: secret },
  ACCESS_TOKEN_TTL_SECONDS: { doc: 'Lifetime of access tokens', parse: integer(30, 86_400), fallback: 900 },
  REFRESH_TOKEN_TTL_SECONDS: { doc: 'Lifetime of refresh tokens', parse: integer(60, 365 * 86_400), fallback: 30 * 86_400 },
  JWT_ISSUER: { doc: 'iss claim of tokens this service issues', parse: text, fallback: 'realtime-ai-backend' },
  JWT_AUDIENCE: { doc: 'aud claim of tokens this service issues', parse: text, fallback: 'realtime-ai-backend-api' },
  ADMIN_EMAIL: { doc: 'Email of the first owner, created at start-up when no user exists', parse: text },
  ADMIN_PASSWORD: { doc: 'Password of the first owner (at least 12 characters)', parse: text },
  ALLOW_REGISTRATION: { doc: 'Enables POST /auth/register', parse: boolean, fallback: false },
  OIDC_ISSUER: { doc: 'External identity provider issuer URL; enables its tokens', parse: url('http:', 'https:') },
  OIDC_AUDIENCE: { doc: 'Audience expected in external tokens', parse: text },
  OIDC_SCOPES_CLAIM: { doc: 'Claim listing scopes in external tokens', parse: text, fallback: 'scope' },
  OIDC_ROLE_CLAIM: { doc: 'Claim naming the role in external tokens', parse: text, fallback: 'role' },
  PLANS: { doc: 'Plan ids organisations can have; the first is the default for new ones', parse: list, fallback: ['free', 'pro', 'team', 'enterprise'] },
  ENTERPRISE_PLANS: { doc: 'Plans that unlock /api/usage and unlimited /api/search', parse: list, fallback: ['enterprise'] },
  PLAN_PRICES: { doc: 'Payment price id of each paid plan, as plan=price pairs (pro=price_123,team=price_456)', parse: list, fallback: [] as string[] },
  RATE_LIMIT_CHAT_PER_MINUTE: { doc: 'Chat requests per user per minute', parse: integer(1, 1_000_000), fallback: 100 },
  RATE_LIMIT_INTEGRATIONS_PER_MINUTE: { doc: 'Integration requests per user per minute', parse: integer(1, 1_000_000), fallback: 50 },
  RATE_LIMIT_SEARCH_PER_MINUTE: { doc: 'Search requests per user per minute (enterprise plans: unlimited)', parse: integer(1, 1_000_000), fallback: 200 },
  RATE_LIMIT_BURST: { doc: 'Burst ceiling: requests per user across all endpoints within RATE_LIMIT_BURST_WINDOW_SECONDS', parse: integer(1, 1_000_000), fallback: 500 },
  RATE_LIMIT_BURST_WINDOW_SECONDS: { doc: 'Window of the burst ceiling', parse: integer(1, 3600), fallback: 10 },
  RATE_LIMIT_FAIL_CLOSED: { doc: 'Route classes (chat, integrations, search, default) refused when Redis is unreachable; others are allowed', parse: list, fallback: [] as string[] },
  LOGIN_MAX_FAILURES: { doc: 'Failed logins per account or address before it is locked', parse: integer(1, 1000), fallback: 5 },
  LOGIN_LOCK_SECONDS: { doc: 'How long a locked account or address waits', parse: integer(1, 86_400), fallback: 900 },
  OPENAI_API_KEY: { doc: 'Key for the OpenAI-compatible model provider', parse: text },
  OPENAI_BASE_URL: { doc: 'Base URL of an OpenAI-compatible provider (OpenAI, vLLM, llama.cpp, Ollama)', parse: url('http:', 'https:') },
  STRIPE_SECRET_KEY: { doc: 'Payment provider secret key', parse: text },
  PAYMENT_WEBHOOK_SECRET: { doc: 'Signing secret of the payment webhook', parse: text },
  GITHUB_CLIENT_ID: { doc: 'OAuth app client id for the code-hosting provider', parse: text },
  GITHUB_CLIENT_SECRET: { doc: 'OAuth app client secret for the code-hosting provider', parse: text },
  SUPABASE_CLIENT_ID: { doc: 'OAuth app client id for the database platform', parse: text },
  SUPABASE_CLIENT_SECRET: { doc: 'OAuth app client secret for the database platform', parse: text },
  SEARXNG_URL: { doc: 'SearXNG instance for web search', parse: url('http:', 'https:') },
  BRAVE_API_KEY: { doc: 'Brave Search API key', parse: text },
  TAVILY_API_KEY: { doc: 'Tavily API key', parse: text },
  BRAVE_BASE_URL: { doc: 'Base URL of the Brave Search API', parse: url('http:', 'https:'), fallback: 'https://api.search.brave.com' },
  TAVILY_BASE_URL: { doc: 'Base URL of the Tavily API', parse: url('http:', 'https:'), fallback: 'https://api.tavily.com' },
  WEB_SEARCH_PROVIDER: {
    doc: 'searxng, brave or tavily; unset picks the first configured of SEARXNG_URL, BRAVE_API_KEY, TAVILY_API_KEY',
    parse: oneOf(...WEB_SEARCH_PROVIDERS),
  },
  WEB_SEARCH_CACHE_TTL_SECONDS: { doc: 'How long a web search answer is reused for the same query and options', parse: integer(1, 86_400), fallback: 300 },
} satisfies Record<string, Variable<unknown>>

type Variables = typeof variables
type ValueOf<V> = V extends Variable<infer T> ? T : never
type HasFallback<V> = V extends { fallback: unknown } ? true : false

export type EnvValues = {
  readonly [K in keyof Variables]: HasFallback<Variables[K]> extends true ? ValueOf<Variables[K]> : ValueOf<Variables[K]> | undefined
}

export interface Config {
  readonly env: EnvValues
  readonly port: number
  readonly host: string
  readonly dataDir: string
  readonly publicBaseUrl: string
  readonly databaseUrl: string | undefined
  readonly redisUrl: string | undefined
  readonly log: { readonly level: 'debug' | 'info' | 'warn' | 'error'; readonly format: 'json' | 'pretty' }
  readonly bodyLimitBytes: number
  readonly shutdownTimeoutMs: number
  readonly trustedProxies: readonly string[]
  readonly plans: { readonly ids: readonly string[]; readonly enterprise: readonly string[]; readonly prices: Readonly<Record<string, string>> }
  readonly rateLimits: {
    readonly chatPerMinute: number
    readonly integrationsPerMinute: number
    readonly searchPerMinute: number
    readonly burst: number
    readonly burstWindowSeconds: number
    readonly failClosed: readonly string[]
  }
  readonly login: { readonly maxFailures: number; readonly lockSeconds: number }
  readonly tokens: {
    readonly issuer: string
    readonly audience: string
    readonly accessTtlSeconds: number
    readonly refreshTtlSeconds: number
  }
  readonly oidc: { readonly issuer: string; readonly audience: string; readonly scopesClaim: string; readonly roleClaim: string } | undefined
  readonly admin: { readonly email: string; readonly password: string } | undefined
  readonly allowRegistration: boolean
  readonly webSearch: {
    /** Undefined when no provider is configured: the route answers 503 not_configured. */
    readonly provider: WebSearchProviderSettings | undefined
    readonly cacheTtlSeconds: number
  }
  readonly secrets: { readonly jwtSecret: string; readonly tokenEncryptionKey: string }
  /** Secrets that were generated into DATA_DIR rather than given; production should set them. */
  readonly generatedSecrets: readonly string[]
  /** Optional parts with no configuration, for the start-up report. */
  readonly unconfigured: readonly string[]
}

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`)
    this.name = 'ConfigError'
  }
}

/** Every documented variable with its default, for README generation and `--help`. */
export function describeVariables(): { name: string; doc: string; fallback: string }[] {
  return Object.entries(variables).map(([name, v]) => {
    const f = 'fallback' in v ? v.fallback : undefined
    const fallback = typeof f === 'function' ? 'derived' : f === undefined ? '(unset)' : JSON.stringify(f)
    return { name, doc: v.doc, fallback }
  })
}

function parseEnv(env: Env): { values: EnvValues; problems: string[] } {
  const problems: string[] = []
  const values: Record<string, unknown> = {}
  for (const [name, spec] of Object.entries(variables) as [string, Variable<unknown>][]) {
    const raw = env[name]
    if (raw === undefined || raw === '') {
      const f = spec.fallback
      values[name] = typeof f === 'function' ? (f as (e: Env) => unknown)(env) : f
      continue
    }
    try {
      values[name] = spec.parse(raw)
    } catch (err) {
      problems.push(`${name} ${(err as Error).message} (${spec.doc})`)
    }
  }
  return { values: values as EnvValues, problems }
}

const SECRETS_FILE = 'secrets.json'

/** Reads or creates DATA_DIR/secrets.json (mode 0600) for secrets the environment does not give. */
function resolveSecrets(dataDir: string, values: EnvValues): { secrets: Config['secrets']; generated: string[] } {
  const path = join(dataDir, SECRETS_FILE)
  let stored: Partial<Record<'jwtSecret' | 'tokenEncryptionKey', string>> = {}
  if (existsSync(path)) stored = JSON.parse(readFileSync(path, 'utf8'))
  const generated: string[] = []
  const pick = (given: string | undefined, key: 'jwtSecret' | 'tokenEncryptionKey', envName: string) => {
    if (given) return given
    generated.push(envName)
    stored[key] ??= Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString('base64')
    return stored[key]
  }
  const secrets = {
    jwtSecret: pick(values.JWT_SECRET, 'jwtSecret', 'JWT_SECRET'),
    tokenEncryptionKey: pick(values.TOKEN_ENCRYPTION_KEY, 'tokenEncryptionKey', 'TOKEN_ENCRYPTION_KEY'),
  }
  if (generated.length > 0) {
    writeFileSync(path, JSON.stringify(stored, null, 2), { mode: 0o600 })
    chmodSync(path, 0o600)
  }
  return { secrets, generated }
}

function listUnconfigured(v: EnvValues): string[] {
  const missing: string[] = []
  if (!v.OPENAI_API_KEY && !v.OPENAI_BASE_URL) missing.push('model provider (OPENAI_API_KEY or OPENAI_BASE_URL)')
  if (!v.STRIPE_SECRET_KEY || !v.PAYMENT_WEBHOOK_SECRET) missing.push('payment provider (STRIPE_SECRET_KEY, PAYMENT_WEBHOOK_SECRET)')
  if (!v.GITHUB_CLIENT_ID && !v.SUPABASE_CLIENT_ID) missing.push('OAuth apps (GITHUB_CLIENT_ID, SUPABASE_CLIENT_ID, ...)')
  if (!v.SEARXNG_URL && !v.BRAVE_API_KEY && !v.TAVILY_API_KEY) missing.push('search provider (SEARXNG_URL, BRAVE_API_KEY or TAVILY_API_KEY)')
  if (!v.OIDC_ISSUER) missing.push('external identity provider (OIDC_ISSUER)')
  return missing
}


function webSearchProvider(v: EnvValues, problems: string[]): WebSearchProviderSettings | undefined {
  const configured: Record<WebSearchProviderName, WebSearchProviderSettings | undefined> = {
    searxng: v.SEARXNG_URL ? { name: 'searxng', baseUrl: v.SEARXNG_URL } : undefined,
    brave: v.BRAVE_API_KEY ? { name: 'brave', baseUrl: v.BRAVE_BASE_URL, apiKey: v.BRAVE_API_KEY } : undefined,
    tavily: v.TAVILY_API_KEY ? { name: 'tavily', baseUrl: v.TAVILY_BASE_URL, apiKey: v.TAVILY_API_KEY } : undefined,
  }
  const chosen = v.WEB_SEARCH_PROVIDER
  if (!chosen) return WEB_SEARCH_PROVIDERS.map((name) => configured[name]).find(Boolean)
  if (!configured[chosen]) problems.push(`WEB_SEARCH_PROVIDER is ${chosen} but ${WEB_SEARCH_PROVIDER_VARIABLES[chosen]} is not set`)
  return configured[chosen]
}

/**
 * Validates `env` (the process environment by default, which Bun fills from .env),
 * creates DATA_DIR and resolves generated secrets.
 */
export function loadConfig(env: Env = process.env): Config {
  const { values, problems } = parseEnv(env)
  if (values.OIDC_ISSUER && !values.OIDC_AUDIENCE) problems.push('OIDC_AUDIENCE must be set when OIDC_ISSUER is set')
  if (values.ADMIN_PASSWORD !== undefined && values.ADMIN_PASSWORD.length < 12)
    problems.push('ADMIN_PASSWORD must be at least 12 characters')
  if ((values.ADMIN_EMAIL === undefined) !== (values.ADMIN_PASSWORD === undefined))
    problems.push('ADMIN_EMAIL and ADMIN_PASSWORD must be set together')
  const prices: Record<string, string> = {}
  for (const pair of values.PLAN_PRICES) {
    const [plan, price] = pair.split('=').map((s) => s.trim())
    if (!plan || !price) problems.push(`PLAN_PRICES entry "${pair}" must look like plan=price_id`)
    else if (!values.PLANS.includes(plan)) problems.push(`PLAN_PRICES names plan "${plan}", which is not in PLANS (${values.PLANS.join(', ')})`)
    else prices[plan] = price
  }
  for (const plan of values.ENTERPRISE_PLANS)
    if (!values.PLANS.includes(plan)) problems.push(`ENTERPRISE_PLANS names plan "${plan}", which is not in PLANS`)
  const routeClasses = ['chat', 'integrations', 'search', 'default']
  for (const c of values.RATE_LIMIT_FAIL_CLOSED)
    if (!routeClasses.includes(c)) problems.push(`RATE_LIMIT_FAIL_CLOSED names "${c}"; known classes are ${routeClasses.join(', ')}`)
  if (values.PLANS.length === 0) problems.push('PLANS must name at least one plan')
  const searchProvider = webSearchProvider(values, problems)
  if (problems.length > 0) throw new ConfigError(problems)

  const dataDir = resolve(values.DATA_DIR)
  mkdirSync(dataDir, { recursive: true })
  const { secrets, generated } = resolveSecrets(dataDir, values)

  return Object.freeze({
    env: Object.freeze(values),
    port: values.PORT,
    host: values.HOST,
    dataDir,
    publicBaseUrl: values.PUBLIC_BASE_URL,
    databaseUrl: values.DATABASE_URL,
    redisUrl: values.REDIS_URL,
    log: Object.freeze({ level: values.LOG_LEVEL, format: values.LOG_FORMAT }),
    bodyLimitBytes: values.BODY_LIMIT_BYTES,
    shutdownTimeoutMs: values.SHUTDOWN_TIMEOUT_MS,
    trustedProxies: Object.freeze([...values.TRUSTED_PROXIES]),
    plans: Object.freeze({ ids: values.PLANS, enterprise: values.ENTERPRISE_PLANS, prices: Object.freeze(prices) }),
    rateLimits: Object.freeze({
      chatPerMinute: values.RATE_LIMIT_CHAT_PER_MINUTE,
      integrationsPerMinute: values.RATE_LIMIT_INTEGRATIONS_PER_MINUTE,
      searchPerMinute: values.RATE_LIMIT_SEARCH_PER_MINUTE,
      burst: values.RATE_LIMIT_BURST,
      burstWindowSeconds: values.RATE_LIMIT_BURST_WINDOW_SECONDS,
      failClosed: values.RATE_LIMIT_FAIL_CLOSED,
    }),
    login: Object.freeze({ maxFailures: values.LOGIN_MAX_FAILURES, lockSeconds: values.LOGIN_LOCK_SECONDS }),
    tokens: Object.freeze({
      issuer: values.JWT_ISSUER,
      audience: values.JWT_AUDIENCE,
      accessTtlSeconds: values.ACCESS_TOKEN_TTL_SECONDS,
      refreshTtlSeconds: values.REFRESH_TOKEN_TTL_SECONDS,
    }),
    oidc: values.OIDC_ISSUER
      ? Object.freeze({
          issuer: values.OIDC_ISSUER,
          audience: values.OIDC_AUDIENCE!,
          scopesClaim: values.OIDC_SCOPES_CLAIM,
          roleClaim: values.OIDC_ROLE_CLAIM,
        })
      : undefined,
    admin: values.ADMIN_EMAIL && values.ADMIN_PASSWORD ? Object.freeze({ email: values.ADMIN_EMAIL, password: values.ADMIN_PASSWORD }) : undefined,
    allowRegistration: values.ALLOW_REGISTRATION,
    webSearch: Object.freeze({ provider: searchProvider && Object.freeze(searchProvider), cacheTtlSeconds: values.WEB_SEARCH_CACHE_TTL_SECONDS }),
    secrets: Object.freeze(secrets),
    generatedSecrets: Object.freeze(generated),
    unconfigured: Object.freeze(listUnconfigured(values)),
  })
}
