import { Elysia } from 'elysia'
import type { Lifecycle } from '../../src/lifecycle.ts'
import type { Database } from '../../src/storage/database.ts'
import { liveness, readiness } from './schemas.ts'

export interface HealthOptions {
  db: Database
  lifecycle: Lifecycle
  /** Further readiness checks by name (for example `redis`); each throws when unhealthy. */
  checks?: Record<string, () => Promise<unknown>>
}

/** GET /health answers while the process runs; GET /ready only while it can serve traffic. */
export function healthPlugin(options: HealthOptions) {
  const checks: Record<string, () => Promise<unknown>> = { database: () => options.db.ping(), ...options.checks }
  return new Elysia({ name: 'health' })
    .get('/health', () => ({ status: 'ok' as const, uptimeSeconds: Math.round((Date.now() - options.lifecycle.startedAt) / 1000) }), {
      response: { 200: liveness },
      detail: { tags: ['operations'], summary: 'Liveness: the process is up' },
    })
    .get(
      '/ready',
      async ({ status }) => {
        const results: Record<string, string> = {}
        if (options.lifecycle.draining) results.lifecycle = 'draining'
        await Promise.all(
          Object.entries(checks).map(async ([name, check]) => {
            try {
              await Promise.race([check(), Bun.sleep(2000).then(() => Promise.reject(new Error('timed out after 2 s')))])
              results[name] = 'ok'
            } catch (err) {
              results[name] = (err as Error).message || 'failed'
            }
          }),
        )
        const ready = Object.values(results).every((r) => r === 'ok')
        return status(ready ? 200 : 503, { status: ready ? ('ready' as const) : ('not_ready' as const), checks: results })
      },
      {
        response: { 200: readiness, 503: readiness },
        detail: { tags: ['operations'], summary: 'Readiness: storage answers and the process is not draining' },
      },
    )
}
