/**
 * Start-up checks of the servers the configuration points at (DATABASE_URL, REDIS_URL). One that cannot be used
 * stops start-up with an `UnreachableError` naming the variable, the host and port and why, never the URL's
 * credentials; the entry point exits 78 (EX_CONFIG) for it, as for any other configuration problem.
 */
import { createRedisManager } from './redis.ts'

export class UnreachableError extends Error {
  constructor(
    readonly variable: string,
    /** `host:port`, without credentials. */
    readonly address: string,
    readonly reason: string,
    server: string,
  ) {
    super(`${variable}: cannot use ${server} at ${address}: ${reason}. Check ${variable} and that the server is up and reachable from here.`)
    this.name = 'UnreachableError'
  }
}

const DEFAULT_PORTS: Record<string, number> = { 'postgres:': 5432, 'postgresql:': 5432, 'redis:': 6379, 'rediss:': 6379 }

/** `host:port` of a server URL, the protocol's default port filled in; nothing else of the URL. */
export function serverAddress(url: string): string {
  const parsed = new URL(url)
  return `${parsed.hostname}:${parsed.port || DEFAULT_PORTS[parsed.protocol] || '?'}`
}

// Bun's client errors say little ("Failed to connect"); these say what an operator can check.
const REASONS: Record<string, string> = {
  ERR_POSTGRES_CONNECTION_REFUSED: 'the connection was refused',
  ERR_POSTGRES_CONNECTION_TIMEOUT: 'it did not answer in time',
  ERR_POSTGRES_CONNECTION_CLOSED: 'it closed the connection',
  ERR_POSTGRES_TLS_NOT_AVAILABLE: 'it does not offer TLS, which the URL asks for',
  ERR_REDIS_CONNECTION_CLOSED: 'the connection was refused or closed',
  ERR_REDIS_CONNECTION_TIMEOUT: 'it did not answer in time',
}

async function reasonOf(url: string, error: unknown): Promise<string> {
  const parsed = new URL(url)
  const { code, message } = (error ?? {}) as { code?: string; message?: string }
  // A refusal from a name that does not resolve is a typo or a missing DNS entry, not a server that is down.
  if (code && /CONNECTION_(REFUSED|CLOSED)$/.test(code)) {
    // Only on this failure path: a start that reaches its servers never loads node:dns.
    const { lookup } = await import('node:dns/promises')
    const resolves = await lookup(parsed.hostname.replace(/^\[|\]$/g, '')).then(
      () => true,
      () => false,
    )
    if (!resolves) return `the host name ${parsed.hostname} does not resolve`
  }
  let reason = (code && REASONS[code]) || message || String(error)
  // A server error could quote part of the URL; the credentials never leave this function.
  for (const secret of [parsed.password, decodeURIComponent(parsed.password), parsed.username && `${parsed.username}:${parsed.password}`])
    if (secret) reason = reason.replaceAll(secret, '***')
  return reason
}

/** Runs `attempt` (the first use of the server); a failure becomes an `UnreachableError`. */
export async function reach<T>(variable: string, url: string, server: string, attempt: () => Promise<T>): Promise<T> {
  try {
    return await attempt()
  } catch (err) {
    throw new UnreachableError(variable, serverAddress(url), await reasonOf(url, err), server)
  }
}

/** Resolves once Redis at `url` answers PING. */
export async function pingRedis(url: string, timeoutMs = 5000): Promise<void> {
  const probe = createRedisManager({ url, commandTimeoutMs: timeoutMs })
  try {
    // The client's own error says what went wrong; the manager's wrapper only says that it did.
    await probe.ping().catch((err) => Promise.reject(err instanceof Error && err.cause ? err.cause : err))
  } finally {
    probe.close()
  }
}
