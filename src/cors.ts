/**
 * Cross-origin access for browser front ends served from other origins (CORS_ORIGINS), with Elysia's own
 * `@elysiajs/cors`. Callers authenticate with bearer tokens, never cookies, so credentials are never allowed
 * (no `Access-Control-Allow-Credentials`) and `*` is safe to list. With no origin listed the plugin is not
 * installed at all: no CORS header is sent and `OPTIONS` answers 405 like any unrouted method.
 */
import { cors } from '@elysiajs/cors'
import { Elysia } from 'elysia'

/** Response headers a cross-origin page may read: what front ends and the AI SDK look at. */
export const EXPOSED_HEADERS = [
  'x-request-id',
  'ratelimit',
  'ratelimit-policy',
  'retry-after',
  'x-vercel-ai-ui-message-stream',
  'x-chat-id',
  'x-generation-id',
  'www-authenticate',
] as const

/** Request headers a page may send: any (Content-Type, Last-Event-ID, its own), and Authorization. */
export const ALLOWED_HEADERS = '*, authorization'

/** How long a browser may reuse a preflight answer, in seconds (Chromium caps it at 7200). */
export const PREFLIGHT_MAX_AGE_SECONDS = 600

/** Origins whose pages may call the API and open agent connections. */
export interface OriginPolicy {
  /** CORS_ORIGINS: serialized origins (`https://app.example.com`), or `*` for any; empty allows none. */
  readonly origins: readonly string[]
  /** PUBLIC_BASE_URL: pages the service serves itself are always allowed to open agent connections. */
  readonly publicBaseUrl: string
}

/** Whether an API response may be shared with a page on `origin`. */
function listed(policy: OriginPolicy, origin: string | null): boolean {
  return origin !== null && (policy.origins.includes('*') || policy.origins.includes(origin))
}

/**
 * Whether a WebSocket upgrade may proceed, against cross-site WebSocket hijacking: no Origin (not a
 * browser), a listed origin, PUBLIC_BASE_URL's origin, or a page on the very host it connects to (a page
 * the service serves itself, reached by another name such as 127.0.0.1).
 */
export function upgradeOriginAllowed(policy: OriginPolicy, headers: Headers): boolean {
  const origin = headers.get('origin')
  if (origin === null || listed(policy, origin) || origin === new URL(policy.publicBaseUrl).origin) return true
  try {
    return new URL(origin).host === headers.get('host')?.toLowerCase()
  } catch {
    return false // `null` (a sandboxed page, a file) or anything else that is not an origin
  }
}

/**
 * Answers preflights on every path before routing (so before any guard), and adds the CORS headers to
 * every response, problem answers included, for a listed Origin.
 */
export function corsPlugin(policy: OriginPolicy) {
  // The plugin's catch-all OPTIONS routes are never reached (preflights are answered before routing): not documented.
  const plugin = new Elysia({ name: 'cors', seed: policy.origins, detail: { hide: true } })
  if (policy.origins.length === 0) return plugin
  return plugin.use(
    cors({
      origin: (request) => listed(policy, request.headers.get('origin')),
      credentials: false,
      methods: ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'],
      // Any request header; the wildcard (valid without credentials) never covers Authorization, so it is named.
      allowedHeaders: ALLOWED_HEADERS,
      exposeHeaders: [...EXPOSED_HEADERS],
      maxAge: PREFLIGHT_MAX_AGE_SECONDS,
    }),
  )
}
