import { accessSync, chmodSync, constants, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { PRIVILEGED_SCOPES, ROLES, SCOPES, isRole, isScope, type Role, type Scope } from './auth/roles.ts'
import { ROUTE_CLASSES } from './rate-limit/route-classes.ts'
import { parseModelProviders } from './llm/model-catalogue.ts'

/**
 * The only reader of the environment. Settings come in slices: the core's below, and one per domain plugin
 * (plugins/<name>/settings.ts), composed in src/main/config.ts. Each variable is declared once, with its
 * parser, default and doc text; a slice's part of `Config` is what its `build` returns. `loadSettings`
 * validates every variable at once and throws a `ConfigError` listing each problem; the result is frozen.
 */

export type Env = Record<string, string | undefined>

/** Turns the raw value into the setting, or throws an Error whose message completes "NAME ...". */
export type Parser<T> = (raw: string) => T

/** A default computed from the environment (PUBLIC_BASE_URL from PORT); `shown` is how the docs write it. */
export class Derived<T> {
  constructor(
    readonly shown: string,
    readonly derive: (env: Env) => T,
  ) {}
}

export const derived = <T>(shown: string, derive: (env: Env) => T): Derived<T> => new Derived(shown, derive)

export interface Variable<T> {
  /** What the variable controls, shown in docs/configuration.mdx and in error messages. */
  doc: string
  parse: Parser<T>
  /** Value used when the variable is unset or empty; without one the variable is optional and unset. */
  fallback?: T | Derived<T>
}

export type Variables = Record<string, Variable<unknown>>

type ValueOf<V> = V extends Variable<infer T> ? T : never

/** The parsed values of a table of variables: those without a default may be undefined. */
export type Values<V extends Variables> = {
  readonly [K in keyof V]: V[K] extends { fallback: unknown } ? ValueOf<V[K]> : ValueOf<V[K]> | undefined
}

// Parsers: each checks one raw value and says what is wrong in words that follow the variable's name.

export const integer =
  (min: number, max: number): Parser<number> =>
  (raw) => {
    if (!/^-?\d+$/.test(raw.trim())) throw new Error(`must be a whole number, got "${raw}"`)
    const n = Number(raw)
    if (n < min || n > max) throw new Error(`must be between ${min} and ${max}, got ${n}`)
    return n
  }

export const oneOf =
  <const T extends string>(...allowed: T[]): Parser<T> =>
  (raw) => {
    if (!(allowed as string[]).includes(raw)) throw new Error(`must be one of ${allowed.join(', ')}, got "${raw}"`)
    return raw as T
  }

export const url =
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

export const decimal =
  (min: number, max: number): Parser<number> =>
  (raw) => {
    const n = Number(raw.trim())
    if (raw.trim() === '' || !Number.isFinite(n)) throw new Error(`must be a number, got "${raw}"`)
    if (n < min || n > max) throw new Error(`must be between ${min} and ${max}, got ${n}`)
    return n
  }

export const text: Parser<string> = (raw) => {
  if (raw.trim() === '') throw new Error('must not be empty')
  return raw
}

export const secret: Parser<string> = (raw) => {
  if (raw.length < 32) throw new Error('must be at least 32 characters')
  return raw
}

export const list: Parser<string[]> = (raw) =>
  raw
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)

/** `host` or `host:port` entries as clients send them in a Host header, host names lower-cased. */
export const hostList: Parser<string[]> = (raw) =>
  list(raw).map((entry) => {
    let parsed: URL | undefined
    try {
      parsed = new URL(`http://${entry}`)
    } catch {}
    const port = /:(\d+)$/.exec(entry)?.[1]
    const plain =
      parsed && /^([a-z0-9._~-]+|\[[0-9a-f:.]+\])$/.test(parsed.hostname) && parsed.pathname === '/' && !parsed.username && !parsed.search && !parsed.hash
    if (!parsed || !plain) throw new Error(`entries must be host or host:port (no scheme, path or wildcard), got "${entry}"`)
    return port === undefined ? parsed.hostname : `${parsed.hostname}:${port}`
  })

/** Browser origins (`https://app.example.com`, scheme, host and port only), or `*` alone. */
export const originList: Parser<string[]> = (raw) => {
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
    const plain =
      parsed && /^https?:$/.test(parsed.protocol) && parsed.pathname === '/' && !parsed.username && !parsed.password && !parsed.search && !parsed.hash
    if (!parsed || !plain || /^https?:\/\/.*\/./.test(entry))
      throw new Error(`entries must be http or https origins such as https://app.example.com (no path), got "${entry}"`)
    // As browsers send it in Origin: lower case, no default port, no trailing slash.
    return parsed.origin
  })
}

