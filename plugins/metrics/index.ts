/**
 * GET /metrics in the Prometheus text format, never open to anyone who can reach the service:
 * - on the main port only when METRICS_TOKEN is set, and only to `Authorization: Bearer <METRICS_TOKEN>`;
 * - on a listener of its own bound to 127.0.0.1 when METRICS_PORT is set (for a scraper on the same machine),
 *   which also asks for the token when one is set.
 * Without either, /metrics is not routed (404) and nothing is collected.
 */
import { Elysia } from 'elysia'
import { openApiExtension } from '../../src/auth/plugin.ts'
import { bearerFrom } from '../../src/auth/bearer.ts'
import { AppError } from '../../src/errors.ts'
import type { Logger } from '../../src/log.ts'
import { problem } from '../../src/schemas.ts'
import type { ServiceMetrics } from '../../src/observability/metrics.ts'
import { guard } from '../../src/guards.ts'

export interface MetricsOptions {
  /** Undefined when neither METRICS_TOKEN nor METRICS_PORT is set: nothing is collected. */
  metrics: ServiceMetrics | undefined
  /** METRICS_TOKEN; unset, the main port does not route /metrics at all. */
  token: string | undefined
}

const digest = (value: string) => new Bun.CryptoHasher('sha256').update(value).digest()

/** Whether the request carries the token, compared in constant time. */
function tokenChecker(token: string): (request: Request) => boolean {
  const expected = digest(token)
  return (request) => {
    const given = bearerFrom(request.headers)
    return given !== undefined && given.subprotocol === undefined && crypto.timingSafeEqual(digest(given.token), expected)
  }
}

const refusal = () =>
  new AppError('unauthenticated', 'GET /metrics needs Authorization: Bearer <METRICS_TOKEN>', { headers: { 'www-authenticate': 'Bearer realm="metrics"' } })

async function exposition(metrics: ServiceMetrics): Promise<Response> {
  const { body, contentType } = await metrics.render()
  return new Response(body, { headers: { 'content-type': contentType, 'cache-control': 'no-store' } })
}

export function metricsPlugin(options: MetricsOptions) {
  const { metrics, token } = options
  const plugin = new Elysia({ name: 'metrics', seed: token !== undefined })
  if (!metrics || token === undefined) return plugin
  const authorised = tokenChecker(token)
  const requireToken = guard(async ({ request }: { request: Request }) => {
    if (!authorised(request)) throw refusal()
  })
  return plugin.get('/metrics', () => exposition(metrics), {
    transform: requireToken.early,
    beforeHandle: requireToken,
    response: { 401: problem },
    detail: {
      tags: ['operations'],
      summary: 'Prometheus metrics of this process (text exposition format 0.0.4)',
      ...openApiExtension({
        security: [{ bearer: [] }],
        description: 'Requires `Authorization: Bearer <METRICS_TOKEN>`; routed only when METRICS_TOKEN is set.',
      }),
      responses: {
        200: { description: 'Prometheus text exposition format 0.0.4', content: { 'text/plain; version=0.0.4': { schema: { type: 'string' } } } },
      },
    },
  })
}

export interface MetricsListener {
  readonly url: string
  stop(): Promise<void>
}

/** The loopback-only listener of METRICS_PORT: GET /metrics and nothing else. */
export function startMetricsListener(options: { metrics: ServiceMetrics; token: string | undefined; port: number; logger: Logger }): MetricsListener {
  const authorised = options.token === undefined ? () => true : tokenChecker(options.token)
  const server = Bun.serve({
    hostname: '127.0.0.1',
    port: options.port,
    async fetch(request) {
      const { pathname } = new URL(request.url)
      if (pathname !== '/metrics') return new Response('Not found: this listener serves GET /metrics only\n', { status: 404 })
      if (request.method !== 'GET' && request.method !== 'HEAD') return new Response('Method not allowed\n', { status: 405, headers: { allow: 'GET, HEAD' } })
      if (!authorised(request))
        return new Response('GET /metrics needs Authorization: Bearer <METRICS_TOKEN>\n', {
          status: 401,
          headers: { 'www-authenticate': 'Bearer realm="metrics"' },
        })
      return exposition(options.metrics)
    },
  })
  const url = `http://127.0.0.1:${server.port}/metrics`
  options.logger.info('metrics listening', { url })
  return { url, stop: () => server.stop(true) }
}
