import { Elysia } from 'elysia'
import { accessControl, type AccessControlOptions } from '../../src/auth/plugin.ts'
import { AppError } from '../../src/errors.ts'
import { problem } from '../../src/schemas.ts'
import { rateLimiting, type RateLimitingOptions } from '../../src/rate-limit/plugin.ts'
import type { AuditEntry } from './audit-log.ts'
import { auditPage, auditQuery, auditVerification } from './schemas.ts'
import type { PaymentsService } from './service.ts'

const invalid = (field: string, message: string) => new AppError('validation_failed', `${field}: ${message}`, { errors: [{ field, message }] })

// Opaque to clients: the sequence number of the last entry they saw.
const encodeCursor = (seq: number) => Buffer.from(`seq:${seq}`).toString('base64url')
function decodeCursor(cursor: string): number {
  const match = /^seq:(\d{1,15})$/.exec(Buffer.from(cursor, 'base64url').toString('utf8'))
  if (!match) throw invalid('cursor', 'is not a cursor this service handed out')
  return Number(match[1])
}

const entryView = (e: AuditEntry) => ({
  seq: e.seq,
  at: new Date(e.at).toISOString(),
  organizationId: e.orgId,
  actor: e.actor,
  action: e.action,
  requestId: e.requestId,
  clientIp: e.clientIp,
  details: e.details,
  prevHash: e.prevHash,
  hash: e.hash,
})

/** GET /api/audit-logs and GET /api/audit-logs/verify, for owners and admins (scope audit:read). */
export function auditRoutes(options: AccessControlOptions & { payments: PaymentsService; rateLimits: RateLimitingOptions }) {
  const { payments } = options
  return new Elysia({ name: 'audit-logs', detail: { tags: ['audit'] } })
    .use(accessControl(options))
    .use(rateLimiting(options.rateLimits))
    .get(
      '/api/audit-logs',
      async ({ query, principal }) => {
        const from = query.from === undefined ? undefined : Date.parse(query.from)
        const to = query.to === undefined ? undefined : Date.parse(query.to)
        if (from !== undefined && to !== undefined && !(from < to)) throw invalid('from', 'must be before to')
        const limit = query.limit ?? 50
        const page = await payments.listAudit({
          orgId: principal.orgId,
          action: query.action,
          actor: query.actor,
          from,
          to,
          beforeSeq: query.cursor === undefined ? undefined : decodeCursor(query.cursor),
          limit,
        })
        return { entries: page.entries.map(entryView), nextCursor: page.more ? encodeCursor(page.entries.at(-1)!.seq) : null }
      },
      {
        query: auditQuery,
        auth: 'audit:read',
        rateLimit: 'default',
        response: { 200: auditPage, 401: problem, 403: problem, 422: problem, 429: problem },
        detail: {
          summary: "The organisation's audit log, newest first, in pages, filtered by action, actor and time",
          description:
            'Billing actions: checkout.created, billing_portal.opened, payment_webhook.received, payment_event.applied (with the state before and after) and plan.changed. ' +
            'Each entry carries the hash that chains it to the one before (see /api/audit-logs/verify).',
        },
      },
    )
    .get('/api/audit-logs/verify', () => payments.verifyAudit(), {
      auth: 'audit:read',
      rateLimit: 'default',
      response: { 200: auditVerification, 401: problem, 403: problem, 429: problem },
      detail: {
        summary: 'Recompute the hash chain of the whole audit log and report the first entry that does not hold',
        description: 'Also available to operators as `npm run admin -- audit verify`.',
      },
    })
}