export const role: Parser<Role> = (raw) => {
  if (!isRole(raw)) throw new Error(`must be one of ${ROLES.join(', ')}, got "${raw}"`)
  return raw
}

export const roleList: Parser<Role[]> = (raw) => list(raw).map(role)

/** Scopes an external token gets without claiming any: `none`, or a list without the privileged ones. */
export const unclaimedScopes: Parser<Scope[]> = (raw) => {
  if (raw.trim() === 'none') return []
  return list(raw).map((scope) => {
    if (!isScope(scope)) throw new Error(`must list scopes of ${SCOPES.join(', ')} (or be none), got "${scope}"`)
    if (PRIVILEGED_SCOPES.includes(scope)) throw new Error(`must not list ${scope}: a token gets ${PRIVILEGED_SCOPES.join(', ')} only by claiming them`)
    return scope
  })
}

/** `key=value` pairs separated by commas, values URL-encoded (the OTLP exporter's headers format). */
export const keyValueList: Parser<Record<string, string>> = (raw) =>
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

export const boolean: Parser<boolean> = (raw) => {
  if (/^(1|true|yes|on)$/i.test(raw)) return true
  if (/^(0|false|no|off)$/i.test(raw)) return false
  throw new Error(`must be true or false, got "${raw}"`)
}

/** PUBLIC_BASE_URL as given, or its own default, for the URLs derived from it. */
export const publicBase = (env: Env) => env.PUBLIC_BASE_URL?.replace(/\/+$/, '') || `http://localhost:${env.PORT ?? 3000}`

// The core's variables. They are declared apart from their slices because every slice, core or plugin,
// may read them (`CoreValues`), and a slice's type cannot refer to itself.

const serverVariables = {
  PORT: { doc: 'TCP port the server listens on', parse: integer(0, 65535), fallback: 3000 },
  HOST: { doc: 'Interface the server binds to', parse: text, fallback: '0.0.0.0' },
  PORT_SHARED: {
    doc: 'true lets several processes listen on PORT together (SO_REUSEPORT: the kernel spreads new connections over them), for several processes on one host with no proxy in front; they must share DATABASE_URL, REDIS_URL and DATA_DIR. Unset, a PORT already in use stops start-up with exit status 78',
    parse: boolean,
    fallback: false,
  },
  PUBLIC_BASE_URL: {
    doc: 'Public URL of the service, used in links it hands out',
    parse: url('http:', 'https:'),
    fallback: derived('http://localhost:$PORT', (env) => `http://localhost:${env.PORT ?? 3000}`),
  },
  BODY_LIMIT_BYTES: { doc: 'Largest request body accepted, in bytes', parse: integer(1024, 512 * 1024 * 1024), fallback: 1024 * 1024 },
  SHUTDOWN_TIMEOUT_MS: { doc: 'How long in-flight requests, chat answers and agent tasks may run after SIGTERM', parse: integer(0, 600_000), fallback: 10_000 },
  SHUTDOWN_DRAIN_DELAY_MS: {
    doc: "How long after SIGTERM the process still accepts requests, answering each with Connection: close, before it stops accepting; behind a proxy, longer than the proxy's upstream keepalive_timeout",
    parse: integer(0, 600_000),
    fallback: 0,
  },
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
} satisfies Variables

const storageVariables = {
  DATA_DIR: { doc: 'Directory for the SQLite database, generated secrets and indexes', parse: text, fallback: './data' },
  DATABASE_URL: { doc: 'PostgreSQL URL; unset means embedded SQLite in DATA_DIR', parse: url('postgres:', 'postgresql:') },
  REDIS_URL: { doc: 'Redis URL for shared rate limits, caches and stream logs; unset means in-process', parse: url('redis:', 'rediss:') },
  REDIS_RECONNECT_MAX_DELAY_MS: {
    doc: 'Longest pause between attempts to reconnect to Redis after it became unreachable (the pause doubles from 50 ms up to this); attempts never stop',
    parse: integer(50, 60_000),
    fallback: 2000,
  },
} satisfies Variables

