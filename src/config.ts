import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { parseGenericProviders, type GenericProviderSettings } from '../plugins/integrations/providers/generic.ts'
import { PRIVILEGED_SCOPES, ROLES, SCOPES, isRole, isScope, type Role, type Scope } from './auth/roles.ts'

/**
 * The only reader of the environment. `loadConfig` validates every variable at once
 * and throws a `ConfigError` listing each problem; the result is frozen.
 */

type Env = Record<string, string | undefined>

type Parser<T> = (raw: string) => T

interface Variable<T> {
  /** What the variable controls, shown in docs/configuration.mdx and in error messages. */
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

const decimal =
  (min: number, max: number): Parser<number> =>
  (raw) => {
    const n = Number(raw.trim())
    if (raw.trim() === '' || !Number.isFinite(n)) throw new Error(`must be a number, got "${raw}"`)
    if (n < min || n > max) throw new Error(`must be between ${min} and ${max}, got ${n}`)
    return n
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

/** `host` or `host:port` entries as clients send them in a Host header, host names lower-cased. */
const hostList: Parser<string[]> = (raw) =>
  list(raw).map((entry) => {
    let parsed: URL | undefined
    try {
      parsed = new URL(`http://${entry}`)
    } catch {}
    const port = /:(\d+)$/.exec(entry)?.[1]
    const plain = parsed && /^([a-z0-9._~-]+|\[[0-9a-f:.]+\])$/.test(parsed.hostname) && parsed.pathname === '/' && !parsed.username && !parsed.search && !parsed.hash
    if (!parsed || !plain) throw new Error(`entries must be host or host:port (no scheme, path or wildcard), got "${entry}"`)
    return port === undefined ? parsed.hostname : `${parsed.hostname}:${port}`
  })

/** Browser origins (`https://app.example.com`, scheme, host and port only), or `*` alone. */
const originList: Parser<string[]> = (raw) => {
  const entries = list(raw)
  if (entries.includes('*')) {
    if (entries.length > 1) throw new Error('must be * alone or a list of origins, not both')
    return entries
  }
  return entries.map((entry) => {
    let parsed: URL | undefined
    try {
      parsed = new URL(entry)
    } catch {}
    const plain = parsed && /^https?:$/.test(parsed.protocol) && parsed.pathname === '/' && !parsed.username && !parsed.password && !parsed.search && !parsed.hash
    if (!parsed || !plain || /^https?:\/\/.*\/./.test(entry))
      throw new Error(`entries must be http or https origins such as https://app.example.com (no path), got "${entry}"`)
    // As browsers send it in Origin: lower case, no default port, no trailing slash.
    return parsed.origin
  })
}

const role: Parser<Role> = (raw) => {
  if (!isRole(raw)) throw new Error(`must be one of ${ROLES.join(', ')}, got "${raw}"`)
  return raw
}

const roleList: Parser<Role[]> = (raw) => list(raw).map(role)

/** Scopes an external token gets without claiming any: `none`, or a list without the privileged ones. */
const unclaimedScopes: Parser<Scope[]> = (raw) => {
  if (raw.trim() === 'none') return []
  return list(raw).map((scope) => {
    if (!isScope(scope)) throw new Error(`must list scopes of ${SCOPES.join(', ')} (or be none), got "${scope}"`)
    if (PRIVILEGED_SCOPES.includes(scope)) throw new Error(`must not list ${scope}: a token gets ${PRIVILEGED_SCOPES.join(', ')} only by claiming them`)
    return scope
  })
}

/** `key=value` pairs separated by commas, values URL-encoded (the OTLP exporter's headers format). */
const keyValueList: Parser<Record<string, string>> = (raw) =>
  Object.fromEntries(
    list(raw).map((pair) => {
      const at = pair.indexOf('=')
      const key = pair.slice(0, at).trim()
      if (at < 1 || !/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(key)) throw new Error(`entries must be key=value with a header name as key, got "${pair}"`)
      try {
        return [key, decodeURIComponent(pair.slice(at + 1).trim())]
      } catch {
        throw new Error(`the value of "${key}" is not valid URL encoding`)
      }
    }),
  )

const boolean: Parser<boolean> = (raw) => {
  if (/^(1|true|yes|on)$/i.test(raw)) return true
  if (/^(0|false|no|off)$/i.test(raw)) return false
  throw new Error(`must be true or false, got "${raw}"`)
}

/** PUBLIC_BASE_URL as given, or its own default, for the URLs derived from it. */
const publicBase = (env: Env) => env.PUBLIC_BASE_URL?.replace(/\/+$/, '') || `http://localhost:${env.PORT ?? 3000}`

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

/** The OAuth app of a built-in integration provider; the client pair is unset until configured. */
export interface OAuthAppSettings {
  readonly clientId: string | undefined
  readonly clientSecret: string | undefined
  readonly authorizeUrl: string
  readonly tokenUrl: string
  readonly apiUrl: string
  readonly revokeUrl?: string
  readonly scopes: readonly string[]
}

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
  REDIS_RECONNECT_MAX_DELAY_MS: {
    doc: 'Longest pause between attempts to reconnect to Redis after it became unreachable (the pause doubles from 50 ms up to this); attempts never stop',
    parse: integer(50, 60_000),
    fallback: 2000,
  },
  LOG_LEVEL: { doc: 'debug, info, warn or error', parse: oneOf('debug', 'info', 'warn', 'error'), fallback: 'info' as const },
  LOG_FORMAT: { doc: 'json (one line per event) or pretty (for development)', parse: oneOf('json', 'pretty'), fallback: 'json' as const },
  BODY_LIMIT_BYTES: { doc: 'Largest request body accepted, in bytes', parse: integer(1024, 512 * 1024 * 1024), fallback: 1024 * 1024 },
  SHUTDOWN_TIMEOUT_MS: { doc: 'How long in-flight requests, chat answers and agent tasks may run after SIGTERM', parse: integer(0, 600_000), fallback: 10_000 },
  TRUSTED_PROXIES: {
    doc: 'Comma-separated proxy addresses whose X-Forwarded-For is believed; empty trusts none',
    parse: list,
    fallback: [] as string[],
  },
  CORS_ORIGINS: {
    doc: 'Comma-separated origins (https://app.example.com) whose browser pages may call the API and open /ws/agent, or `*` for any; credentials are never allowed (the API takes bearer tokens). Empty sends no CORS headers',
    parse: originList,
    fallback: [] as string[],
  },
  METRICS_TOKEN: {
    doc: 'Bearer token (at least 32 characters) that opens GET /metrics on the main port; unset, /metrics is not routed there (404)',
    parse: secret,
  },
  METRICS_PORT: {
    doc: 'Port of a second listener, on 127.0.0.1 only, that serves GET /metrics (asking for METRICS_TOKEN too when it is set); unset starts none',
    parse: integer(0, 65535),
  },
  OTEL_EXPORTER_OTLP_ENDPOINT: {
    doc: 'Base URL of an OTLP/HTTP collector (http://collector:4318): each request becomes a trace span, model calls its child spans, exported as JSON to ENDPOINT/v1/traces; unset, no tracing code runs',
    parse: url('http:', 'https:'),
  },
  OTEL_EXPORTER_OTLP_HEADERS: { doc: 'Headers sent with every trace export, as comma-separated key=value pairs with URL-encoded values (api-key=abc)', parse: keyValueList },
  OTEL_SERVICE_NAME: { doc: 'service.name of the exported spans', parse: text, fallback: 'realtime-ai-backend' },
  JWT_SECRET: { doc: 'HS256 key for access tokens (generated into DATA_DIR when unset)', parse: secret },
  TOKEN_ENCRYPTION_KEY: { doc: 'AES-256 key for stored provider tokens: base64 of 32 bytes, or a passphrase (32+ characters) stretched with HKDF (generated when unset)', parse: secret },
  ACCESS_TOKEN_TTL_SECONDS: { doc: 'Lifetime of access tokens', parse: integer(30, 86_400), fallback: 900 },
  REFRESH_TOKEN_TTL_SECONDS: { doc: 'Lifetime of refresh tokens', parse: integer(60, 365 * 86_400), fallback: 30 * 86_400 },
  JWT_ISSUER: { doc: 'iss claim of tokens this service issues', parse: text, fallback: 'realtime-ai-backend' },
  JWT_AUDIENCE: { doc: 'aud claim of tokens this service issues', parse: text, fallback: 'realtime-ai-backend-api' },
  ADMIN_EMAIL: { doc: 'Email of the first owner, created at start-up when no user exists', parse: text },
  ADMIN_PASSWORD: { doc: 'Password of the first owner (at least 12 characters)', parse: text },
  SETUP_CODE_TTL_SECONDS: {
    doc: 'How long the one-time setup code logged at start-up (while no user exists) can create the first owner at /setup',
    parse: integer(60, 7 * 86_400),
    fallback: 3600,
  },
  ALLOW_REGISTRATION: { doc: 'Enables POST /auth/register', parse: boolean, fallback: false },
  OIDC_ISSUER: { doc: 'External identity provider issuer URL; enables its tokens', parse: url('http:', 'https:') },
  OIDC_AUDIENCE: { doc: 'Audience expected in external tokens', parse: text },
  OIDC_SCOPES_CLAIM: { doc: 'Claim listing scopes in external tokens', parse: text, fallback: 'scope' },
  OIDC_ROLE_CLAIM: { doc: 'Claim naming the role in external tokens', parse: text, fallback: 'role' },
  OIDC_DEFAULT_SCOPES: {
    doc: 'Scopes of an external token without a scope claim, always limited to what its role grants; none grants nothing. billing:manage, usage:read and audit:read cannot be listed: a token gets those only by claiming them',
    parse: unclaimedScopes,
    fallback: ['chat:write', 'integrations:read', 'integrations:write', 'search:read', 'agents:run'] as Scope[],
  },
  OIDC_DEFAULT_ROLE: { doc: 'Role of the user created by the first token of an external subject (admin users set-role changes it later)', parse: role, fallback: 'member' as Role },
  OIDC_CLAIMABLE_ROLES: {
    doc: 'Roles the role claim of an external token may choose; a claim naming another (owner, by default) is ignored and the stored role applies',
    parse: roleList,
    fallback: ['member', 'viewer'] as Role[],
  },
  OIDC_ORG_CLAIM: {
    doc: 'Claim naming the organisation of an external user (org_id, say): a new user joins the organisation linked to that issuer, claim and value (admin orgs link), or a new one when OIDC_CREATE_ORGS allows',
    parse: text,
  },
  OIDC_CREATE_ORGS: {
    doc: 'Lets the first token of an external subject whose organisation is not linked here, or not named, create one; otherwise it is refused (403 forbidden) and no account is created',
    parse: boolean,
    fallback: false,
  },
  PLANS: { doc: 'Plan ids organisations can have; the first is the default for new ones', parse: list, fallback: ['free', 'pro', 'team', 'enterprise'] },
  ENTERPRISE_PLANS: { doc: 'Plans that unlock /api/usage and unlimited /api/search', parse: list, fallback: ['enterprise'] },
  PLAN_PRICES: { doc: 'Payment price id of each paid plan, as plan=price pairs (pro=price_123,team=price_456)', parse: list, fallback: [] as string[] },
  RATE_LIMIT_CHAT_PER_MINUTE: { doc: 'Chat requests per user per minute', parse: integer(1, 1_000_000), fallback: 100 },
  RATE_LIMIT_INTEGRATIONS_PER_MINUTE: { doc: 'Integration requests per user per minute', parse: integer(1, 1_000_000), fallback: 50 },
  RATE_LIMIT_SEARCH_PER_MINUTE: { doc: 'Search requests per user per minute (enterprise plans: unlimited)', parse: integer(1, 1_000_000), fallback: 200 },
  RATE_LIMIT_ASSISTANT_PER_MINUTE: { doc: 'Documentation assistant questions per client address per minute', parse: integer(1, 1_000_000), fallback: 10 },
  RATE_LIMIT_BURST: { doc: 'Burst ceiling: requests per user across all endpoints within RATE_LIMIT_BURST_WINDOW_SECONDS', parse: integer(1, 1_000_000), fallback: 500 },
  RATE_LIMIT_BURST_WINDOW_SECONDS: { doc: 'Window of the burst ceiling', parse: integer(1, 3600), fallback: 10 },
  RATE_LIMIT_FAIL_CLOSED: { doc: 'Route classes (chat, integrations, search, assistant, default) refused when Redis is unreachable; others are allowed', parse: list, fallback: [] as string[] },
  LOGIN_MAX_FAILURES: { doc: 'Failed logins per account or address before it is locked', parse: integer(1, 1000), fallback: 5 },
  LOGIN_LOCK_SECONDS: { doc: 'How long a locked account or address waits', parse: integer(1, 86_400), fallback: 900 },
  OPENAI_API_KEY: { doc: 'Key for the OpenAI-compatible model provider', parse: text },
  OPENAI_BASE_URL: { doc: 'Base URL of an OpenAI-compatible provider (OpenAI, vLLM, llama.cpp, Ollama)', parse: url('http:', 'https:') },
  CHAT_MODEL: { doc: 'Model used when a chat request names none', parse: text, fallback: 'gpt-4o-mini' },
  CHAT_IMAGE_MODEL: { doc: 'Model the `!image` command and the generate_image tool use', parse: text, fallback: 'gpt-image-1' },
  CHAT_IMAGE_MAX_BYTES: { doc: 'Largest generated image streamed back as a data URL, in bytes', parse: integer(1024, 32 * 1024 * 1024), fallback: 4 * 1024 * 1024 },
  CHAT_MAX_STEPS: { doc: 'Most model calls in one chat turn (tool calls loop back to the model)', parse: integer(1, 50), fallback: 5 },
  CHAT_CONFIDENCE_THRESHOLD: { doc: 'Below this confidence (0-1) the answer is searched for and grounded on web results', parse: decimal(0, 1), fallback: 0.8 },
  CHAT_CONFIDENCE_TOKENS: { doc: 'How many leading answer tokens the confidence is measured over', parse: integer(1, 1000), fallback: 24 },
  CHAT_SEARCH_AUGMENTATION: { doc: 'Enables the automatic web search when the model is unsure', parse: boolean, fallback: true },
  CHAT_UPSTREAM_TIMEOUT_MS: { doc: 'Longest wait for the model provider to start answering', parse: integer(100, 600_000), fallback: 60_000 },
  CHAT_UPSTREAM_IDLE_MS: { doc: 'A model stream silent for this long is treated as stalled', parse: integer(100, 600_000), fallback: 30_000 },
  CHAT_GENERATION_TIMEOUT_SECONDS: { doc: 'Cap on one generation, followed or not; it is stopped and stored when reached', parse: integer(1, 86_400), fallback: 600 },
  CHAT_STREAM_TTL_SECONDS: { doc: 'How long a generation\'s event log stays resumable after it ends', parse: integer(10, 7 * 86_400), fallback: 900 },
  ENHANCED_CHAT_MAX_STEPS: { doc: 'Default and ceiling of plan steps in an enhanced chat turn', parse: integer(1, 10), fallback: 5 },
  ENHANCED_CHAT_TIME_LIMIT_SECONDS: { doc: 'Default and ceiling of an enhanced chat turn\'s time; unfinished steps are skipped', parse: integer(5, 3600), fallback: 180 },
  AGENT_MAX_CONNECTIONS_PER_USER: { doc: 'Agent WebSocket connections one user may hold open in one process; more are refused with 429', parse: integer(1, 10_000), fallback: 20 },
  AGENT_MAX_MESSAGE_BYTES: { doc: 'Largest agent WebSocket message taken; a larger one gets an error message (frames over 4 times this close the connection with 1009)', parse: integer(1024, 16 * 1024 * 1024), fallback: 65_536 },
  AGENT_MAX_BAD_MESSAGES: { doc: 'Malformed, oversize or unknown messages one agent connection may send in a minute before it is closed with 1008', parse: integer(1, 10_000), fallback: 10 },
  AGENT_HEARTBEAT_INTERVAL_MS: { doc: 'How often the server pings each agent connection', parse: integer(100, 600_000), fallback: 15_000 },
  AGENT_IDLE_TIMEOUT_MS: { doc: 'An agent connection from which nothing (not even a pong) arrived for this long is closed', parse: integer(200, 3_600_000), fallback: 45_000 },
  AGENT_TASK_RETENTION_SECONDS: { doc: 'How long a finished agent task and its messages stay readable for subscribe and status', parse: integer(1, 7 * 86_400), fallback: 3600 },
  AGENT_TASK_TIMEOUT_SECONDS: { doc: 'Longest an agent task may run before it fails with task_timeout', parse: integer(5, 86_400), fallback: 600 },
  AGENT_MAX_TASKS_KEPT_PER_USER: { doc: 'Finished agent tasks kept per user in one process within the retention time; the oldest go first', parse: integer(1, 10_000_000), fallback: 1000 },
  AGENT_MAX_RUNNING_TASKS_PER_USER: { doc: 'Agent tasks one user may have running at once; more are refused with too_many_tasks', parse: integer(1, 10_000), fallback: 10 },
  ENHANCED_CHAT_MAX_ATTEMPTS: { doc: 'Default and ceiling of check-and-repair attempts per piece of code', parse: integer(1, 10), fallback: 3 },
  STRIPE_SECRET_KEY: { doc: 'Payment provider secret key', parse: text },
  PAYMENT_WEBHOOK_SECRET: { doc: 'Signing secret of the payment webhook', parse: text },
  PAYMENT_WEBHOOK_TOLERANCE_SECONDS: { doc: 'How far a webhook signature timestamp may be from now, in either direction', parse: integer(10, 3600), fallback: 300 },
  STRIPE_API_URL: { doc: 'Base URL of the payment provider API; the SDK is pointed at its host, port and protocol', parse: url('http:', 'https:'), fallback: 'https://api.stripe.com' },
  STRIPE_TIMEOUT_MS: { doc: 'Longest wait for one payment provider API call', parse: integer(500, 120_000), fallback: 10_000 },
  PLAN_PRICES_YEARLY: { doc: 'Price id of each paid plan billed yearly, as plan=price pairs; empty offers monthly billing only', parse: list, fallback: [] as string[] },
  CHECKOUT_SUCCESS_URL: {
    doc: 'Where Checkout sends the customer after paying; {CHECKOUT_SESSION_ID} becomes the session id',
    parse: url('http:', 'https:'),
    fallback: (env: Env) => `${publicBase(env)}/billing/success?session_id={CHECKOUT_SESSION_ID}`,
  },
  CHECKOUT_CANCEL_URL: { doc: 'Where Checkout sends the customer who backs out', parse: url('http:', 'https:'), fallback: (env: Env) => `${publicBase(env)}/billing/cancel` },
  BILLING_PORTAL_RETURN_URL: { doc: 'Where the billing portal sends the customer back to', parse: url('http:', 'https:'), fallback: (env: Env) => `${publicBase(env)}/billing` },
  GITHUB_CLIENT_ID: { doc: 'OAuth app client id for the code-hosting provider', parse: text },
  GITHUB_CLIENT_SECRET: { doc: 'OAuth app client secret for the code-hosting provider', parse: text },
  SUPABASE_CLIENT_ID: { doc: 'OAuth app client id for the database platform', parse: text },
  SUPABASE_CLIENT_SECRET: { doc: 'OAuth app client secret for the database platform', parse: text },
  GITHUB_AUTHORIZE_URL: { doc: 'GitHub OAuth authorize endpoint', parse: url('http:', 'https:'), fallback: 'https://github.com/login/oauth/authorize' },
  GITHUB_TOKEN_URL: { doc: 'GitHub OAuth token endpoint', parse: url('http:', 'https:'), fallback: 'https://github.com/login/oauth/access_token' },
  GITHUB_API_URL: { doc: 'GitHub REST API base (GET /user verifies a connection; grants are revoked there)', parse: url('http:', 'https:'), fallback: 'https://api.github.com' },
  GITHUB_SCOPES: { doc: 'Comma-separated GitHub scopes asked for when a connection names none', parse: list, fallback: ['repo', 'read:user'] },
  SUPABASE_AUTHORIZE_URL: { doc: 'Supabase OAuth authorize endpoint', parse: url('http:', 'https:'), fallback: 'https://api.supabase.com/v1/oauth/authorize' },
  SUPABASE_TOKEN_URL: { doc: 'Supabase OAuth token endpoint', parse: url('http:', 'https:'), fallback: 'https://api.supabase.com/v1/oauth/token' },
  SUPABASE_API_URL: { doc: 'Supabase Management API base (organisations and projects verify a connection)', parse: url('http:', 'https:'), fallback: 'https://api.supabase.com' },
  SUPABASE_REVOKE_URL: { doc: 'Supabase OAuth revocation endpoint', parse: url('http:', 'https:'), fallback: 'https://api.supabase.com/v1/oauth/revoke' },
  OAUTH_PROVIDERS: { doc: 'Generic OAuth 2.0 providers as a JSON object keyed by id (GitLab, Vercel, Netlify...); see the Integrations section', parse: text },
  INTEGRATIONS_RETURN_URL: { doc: 'Front-end page the OAuth callback redirects to with the outcome; default PUBLIC_BASE_URL/integrations', parse: url('http:', 'https:') },
  OAUTH_STATE_TTL_SECONDS: { doc: 'How long a started connection may take to come back through the callback', parse: integer(30, 3600), fallback: 600 },
  INTEGRATIONS_STATUS_CACHE_TTL_SECONDS: { doc: 'How long a verified connection status is reused before the provider is asked again (0 = never)', parse: integer(0, 3600), fallback: 60 },
  TOKEN_ENCRYPTION_PREVIOUS_KEYS: { doc: 'Comma-separated earlier TOKEN_ENCRYPTION_KEY values, still accepted for decryption after a rotation', parse: list, fallback: [] as string[] },
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
  SANDBOX_TIMEOUT_MS: { doc: 'Wall-clock limit of one sandboxed code run; a run may ask for less, never more', parse: integer(100, 600_000), fallback: 10_000 },
  SANDBOX_MEMORY_MB: { doc: 'Memory ceiling of one sandboxed run (its whole process tree and the files it writes), in MiB', parse: integer(32, 65_536), fallback: 256 },
  SANDBOX_MAX_OUTPUT_BYTES: { doc: 'Output (stdout and stderr) kept from one sandboxed run; reaching it stops the run', parse: integer(1024, 64 * 1024 * 1024), fallback: 256 * 1024 },
  SANDBOX_MAX_PROCESSES: { doc: 'Tasks (processes and threads) one sandboxed run may have at once; Bun itself uses a handful', parse: integer(16, 4096), fallback: 64 },
  CODEHOST_GIT_URL: { doc: 'Base of the git remotes sites are pushed to, as <base>/<owner>/<name>.git', parse: url('http:', 'https:'), fallback: 'https://github.com' },
  PUBLISH_MAX_FILES: { doc: 'Most files a published site may have', parse: integer(1, 100_000), fallback: 1000 },
  PUBLISH_MAX_SITE_BYTES: { doc: 'Largest published site, decoded bytes of all its files (the request must also fit BODY_LIMIT_BYTES)', parse: integer(1, 1024 * 1024 * 1024), fallback: 10 * 1024 * 1024 },
  PUBLISH_GIT_TIMEOUT_MS: { doc: 'Longest wait for each git HTTP request of a publish (fetch, push)', parse: integer(1000, 600_000), fallback: 60_000 },
  IMPORT_CODEHOST_URL: {
    doc: 'Code-hosting provider of repository imports: owner/name shorthands clone from it, and only its host receives the user\'s stored token',
    parse: url('https:', 'http:'),
    fallback: 'https://github.com',
  },
  IMPORT_CODEHOST_PROVIDER: { doc: 'Integration provider whose stored token authenticates imports from IMPORT_CODEHOST_URL', parse: text, fallback: 'github' },
  IMPORT_ALLOW_HOSTS: {
    doc: 'Comma-separated host or host:port entries imports may reach on any address (a self-hosted Git server); plain http is allowed only for these',
    parse: list,
    fallback: [] as string[],
  },
  IMPORT_MAX_REPOSITORY_BYTES: {
    doc: 'Largest repository an import accepts, in bytes: the download (ref list and pack) and the checked-out files are each held to it',
    parse: integer(1024, 64 * 1024 ** 3),
    fallback: 512 * 1024 ** 2,
  },
  IMPORT_MAX_FILES: { doc: 'Most files a checked-out repository may have', parse: integer(1, 10_000_000), fallback: 100_000 },
  IMPORT_MAX_FILE_BYTES: { doc: 'Largest single file a repository may hold, in bytes', parse: integer(1, 4 * 1024 ** 3), fallback: 50 * 1024 ** 2 },
  IMPORT_CLONE_TIMEOUT_SECONDS: { doc: 'Longest a clone or fetch, with its checkout, may take before the import fails', parse: integer(1, 86_400), fallback: 300 },
  IMPORT_HEARTBEAT_MS: { doc: 'How often a running import writes its heartbeat; one silent for three heartbeats (its process died) is marked failed by any process', parse: integer(100, 600_000), fallback: 5000 },
  IMPORT_CONCURRENCY: { doc: 'Imports run at the same time in one process; later ones wait queued', parse: integer(1, 64), fallback: 2 },
  EMBEDDINGS_MODEL: {
    doc: 'Embeddings model of an OpenAI-compatible endpoint for code search (text-embedding-3-small, nomic-embed-text ...); unset uses the offline hashed sub-word embeddings',
    parse: text,
  },
  EMBEDDINGS_BASE_URL: { doc: 'Base URL of the embeddings endpoint, with /v1; unset: OPENAI_BASE_URL, else https://api.openai.com/v1', parse: url('http:', 'https:') },
  EMBEDDINGS_API_KEY: { doc: 'Key of the embeddings endpoint; unset: OPENAI_API_KEY', parse: text },
  EMBEDDINGS_DIMENSIONS: {
    doc: 'Vector size: asked of EMBEDDINGS_MODEL when set (models that can shorten their vectors), else the size of the offline embeddings (default 256)',
    parse: integer(16, 4096),
  },
  CODE_INDEX_SNAPSHOT_DELAY_MS: { doc: 'Quiet time after a code index change before its snapshot is written to DATA_DIR (an import also saves when it ends)', parse: integer(0, 600_000), fallback: 2000 },
  CODE_INDEX_REFRESH_MS: { doc: 'How often a search checks the database for a newer code index snapshot saved by another process', parse: integer(0, 600_000), fallback: 2000 },
  DOCS_MCP_URL: { doc: 'Public URL of the hosted MCP server the documentation menu hands out; default PUBLIC_BASE_URL/mcp', parse: url('http:', 'https:') },
  MCP_ALLOWED_HOSTS: {
    doc: "Comma-separated Host values /mcp accepts besides PUBLIC_BASE_URL's host, each host or host:port exactly as clients send it (an internal name, a proxy that rewrites Host); pages there may call it too. Any other Host or Origin is refused with 403 (DNS rebinding)",
    parse: hostList,
    fallback: (env: Env) => ['localhost', '127.0.0.1', '[::1]'].map((name) => `${name}:${env.PORT || 3000}`),
  },
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
  /** REDIS_RECONNECT_MAX_DELAY_MS: the cap of the Redis reconnection backoff. */
  readonly redisReconnectMaxDelayMs: number
  readonly log: { readonly level: 'debug' | 'info' | 'warn' | 'error'; readonly format: 'json' | 'pretty' }
  readonly bodyLimitBytes: number
  readonly shutdownTimeoutMs: number
  readonly trustedProxies: readonly string[]
  /** CORS_ORIGINS: origins of the browser pages allowed to call the API and open agent connections, or `*`. */
  readonly corsOrigins: readonly string[]
  /** GET /metrics: on the main port behind `token`, and/or on a loopback listener at `port`; collected only when either is set. */
  readonly metrics: { readonly token: string | undefined; readonly port: number | undefined }
  /** OpenTelemetry traces over OTLP/HTTP; undefined when OTEL_EXPORTER_OTLP_ENDPOINT is unset. */
  readonly tracing: { readonly endpoint: string; readonly headers: Readonly<Record<string, string>>; readonly serviceName: string } | undefined
  readonly plans: { readonly ids: readonly string[]; readonly enterprise: readonly string[]; readonly prices: Readonly<Record<string, string>> }
  readonly rateLimits: {
    readonly chatPerMinute: number
    readonly integrationsPerMinute: number
    readonly searchPerMinute: number
    readonly assistantPerMinute: number
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
  readonly oidc:
    | {
        readonly issuer: string
        readonly audience: string
        readonly scopesClaim: string
        readonly roleClaim: string
        /** Scopes of a token without a scope claim, before its role limits them; never a privileged one. */
        readonly defaultScopes: readonly Scope[]
        readonly defaultRole: Role
        readonly claimableRoles: readonly Role[]
        readonly orgClaim: string | undefined
        readonly createOrgs: boolean
      }
    | undefined
  readonly admin: { readonly email: string; readonly password: string } | undefined
  /** First run: while no user exists, each start logs a one-time code that creates the first owner at /setup. */
  readonly setup: { readonly codeTtlSeconds: number }
  readonly allowRegistration: boolean
  /** Limits of each sandboxed code run (see src/sandbox); requests may only lower them. */
  readonly sandbox: { readonly timeoutMs: number; readonly memoryMb: number; readonly maxOutputBytes: number; readonly maxProcesses: number }
  readonly webSearch: {
    /** Undefined when no provider is configured: the route answers 503 not_configured. */
    readonly provider: WebSearchProviderSettings | undefined
    readonly cacheTtlSeconds: number
  }
  readonly chat: {
    /** Undefined when neither OPENAI_API_KEY nor OPENAI_BASE_URL is set: chat answers 503 not_configured. */
    readonly provider: { readonly apiKey: string | undefined; readonly baseUrl: string | undefined } | undefined
    readonly model: string
    readonly imageModel: string
    readonly imageMaxBytes: number
    readonly maxSteps: number
    readonly confidenceThreshold: number
    readonly confidenceTokens: number
    readonly searchAugmentation: boolean
    readonly upstreamTimeoutMs: number
    readonly upstreamIdleMs: number
    readonly generationTimeoutSeconds: number
    readonly streamTtlSeconds: number
  }
  readonly agents: {
    readonly maxConnectionsPerUser: number
    readonly maxMessageBytes: number
    readonly maxBadMessages: number
    readonly heartbeatIntervalMs: number
    readonly idleTimeoutMs: number
    readonly taskRetentionSeconds: number
    readonly taskTimeoutSeconds: number
    readonly maxRunningTasksPerUser: number
    readonly maxTasksKeptPerUser: number
  }
  readonly enhancedChat: { readonly maxSteps: number; readonly timeLimitSeconds: number; readonly maxAttempts: number }
  readonly integrations: {
    /** Front-end page the OAuth callback redirects to. */
    readonly returnUrl: string
    readonly stateTtlSeconds: number
    readonly statusCacheTtlSeconds: number
    readonly github: OAuthAppSettings
    readonly supabase: OAuthAppSettings
    /** Providers from OAUTH_PROVIDERS. */
    readonly generic: readonly GenericProviderSettings[]
  }
  readonly payments: PaymentSettings
  readonly publish: {
    /** Git remotes are `<gitUrl>/<owner>/<name>.git`; the Pages API is integrations.github.apiUrl. */
    readonly gitUrl: string
    readonly maxFiles: number
    readonly maxSiteBytes: number
    readonly gitTimeoutMs: number
  }
  readonly imports: {
    readonly codehostUrl: string
    readonly codehostProvider: string
    readonly allowHosts: readonly string[]
    readonly maxRepositoryBytes: number
    readonly maxFiles: number
    readonly maxFileBytes: number
    readonly cloneTimeoutMs: number
    readonly concurrency: number
    readonly heartbeatMs: number
  }
  /** The documentation site at /docs. */
  readonly docs: { readonly mcpUrl: string }
  /** The hosted MCP server at /mcp: Host values it accepts besides PUBLIC_BASE_URL's. */
  readonly mcp: { readonly allowedHosts: readonly string[] }
  readonly codeSearch: {
    readonly embeddings: EmbeddingsSettings
    readonly snapshotDelayMs: number
    readonly refreshMs: number
  }
  readonly secrets: { readonly jwtSecret: string; readonly tokenEncryptionKey: string; readonly previousTokenEncryptionKeys: readonly string[] }
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

/** Every documented variable with its default, for docs/configuration.mdx (checked by its tests) and `--help`. */
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
function resolveSecrets(dataDir: string, values: EnvValues): { secrets: Omit<Config['secrets'], 'previousTokenEncryptionKeys'>; generated: string[] } {
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

/** The payment provider and its billing options. */
export interface PaymentSettings {
  /** Undefined unless STRIPE_SECRET_KEY and PAYMENT_WEBHOOK_SECRET are both set: payment routes answer 503 not_configured. */
  readonly provider:
    | {
        readonly secretKey: string
        readonly webhookSecret: string
        /** Where the SDK sends its requests (STRIPE_API_URL). */
        readonly api: { readonly host: string; readonly port: number; readonly protocol: 'http' | 'https' }
        readonly timeoutMs: number
      }
    | undefined
  /** Payment variables still unset, named in the 503 answer. */
  readonly missing: readonly string[]
  /** Price id of each paid plan, per billing interval. */
  readonly prices: { readonly month: Readonly<Record<string, string>>; readonly year: Readonly<Record<string, string>> }
  readonly checkoutSuccessUrl: string
  readonly checkoutCancelUrl: string
  readonly portalReturnUrl: string
  readonly webhookToleranceSeconds: number
}

function paymentSettings(v: EnvValues, monthly: Record<string, string>, problems: string[]): PaymentSettings {
  const year: Record<string, string> = {}
  for (const pair of v.PLAN_PRICES_YEARLY) {
    const [plan, price] = pair.split('=').map((s) => s.trim())
    if (!plan || !price) problems.push(`PLAN_PRICES_YEARLY entry "${pair}" must look like plan=price_id`)
    else if (!v.PLANS.includes(plan)) problems.push(`PLAN_PRICES_YEARLY names plan "${plan}", which is not in PLANS (${v.PLANS.join(', ')})`)
    else year[plan] = price
  }
  const api = new URL(v.STRIPE_API_URL)
  const protocol = api.protocol === 'http:' ? 'http' : 'https'
  const missing = (['STRIPE_SECRET_KEY', 'PAYMENT_WEBHOOK_SECRET'] as const).filter((name) => !v[name])
  return Object.freeze({
    provider:
      v.STRIPE_SECRET_KEY && v.PAYMENT_WEBHOOK_SECRET
        ? Object.freeze({
            secretKey: v.STRIPE_SECRET_KEY,
            webhookSecret: v.PAYMENT_WEBHOOK_SECRET,
            api: Object.freeze({ host: api.hostname, port: Number(api.port || (protocol === 'http' ? 80 : 443)), protocol }),
            timeoutMs: v.STRIPE_TIMEOUT_MS,
          } as const)
        : undefined,
    missing: Object.freeze(missing),
    prices: Object.freeze({ month: Object.freeze({ ...monthly }), year: Object.freeze(year) }),
    checkoutSuccessUrl: v.CHECKOUT_SUCCESS_URL,
    checkoutCancelUrl: v.CHECKOUT_CANCEL_URL,
    portalReturnUrl: v.BILLING_PORTAL_RETURN_URL,
    webhookToleranceSeconds: v.PAYMENT_WEBHOOK_TOLERANCE_SECONDS,
  })
}

function listUnconfigured(v: EnvValues): string[] {
  const missing: string[] = []
  if (!v.OPENAI_API_KEY && !v.OPENAI_BASE_URL) missing.push('model provider (OPENAI_API_KEY or OPENAI_BASE_URL)')
  if (!v.STRIPE_SECRET_KEY || !v.PAYMENT_WEBHOOK_SECRET) missing.push('payment provider (STRIPE_SECRET_KEY, PAYMENT_WEBHOOK_SECRET)')
  if (!v.GITHUB_CLIENT_ID && !v.SUPABASE_CLIENT_ID && !v.OAUTH_PROVIDERS) missing.push('OAuth apps (GITHUB_CLIENT_ID, SUPABASE_CLIENT_ID or OAUTH_PROVIDERS)')
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
/** Where code search gets its vectors: the offline hashed embeddings, or an OpenAI-compatible endpoint. */
export type EmbeddingsSettings =
  | { readonly kind: 'hashed'; readonly dimensions: number }
  | { readonly kind: 'openai'; readonly baseUrl: string; readonly apiKey: string | undefined; readonly model: string; readonly dimensions: number | undefined }

function embeddingsSettings(v: EnvValues, problems: string[]): EmbeddingsSettings {
  if (!v.EMBEDDINGS_MODEL) {
    for (const name of ['EMBEDDINGS_BASE_URL', 'EMBEDDINGS_API_KEY'] as const)
      if (v[name]) problems.push(`${name} is set but EMBEDDINGS_MODEL is not; set the model to use the endpoint`)
    return { kind: 'hashed', dimensions: v.EMBEDDINGS_DIMENSIONS ?? 256 }
  }
  const baseUrl = v.EMBEDDINGS_BASE_URL ?? v.OPENAI_BASE_URL ?? 'https://api.openai.com/v1'
  const apiKey = v.EMBEDDINGS_API_KEY ?? v.OPENAI_API_KEY
  if (!apiKey && new URL(baseUrl).hostname === 'api.openai.com') problems.push('EMBEDDINGS_MODEL is set for api.openai.com but neither EMBEDDINGS_API_KEY nor OPENAI_API_KEY is')
  return { kind: 'openai', baseUrl, apiKey, model: v.EMBEDDINGS_MODEL, dimensions: v.EMBEDDINGS_DIMENSIONS }
}

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
  const routeClasses = ['chat', 'integrations', 'search', 'assistant', 'default']
  for (const c of values.RATE_LIMIT_FAIL_CLOSED)
    if (!routeClasses.includes(c)) problems.push(`RATE_LIMIT_FAIL_CLOSED names "${c}"; known classes are ${routeClasses.join(', ')}`)
  if (values.PLANS.length === 0) problems.push('PLANS must name at least one plan')
  const searchProvider = webSearchProvider(values, problems)
  const embeddings = embeddingsSettings(values, problems)
  const payments = paymentSettings(values, prices, problems)
  for (const [id, pair] of [['GITHUB', [values.GITHUB_CLIENT_ID, values.GITHUB_CLIENT_SECRET]], ['SUPABASE', [values.SUPABASE_CLIENT_ID, values.SUPABASE_CLIENT_SECRET]]] as const)
    if ((pair[0] === undefined) !== (pair[1] === undefined)) problems.push(`${id}_CLIENT_ID and ${id}_CLIENT_SECRET must be set together`)
  values.TOKEN_ENCRYPTION_PREVIOUS_KEYS.forEach((key, i) => {
    if (key.length < 32) problems.push(`TOKEN_ENCRYPTION_PREVIOUS_KEYS entry ${i + 1} must be at least 32 characters`)
  })
  const oauthProviders = parseGenericProviders(values.OAUTH_PROVIDERS, ['github', 'supabase'])
  problems.push(...oauthProviders.problems)
  if (values.METRICS_PORT !== undefined && values.METRICS_PORT !== 0 && values.METRICS_PORT === values.PORT)
    problems.push(`METRICS_PORT must differ from PORT (both are ${values.PORT})`)
  if (values.OTEL_EXPORTER_OTLP_HEADERS && !values.OTEL_EXPORTER_OTLP_ENDPOINT)
    problems.push('OTEL_EXPORTER_OTLP_HEADERS is set but OTEL_EXPORTER_OTLP_ENDPOINT is not; set the collector to send them to')
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
    redisReconnectMaxDelayMs: values.REDIS_RECONNECT_MAX_DELAY_MS,
    log: Object.freeze({ level: values.LOG_LEVEL, format: values.LOG_FORMAT }),
    bodyLimitBytes: values.BODY_LIMIT_BYTES,
    shutdownTimeoutMs: values.SHUTDOWN_TIMEOUT_MS,
    trustedProxies: Object.freeze([...values.TRUSTED_PROXIES]),
    corsOrigins: Object.freeze([...values.CORS_ORIGINS]),
    metrics: Object.freeze({ token: values.METRICS_TOKEN, port: values.METRICS_PORT }),
    tracing: values.OTEL_EXPORTER_OTLP_ENDPOINT
      ? Object.freeze({
          endpoint: values.OTEL_EXPORTER_OTLP_ENDPOINT,
          headers: Object.freeze({ ...values.OTEL_EXPORTER_OTLP_HEADERS }),
          serviceName: values.OTEL_SERVICE_NAME,
        })
      : undefined,
    plans: Object.freeze({ ids: values.PLANS, enterprise: values.ENTERPRISE_PLANS, prices: Object.freeze(prices) }),
    rateLimits: Object.freeze({
      chatPerMinute: values.RATE_LIMIT_CHAT_PER_MINUTE,
      integrationsPerMinute: values.RATE_LIMIT_INTEGRATIONS_PER_MINUTE,
      searchPerMinute: values.RATE_LIMIT_SEARCH_PER_MINUTE,
      assistantPerMinute: values.RATE_LIMIT_ASSISTANT_PER_MINUTE,
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
          defaultScopes: Object.freeze([...values.OIDC_DEFAULT_SCOPES]),
          defaultRole: values.OIDC_DEFAULT_ROLE,
          claimableRoles: Object.freeze([...values.OIDC_CLAIMABLE_ROLES]),
          orgClaim: values.OIDC_ORG_CLAIM,
          createOrgs: values.OIDC_CREATE_ORGS,
        })
      : undefined,
    admin: values.ADMIN_EMAIL && values.ADMIN_PASSWORD ? Object.freeze({ email: values.ADMIN_EMAIL, password: values.ADMIN_PASSWORD }) : undefined,
    setup: Object.freeze({ codeTtlSeconds: values.SETUP_CODE_TTL_SECONDS }),
    allowRegistration: values.ALLOW_REGISTRATION,
    sandbox: Object.freeze({
      timeoutMs: values.SANDBOX_TIMEOUT_MS,
      memoryMb: values.SANDBOX_MEMORY_MB,
      maxOutputBytes: values.SANDBOX_MAX_OUTPUT_BYTES,
      maxProcesses: values.SANDBOX_MAX_PROCESSES,
    }),
    webSearch: Object.freeze({ provider: searchProvider && Object.freeze(searchProvider), cacheTtlSeconds: values.WEB_SEARCH_CACHE_TTL_SECONDS }),
    payments,
    publish: Object.freeze({
      gitUrl: values.CODEHOST_GIT_URL,
      maxFiles: values.PUBLISH_MAX_FILES,
      maxSiteBytes: values.PUBLISH_MAX_SITE_BYTES,
      gitTimeoutMs: values.PUBLISH_GIT_TIMEOUT_MS,
    }),
    chat: Object.freeze({
      provider:
        values.OPENAI_API_KEY || values.OPENAI_BASE_URL ? Object.freeze({ apiKey: values.OPENAI_API_KEY, baseUrl: values.OPENAI_BASE_URL }) : undefined,
      model: values.CHAT_MODEL,
      imageModel: values.CHAT_IMAGE_MODEL,
      imageMaxBytes: values.CHAT_IMAGE_MAX_BYTES,
      maxSteps: values.CHAT_MAX_STEPS,
      confidenceThreshold: values.CHAT_CONFIDENCE_THRESHOLD,
      confidenceTokens: values.CHAT_CONFIDENCE_TOKENS,
      searchAugmentation: values.CHAT_SEARCH_AUGMENTATION,
      upstreamTimeoutMs: values.CHAT_UPSTREAM_TIMEOUT_MS,
      upstreamIdleMs: values.CHAT_UPSTREAM_IDLE_MS,
      generationTimeoutSeconds: values.CHAT_GENERATION_TIMEOUT_SECONDS,
      streamTtlSeconds: values.CHAT_STREAM_TTL_SECONDS,
    }),
    agents: Object.freeze({
      maxConnectionsPerUser: values.AGENT_MAX_CONNECTIONS_PER_USER,
      maxMessageBytes: values.AGENT_MAX_MESSAGE_BYTES,
      maxBadMessages: values.AGENT_MAX_BAD_MESSAGES,
      heartbeatIntervalMs: values.AGENT_HEARTBEAT_INTERVAL_MS,
      idleTimeoutMs: values.AGENT_IDLE_TIMEOUT_MS,
      taskRetentionSeconds: values.AGENT_TASK_RETENTION_SECONDS,
      taskTimeoutSeconds: values.AGENT_TASK_TIMEOUT_SECONDS,
      maxRunningTasksPerUser: values.AGENT_MAX_RUNNING_TASKS_PER_USER,
      maxTasksKeptPerUser: values.AGENT_MAX_TASKS_KEPT_PER_USER,
    }),
    enhancedChat: Object.freeze({
      maxSteps: values.ENHANCED_CHAT_MAX_STEPS,
      timeLimitSeconds: values.ENHANCED_CHAT_TIME_LIMIT_SECONDS,
      maxAttempts: values.ENHANCED_CHAT_MAX_ATTEMPTS,
    }),
    integrations: Object.freeze({
      returnUrl: values.INTEGRATIONS_RETURN_URL ?? `${values.PUBLIC_BASE_URL}/integrations`,
      stateTtlSeconds: values.OAUTH_STATE_TTL_SECONDS,
      statusCacheTtlSeconds: values.INTEGRATIONS_STATUS_CACHE_TTL_SECONDS,
      github: Object.freeze({
        clientId: values.GITHUB_CLIENT_ID,
        clientSecret: values.GITHUB_CLIENT_SECRET,
        authorizeUrl: values.GITHUB_AUTHORIZE_URL,
        tokenUrl: values.GITHUB_TOKEN_URL,
        apiUrl: values.GITHUB_API_URL,
        scopes: Object.freeze([...values.GITHUB_SCOPES]),
      }),
      supabase: Object.freeze({
        clientId: values.SUPABASE_CLIENT_ID,
        clientSecret: values.SUPABASE_CLIENT_SECRET,
        authorizeUrl: values.SUPABASE_AUTHORIZE_URL,
        tokenUrl: values.SUPABASE_TOKEN_URL,
        apiUrl: values.SUPABASE_API_URL,
        revokeUrl: values.SUPABASE_REVOKE_URL,
        scopes: Object.freeze([] as string[]),
      }),
      generic: Object.freeze(oauthProviders.providers),
    }),
    imports: Object.freeze({
      codehostUrl: values.IMPORT_CODEHOST_URL,
      codehostProvider: values.IMPORT_CODEHOST_PROVIDER,
      allowHosts: Object.freeze(values.IMPORT_ALLOW_HOSTS.map((host) => host.toLowerCase())),
      maxRepositoryBytes: values.IMPORT_MAX_REPOSITORY_BYTES,
      maxFiles: values.IMPORT_MAX_FILES,
      maxFileBytes: values.IMPORT_MAX_FILE_BYTES,
      cloneTimeoutMs: values.IMPORT_CLONE_TIMEOUT_SECONDS * 1000,
      concurrency: values.IMPORT_CONCURRENCY,
      heartbeatMs: values.IMPORT_HEARTBEAT_MS,
    }),
    docs: Object.freeze({ mcpUrl: values.DOCS_MCP_URL ?? `${values.PUBLIC_BASE_URL}/mcp` }),
    mcp: Object.freeze({ allowedHosts: Object.freeze([...values.MCP_ALLOWED_HOSTS]) }),
    codeSearch: Object.freeze({
      embeddings: Object.freeze(embeddings),
      snapshotDelayMs: values.CODE_INDEX_SNAPSHOT_DELAY_MS,
      refreshMs: values.CODE_INDEX_REFRESH_MS,
    }),
    secrets: Object.freeze({ ...secrets, previousTokenEncryptionKeys: Object.freeze([...values.TOKEN_ENCRYPTION_PREVIOUS_KEYS]) }),
    generatedSecrets: Object.freeze(generated),
    unconfigured: Object.freeze(listUnconfigured(values)),
  })
}
