import { Elysia } from 'elysia'
import type { AccessService } from '../../src/auth/access-service.ts'
import type { PlanDirectory } from '../../src/auth/plans.ts'
import { accessControl } from '../../src/auth/plugin.ts'
import { AppError } from '../../src/errors.ts'
import { problem } from '../../src/schemas.ts'
import { rateLimiting, type RateLimitingOptions } from '../../src/rate-limit/plugin.ts'
import type { Database } from '../../src/storage/database.ts'
import { queryUsage, type UsageMeter } from '../../src/usage/meter.ts'
import { usageQuery, usageReport } from './schemas.ts'

export interface UsagePluginOptions {
  db: Database
  meter: UsageMeter
  access: AccessService
  plans: PlanDirectory
  rateLimits: RateLimitingOptions
}

const MAX_SPAN_MS = 366 * 86_400_000

/** GET /api/usage: metered totals and a time series for the caller's organisation (enterprise plans). */
export function usagePlugin(options: UsagePluginOptions) {
  return new Elysia({ name: 'usage', detail: { tags: ['usage'] } })
    .use(accessControl(options))
    .use(rateLimiting(options.rateLimits))
    .get(
      '/api/usage',
      async ({ query, principal }) => {
        const to = query.to ? Date.parse(query.to) : Date.now()
        const from = query.from ? Date.parse(query.from) : to - 30 * 86_400_000
        if (!(from < to)) throw new AppError('validation_failed', 'from must be before to', { errors: [{ field: 'from', message: 'must be before to' }] })
        if (to - from > MAX_SPAN_MS)
          throw new AppError('validation_failed', 'The period may span at most 366 days', {
            errors: [{ field: 'from', message: 'period longer than 366 days' }],
          })
        // Events still in the write buffer belong in the answer.
        await options.meter.flush()
        const bucket = query.bucket ?? 'day'
        const report = await queryUsage(options.db, { orgId: principal.orgId, from, to, bucket, userId: query.userId, kind: query.kind })
        return {
          organizationId: principal.orgId,
          period: { from: new Date(from).toISOString(), to: new Date(to).toISOString(), bucket },
          ...report,
        }
      },
      {
        query: usageQuery,
        auth: 'usage:read',
        plan: 'enterprise',
        rateLimit: 'default',
        response: { 200: usageReport, 401: problem, 403: problem, 422: problem, 429: problem },
        detail: { summary: 'Usage of the organisation: totals by kind and model, and a time series' },
      },
    )
}