const observabilityVariables = {
  LOG_LEVEL: { doc: 'debug, info, warn or error', parse: oneOf('debug', 'info', 'warn', 'error'), fallback: 'info' as const },
  LOG_FORMAT: { doc: 'json (one line per event) or pretty (for development)', parse: oneOf('json', 'pretty'), fallback: 'json' as const },
  LOG_CLIENT_ADDRESS: {
    doc: "when-used: a request's access line names the client address when the request needed it (sign-in, setup, anonymous rate limits, payments) and whenever it was refused or failed; always: every line does, at the cost of one getpeername system call per request",
    parse: oneOf('when-used', 'always'),
    fallback: 'when-used' as const,
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
  OTEL_EXPORTER_OTLP_HEADERS: {
    doc: 'Headers sent with every trace export, as comma-separated key=value pairs with URL-encoded values (api-key=abc); the OTLP exporter adds those of OTEL_EXPORTER_OTLP_TRACES_HEADERS, these winning',
    parse: keyValueList,
  },
  OTEL_SERVICE_NAME: { doc: 'service.name of the exported spans', parse: text, fallback: 'realtime-ai-backend' },
} satisfies Variables

const secretVariables = {
  JWT_SECRET: { doc: 'HS256 key for access tokens (generated into DATA_DIR when unset)', parse: secret },
  TOKEN_ENCRYPTION_KEY: {
    doc: 'AES-256 key for stored provider tokens: base64 of 32 bytes, or a passphrase (32+ characters) stretched with HKDF (generated when unset)',
    parse: secret,
  },
  TOKEN_ENCRYPTION_PREVIOUS_KEYS: {
    doc: 'Comma-separated earlier TOKEN_ENCRYPTION_KEY values, still accepted for decryption after a rotation',
    parse: list,
    fallback: [] as string[],
  },
} satisfies Variables

const accountVariables = {
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
  OIDC_DEFAULT_SCOPES: {
    doc: 'Scopes of an external token without a scope claim, always limited to what its role grants; none grants nothing. billing:manage, usage:read and audit:read cannot be listed: a token gets those only by claiming them',
    parse: unclaimedScopes,
    fallback: ['chat:write', 'integrations:read', 'integrations:write', 'search:read', 'agents:run'] as Scope[],
  },
  OIDC_DEFAULT_ROLE: {
    doc: 'Role of the user created by the first token of an external subject (admin users set-role changes it later)',
    parse: role,
    fallback: 'member' as Role,
  },
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
  LOGIN_MAX_FAILURES: { doc: 'Failed logins per account or address before it is locked', parse: integer(1, 1000), fallback: 5 },
  LOGIN_LOCK_SECONDS: { doc: 'How long a locked account or address waits', parse: integer(1, 86_400), fallback: 900 },
  PASSWORD_HASH_MEMORY_KIB: {
    doc: 'Memory of one argon2id password hash (KiB, two passes); not below 19456, the OWASP minimum for argon2id. Lower means cheaper sign-ins and cheaper guessing',
    parse: integer(19_456, 1_048_576),
    fallback: 65_536,
  },
  PASSWORD_RESET_TTL_SECONDS: {
    doc: 'How long a password reset link (admin users reset-password, POST /auth/password/forgot) works; it also stops working once used or when the password changes',
    parse: integer(60, 7 * 86_400),
    fallback: 3600,
  },
  PASSWORD_RESET_WEBHOOK_URL: {
    doc: 'Where POST /auth/password/forgot sends reset links: a JSON POST (type, email, resetUrl, expiresAt) to a mail relay of yours; unset, that route answers 503 not_configured and only operators make links',
    parse: url('http:', 'https:'),
  },
} satisfies Variables

const planVariables = {
  PLANS: { doc: 'Plan ids organisations can have; the first is the default for new ones', parse: list, fallback: ['free', 'pro', 'team', 'enterprise'] },
  ENTERPRISE_PLANS: { doc: 'Plans that unlock /api/usage and unlimited /api/search', parse: list, fallback: ['enterprise'] },
  RATE_LIMIT_CHAT_PER_MINUTE: { doc: 'Chat requests per user per minute', parse: integer(1, 1_000_000), fallback: 100 },
  RATE_LIMIT_INTEGRATIONS_PER_MINUTE: { doc: 'Integration requests per user per minute', parse: integer(1, 1_000_000), fallback: 50 },
  RATE_LIMIT_SEARCH_PER_MINUTE: { doc: 'Search requests per user per minute (enterprise plans: unlimited)', parse: integer(1, 1_000_000), fallback: 200 },
  RATE_LIMIT_ASSISTANT_PER_MINUTE: { doc: 'Documentation assistant questions per client address per minute', parse: integer(1, 1_000_000), fallback: 10 },
  RATE_LIMIT_BURST: {
    doc: 'Burst ceiling: requests per user across all endpoints within RATE_LIMIT_BURST_WINDOW_SECONDS',
    parse: integer(1, 1_000_000),
    fallback: 500,
  },
  RATE_LIMIT_BURST_WINDOW_SECONDS: { doc: 'Window of the burst ceiling', parse: integer(1, 3600), fallback: 10 },
  RATE_LIMIT_FAIL_CLOSED: {
    doc: 'Route classes (chat, integrations, search, assistant, default) refused when Redis is unreachable; others are allowed',
    parse: list,
    fallback: [] as string[],
  },
} satisfies Variables

const modelProviderVariables = {
  OPENAI_API_KEY: { doc: 'Key for the OpenAI-compatible model provider', parse: text },
  OPENAI_BASE_URL: { doc: 'Base URL of an OpenAI-compatible provider (OpenAI, vLLM, llama.cpp, Ollama)', parse: url('http:', 'https:') },
  MODEL_PROVIDERS: {
    doc: 'More model providers, a JSON array of {name, kind: openai-compatible|anthropic|google, baseUrl?, apiKeyEnv or apiKey, models: [...]}; their models are offered as <name>/<model> (docs/chat.mdx)',
    parse: parseModelProviders,
  },
} satisfies Variables

const sandboxVariables = {
  SANDBOX_TIMEOUT_MS: { doc: 'Wall-clock limit of one sandboxed code run; a run may ask for less, never more', parse: integer(100, 600_000), fallback: 10_000 },
  SANDBOX_MEMORY_MB: {
    doc: 'Memory ceiling of one sandboxed run (its whole process tree and the files it writes), in MiB',
    parse: integer(32, 65_536),
    fallback: 256,
  },
  SANDBOX_MAX_OUTPUT_BYTES: {
    doc: 'Output (stdout and stderr) kept from one sandboxed run; reaching it stops the run',
    parse: integer(1024, 64 * 1024 * 1024),
    fallback: 256 * 1024,
  },
  SANDBOX_MAX_PROCESSES: {
    doc: 'Tasks (processes and threads) one sandboxed run may have at once; Bun itself uses a handful',
    parse: integer(16, 4096),
    fallback: 64,
  },
} satisfies Variables

/** The core's values, which every slice's `build` may read besides its own. */
export type CoreValues = Values<
  typeof serverVariables &
    typeof storageVariables &
    typeof observabilityVariables &
    typeof secretVariables &
    typeof accountVariables &
    typeof planVariables &
    typeof modelProviderVariables &
    typeof sandboxVariables
>

/** How a slice's `build` reports: problems stop start-up (all listed together), unconfigured parts are logged. */
export interface Report {
  problem(text: string): void
  /** An optional part left without configuration, named with the variables that would enable it. */
  unconfigured(part: string): void
}

/** One slice of the configuration: its variables and its part of `Config`. */
export interface Settings<V extends Variables, R extends object> {
  /** Heading of the slice's table on docs/configuration.mdx. */
  readonly title: string
  readonly variables: V
  /**
   * Variables a library of the slice reads from the process environment itself, which the service passes through
   * unparsed: documented with the slice's own, by name, meaning and the library's default (JSON; none when unset).
   */
  readonly passThrough?: Readonly<Record<string, { doc: string; fallback?: unknown }>>
  /**
   * The slice's part of `Config`, from its own values and the core's; cross-checks go to `report`, never throw.
   * `env` is there for a setting that names other variables (MODEL_PROVIDERS' apiKeyEnv).
   */
  readonly build: (values: Values<V> & CoreValues, report: Report, env: Env) => R
}

/**
 * Declares a slice; the types of its values and of its part of `Config` follow from the declaration. A generic
 * parser among the variables needs its type argument written (`oneOf<Name>(...NAMES)`): beside `build`,
 * TypeScript would otherwise lose every variable's type.
 */
export function defineSettings<V extends Variables, R extends object>(settings: Settings<V, R>): Settings<V, R> {
  return settings
}

/** Settings of any slice, for lists of them. */
// biome-ignore lint/suspicious/noExplicitAny: a settings slice of any variables, as the composed configuration holds them
export type AnySettings = Settings<any, object>

/** A slice's part of `Config`, as its `build` returns it. */
export type SettingsOf<S extends AnySettings> = Frozen<ReturnType<S['build']>>

/** Read-only all the way down, as `loadSettings` freezes it. */
export type Frozen<T> = T extends (...args: never[]) => unknown
  ? T
  : T extends readonly (infer E)[]
    ? readonly Frozen<E>[]
    : T extends object
      ? { readonly [K in keyof T]: Frozen<T[K]> }
      : T

type Intersection<U> = (U extends unknown ? (u: U) => void : never) extends (i: infer I) => void ? I : never

const server = defineSettings({
  title: 'Server',
  variables: serverVariables,
  build: (v) => ({
    port: v.PORT,
    host: v.HOST,
    portShared: v.PORT_SHARED,
    publicBaseUrl: v.PUBLIC_BASE_URL,
    bodyLimitBytes: v.BODY_LIMIT_BYTES,
    shutdownTimeoutMs: v.SHUTDOWN_TIMEOUT_MS,
    shutdownDrainDelayMs: v.SHUTDOWN_DRAIN_DELAY_MS,
    trustedProxies: v.TRUSTED_PROXIES,
    /** CORS_ORIGINS: origins of the browser pages allowed to call the API and open agent connections, or `*`. */
    corsOrigins: v.CORS_ORIGINS,
  }),
})

const storage = defineSettings({
  title: 'Storage',
  variables: storageVariables,
  build: (v) => ({
    /** DATA_DIR made absolute; `loadSettings` creates it once the configuration is valid. */
    dataDir: resolve(v.DATA_DIR),
    databaseUrl: v.DATABASE_URL,
    redisUrl: v.REDIS_URL,
    redisReconnectMaxDelayMs: v.REDIS_RECONNECT_MAX_DELAY_MS,
  }),
})

// The OTLP exporter reads these from the environment itself (each also as OTEL_EXPORTER_OTLP_TRACES_<NAME>, which wins).
const otlpExporterVariables = {
  OTEL_EXPORTER_OTLP_TIMEOUT: {
    doc: 'Read by the OTLP exporter itself (passed through): milliseconds an export may take, retries included; OTEL_EXPORTER_OTLP_TRACES_TIMEOUT wins over it',
    fallback: 10000,
  },
  OTEL_EXPORTER_OTLP_COMPRESSION: {
    doc: 'Read by the OTLP exporter itself (passed through): gzip or none for the exported bodies; OTEL_EXPORTER_OTLP_TRACES_COMPRESSION wins over it',
    fallback: 'none',
  },
  OTEL_EXPORTER_OTLP_CERTIFICATE: {
    doc: "Read by the OTLP exporter itself (passed through): path of the PEM file of the CA certificates that verify the collector's TLS certificate; OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE wins over it",
  },
  OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE: {
    doc: 'Read by the OTLP exporter itself (passed through): path of the PEM file of the client certificate chain for mutual TLS with the collector; OTEL_EXPORTER_OTLP_TRACES_CLIENT_CERTIFICATE wins over it',
  },
  OTEL_EXPORTER_OTLP_CLIENT_KEY: {
    doc: "Read by the OTLP exporter itself (passed through): path of the PEM file of that certificate's private key; OTEL_EXPORTER_OTLP_TRACES_CLIENT_KEY wins over it",
  },
}

const observability = defineSettings({
  title: 'Logs, metrics and traces',
  variables: observabilityVariables,
  passThrough: otlpExporterVariables,
  build: (v, report) => {
    if (v.METRICS_PORT !== undefined && v.METRICS_PORT !== 0 && v.METRICS_PORT === v.PORT)
      report.problem(`METRICS_PORT must differ from PORT (both are ${v.PORT})`)
    if (v.OTEL_EXPORTER_OTLP_HEADERS && !v.OTEL_EXPORTER_OTLP_ENDPOINT)
      report.problem('OTEL_EXPORTER_OTLP_HEADERS is set but OTEL_EXPORTER_OTLP_ENDPOINT is not; set the collector to send them to')
    return {
      log: { level: v.LOG_LEVEL, format: v.LOG_FORMAT, clientAddress: v.LOG_CLIENT_ADDRESS },
      /** GET /metrics: on the main port behind `token`, and/or on a loopback listener at `port`; collected only when either is set. */
      metrics: { token: v.METRICS_TOKEN, port: v.METRICS_PORT },
      /** OpenTelemetry traces over OTLP/HTTP; undefined when OTEL_EXPORTER_OTLP_ENDPOINT is unset. */
      tracing: v.OTEL_EXPORTER_OTLP_ENDPOINT
        ? { endpoint: v.OTEL_EXPORTER_OTLP_ENDPOINT, headers: { ...v.OTEL_EXPORTER_OTLP_HEADERS }, serviceName: v.OTEL_SERVICE_NAME }
        : undefined,
    }
  },
})

// JWT_SECRET and TOKEN_ENCRYPTION_KEY are resolved by `loadSettings` once the configuration is valid: unset ones
// are generated into DATA_DIR.
const secrets = defineSettings({
  title: 'Secrets',
  variables: secretVariables,
  build: (v, report) => {
    v.TOKEN_ENCRYPTION_PREVIOUS_KEYS.forEach((key, i) => {
      if (key.length < 32) report.problem(`TOKEN_ENCRYPTION_PREVIOUS_KEYS entry ${i + 1} must be at least 32 characters`)
    })
    return {}
  },
})

const accounts = defineSettings({
  title: 'Accounts and tokens',
  variables: accountVariables,
  build: (v, report) => {
    if (v.OIDC_ISSUER && !v.OIDC_AUDIENCE) report.problem('OIDC_AUDIENCE must be set when OIDC_ISSUER is set')
    if (v.ADMIN_PASSWORD !== undefined && v.ADMIN_PASSWORD.length < 12) report.problem('ADMIN_PASSWORD must be at least 12 characters')
    if ((v.ADMIN_EMAIL === undefined) !== (v.ADMIN_PASSWORD === undefined)) report.problem('ADMIN_EMAIL and ADMIN_PASSWORD must be set together')
    if (!v.OIDC_ISSUER) report.unconfigured('external identity provider (OIDC_ISSUER)')
    return {
      tokens: {
        issuer: v.JWT_ISSUER,
        audience: v.JWT_AUDIENCE,
        accessTtlSeconds: v.ACCESS_TOKEN_TTL_SECONDS,
        refreshTtlSeconds: v.REFRESH_TOKEN_TTL_SECONDS,
      },
      oidc: v.OIDC_ISSUER
        ? {
            issuer: v.OIDC_ISSUER,
            audience: v.OIDC_AUDIENCE!,
            scopesClaim: v.OIDC_SCOPES_CLAIM,
            roleClaim: v.OIDC_ROLE_CLAIM,
            /** Scopes of a token without a scope claim, before its role limits them; never a privileged one. */
            defaultScopes: v.OIDC_DEFAULT_SCOPES,
            defaultRole: v.OIDC_DEFAULT_ROLE,
            claimableRoles: v.OIDC_CLAIMABLE_ROLES,
            orgClaim: v.OIDC_ORG_CLAIM,
            createOrgs: v.OIDC_CREATE_ORGS,
          }
        : undefined,
      admin: v.ADMIN_EMAIL && v.ADMIN_PASSWORD ? { email: v.ADMIN_EMAIL, password: v.ADMIN_PASSWORD } : undefined,
      allowRegistration: v.ALLOW_REGISTRATION,
      login: { maxFailures: v.LOGIN_MAX_FAILURES, lockSeconds: v.LOGIN_LOCK_SECONDS, passwordHashMemoryKib: v.PASSWORD_HASH_MEMORY_KIB },
      passwordReset: { ttlSeconds: v.PASSWORD_RESET_TTL_SECONDS, webhookUrl: v.PASSWORD_RESET_WEBHOOK_URL },
    }
  },
})

const plans = defineSettings({
  title: 'Plans and rate limits',
  variables: planVariables,
  build: (v, report) => {
    if (v.PLANS.length === 0) report.problem('PLANS must name at least one plan')
    for (const plan of v.ENTERPRISE_PLANS) if (!v.PLANS.includes(plan)) report.problem(`ENTERPRISE_PLANS names plan "${plan}", which is not in PLANS`)
    for (const c of v.RATE_LIMIT_FAIL_CLOSED)
      if (!(ROUTE_CLASSES as readonly string[]).includes(c))
        report.problem(`RATE_LIMIT_FAIL_CLOSED names "${c}"; known classes are ${ROUTE_CLASSES.join(', ')}`)
    return {
      plans: { ids: v.PLANS, enterprise: v.ENTERPRISE_PLANS },
      rateLimits: {
        chatPerMinute: v.RATE_LIMIT_CHAT_PER_MINUTE,
        integrationsPerMinute: v.RATE_LIMIT_INTEGRATIONS_PER_MINUTE,
        searchPerMinute: v.RATE_LIMIT_SEARCH_PER_MINUTE,
        assistantPerMinute: v.RATE_LIMIT_ASSISTANT_PER_MINUTE,
        burst: v.RATE_LIMIT_BURST,
        burstWindowSeconds: v.RATE_LIMIT_BURST_WINDOW_SECONDS,
        failClosed: v.RATE_LIMIT_FAIL_CLOSED,
      },
    }
  },
})

// The provider itself is built where it is used (chat, the documentation assistant, embeddings).
const modelProvider = defineSettings({
  title: 'Model provider',
  variables: modelProviderVariables,
  build: (v, report) => {
    if (!v.OPENAI_API_KEY && !v.OPENAI_BASE_URL && !v.MODEL_PROVIDERS?.length)
      report.unconfigured('model provider (OPENAI_API_KEY, OPENAI_BASE_URL or MODEL_PROVIDERS)')
    return {}
  },
})

const sandbox = defineSettings({
  title: 'Sandbox',
  variables: sandboxVariables,
  build: (v) => ({
    /** Limits of each sandboxed code run (see src/sandbox); requests may only lower them. */
    sandbox: {
      timeoutMs: v.SANDBOX_TIMEOUT_MS,
      memoryMb: v.SANDBOX_MEMORY_MB,
      maxOutputBytes: v.SANDBOX_MAX_OUTPUT_BYTES,
      maxProcesses: v.SANDBOX_MAX_PROCESSES,
    },
  }),
})

/** The core's slices, first on docs/configuration.mdx and first to report problems. */
export const CORE_SETTINGS = [server, storage, observability, secrets, accounts, plans, modelProvider, sandbox] as const

/** What `loadSettings` adds once the configuration is valid. */
interface Resolved {
  readonly secrets: { readonly jwtSecret: string; readonly tokenEncryptionKey: string; readonly previousTokenEncryptionKeys: readonly string[] }
  /** Secrets that were generated into DATA_DIR rather than given; production should set them. */
  readonly generatedSecrets: readonly string[]
  /** Optional parts with no configuration, for the start-up report. */
  readonly unconfigured: readonly string[]
}

/** The configuration of the core and of the plugin slices `S`. */
export type ConfigOf<S extends readonly AnySettings[]> = Frozen<Intersection<ReturnType<(typeof CORE_SETTINGS)[number]['build'] | S[number]['build']>>> &
  Resolved

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`)
    this.name = 'ConfigError'
  }
}

function allSettings(plugins: readonly AnySettings[]): AnySettings[] {
  const all: AnySettings[] = [...CORE_SETTINGS, ...plugins]
  const owner = new Map<string, string>()
  for (const slice of all)
    for (const name of Object.keys(slice.variables)) {
      if (owner.has(name)) throw new Error(`${name} is declared by both "${owner.get(name)}" and "${slice.title}"`)
      owner.set(name, slice.title)
    }
  return all
}

const fallbackOf = (spec: Variable<unknown>, env: Env) => (spec.fallback instanceof Derived ? spec.fallback.derive(env) : spec.fallback)

/**
 * Validates `env` (the process environment by default, which Bun fills from .env) against the core's slices and
 * `plugins`, then creates DATA_DIR and resolves generated secrets. Throws a `ConfigError` listing every problem.
 */
export function loadSettings<const S extends readonly AnySettings[]>(plugins: S, env: Env = process.env): ConfigOf<S> {
  const slices = allSettings(plugins)
  const problems: string[] = []
  const unconfigured: string[] = []
  const values: Record<string, unknown> = {}
  for (const slice of slices)
    for (const [name, spec] of Object.entries(slice.variables) as [string, Variable<unknown>][]) {
      const raw = env[name]
      try {
        values[name] = raw === undefined || raw === '' ? fallbackOf(spec, env) : spec.parse(raw)
      } catch (err) {
        problems.push(`${name} ${(err as Error).message} (${spec.doc})`)
        // The default stands in, so the slices' own checks still run and report too.
        values[name] = fallbackOf(spec, env)
      }
    }
  const report: Report = { problem: (text) => problems.push(text), unconfigured: (part) => unconfigured.push(part) }
  const parts = slices.map((slice) => slice.build(values as CoreValues, report, env))
  if (problems.length > 0) throw new ConfigError(problems)

  const core = values as CoreValues
  const dataDir = resolve(core.DATA_DIR)
  const { secrets, generated } = usingDataDir(dataDir, () => {
    mkdirSync(dataDir, { recursive: true })
    // The database and the generated secrets are written here; a directory the service cannot write fails now, not at the first write.
    accessSync(dataDir, constants.W_OK | constants.X_OK)
    return resolveSecrets(dataDir, core)
  })
  const resolved: Resolved = {
    secrets: { ...secrets, previousTokenEncryptionKeys: core.TOKEN_ENCRYPTION_PREVIOUS_KEYS },
    generatedSecrets: generated,
    unconfigured,
  }
  return deepFreeze(Object.assign({}, ...parts, resolved))
}

// What an operator can do about each file system error DATA_DIR may meet.
const DATA_DIR_REASONS: Record<string, string> = {
  EACCES: 'permission denied',
  EPERM: 'permission denied',
  EROFS: 'the file system is read-only',
  ENOTDIR: 'part of the path is a file, not a directory',
  ENOSPC: 'no space is left on the device',
  EDQUOT: 'the disk quota is used up',
}

/** Runs `work` on DATA_DIR; a file system error becomes a `ConfigError` naming the variable, the path and the fix. */
function usingDataDir<T>(dataDir: string, work: () => T): T {
  try {
    return work()
  } catch (err) {
    const code = (err as { code?: unknown }).code
    if (typeof code !== 'string' || !/^E[A-Z]+$/.test(code)) throw err
    const reason = DATA_DIR_REASONS[code] ?? (err as Error).message
    throw new ConfigError([
      `DATA_DIR ${dataDir} cannot be used: ${reason} (${code}); create it writable by the user the service runs as, or set DATA_DIR to a directory that user can write`,
    ])
  }
}

/**
 * Where the service keeps its data (DATA_DIR, DATABASE_URL), read without creating DATA_DIR or its secrets:
 * for operator commands that must find DATA_DIR as it is (a restore wants it empty).
 */
export function loadStorageLocation(env: Env = process.env): { dataDir: string; databaseUrl?: string } {
  const problems: string[] = []
  const values: Record<string, unknown> = {}
  for (const [name, spec] of Object.entries(storageVariables) as [string, Variable<unknown>][]) {
    const raw = env[name]
    try {
      values[name] = raw === undefined || raw === '' ? fallbackOf(spec, env) : spec.parse(raw)
    } catch (err) {
      problems.push(`${name} ${(err as Error).message} (${spec.doc})`)
    }
  }
  if (problems.length > 0) throw new ConfigError(problems)
  return { dataDir: resolve(values.DATA_DIR as string), databaseUrl: values.DATABASE_URL as string | undefined }
}

/** Freezes plain objects and arrays all the way down; other objects (none today) are left as they are. */
function deepFreeze<T>(value: T): T {
  if (Array.isArray(value) || (value !== null && typeof value === 'object' && Object.getPrototypeOf(value) === Object.prototype)) {
    for (const inner of Object.values(value as object)) deepFreeze(inner)
    Object.freeze(value)
  }
  return value
}

/** One variable as docs/configuration.mdx and `--help` describe it. */
export interface VariableDescription {
  /** Title of the slice that declares it. */
  section: string
  name: string
  doc: string
  /** The default as JSON, `derived` when computed from other variables, `(unset)` when there is none. */
  fallback: string
  /** How the docs write the default of a derived one (`http://localhost:$PORT`). */
  shown?: string
}

/** Every variable of the core's slices and of `plugins`, in declaration order. */
export function describeSettings(plugins: readonly AnySettings[]): VariableDescription[] {
  return allSettings(plugins).flatMap((slice) => [
    ...Object.entries(slice.variables as Variables).map(([name, v]) => {
      const f = v.fallback
      const fallback = f instanceof Derived ? 'derived' : f === undefined ? '(unset)' : JSON.stringify(f)
      return { section: slice.title, name, doc: v.doc, fallback, ...(f instanceof Derived && { shown: f.shown }) }
    }),
    ...Object.entries(slice.passThrough ?? {}).map(([name, v]) => ({
      section: slice.title,
      name,
      doc: v.doc,
      fallback: v.fallback === undefined ? '(unset)' : JSON.stringify(v.fallback),
    })),
  ])
}

const SECRETS_FILE = 'secrets.json'

/** Reads or creates DATA_DIR/secrets.json (mode 0600) for secrets the environment does not give. */
function resolveSecrets(dataDir: string, values: CoreValues): { secrets: { jwtSecret: string; tokenEncryptionKey: string }; generated: string[] } {
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
