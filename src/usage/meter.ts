import type { Logger } from '../log.ts'
import type { Database, SqlRow } from '../storage/database.ts'
import { toNumber } from '../storage/database.ts'

export const USAGE_KINDS = ['chat_request', 'chat_tokens_in', 'chat_tokens_out', 'search', 'web_search', 'import', 'agent_run', 'publish'] as const
export type UsageKind = (typeof USAGE_KINDS)[number]

export interface UsageEvent {
  orgId: string
  userId: string
  kind: UsageKind
  /** Model name for token kinds. */
  model?: string
  /** Default 1. */
  quantity?: number
}

export interface UsageMeterOptions {
  db: Database
  logger: Logger
  /** How often buffered events are written. Default 1000 ms. */
  flushIntervalMs?: number
  /** Distinct buffered rows that force an early write. Default 500. */
  maxBuffered?: number
  now?: () => number
}

interface Pending {
  orgId: string
  userId: string
  kind: UsageKind
  model: string | null
  quantity: number
  at: number
}

/**
 * Records metered actions cheaply: events are summed in memory per (organisation, user,
 * kind, model) and written as one multi-row insert per interval, not one write per token.
 */
export function createUsageMeter(options: UsageMeterOptions) {
  const { db, logger } = options
  const now = options.now ?? Date.now
  const maxBuffered = options.maxBuffered ?? 500
  let buffer = new Map<string, Pending>()
  let writing: Promise<void> = Promise.resolve()

  const flush = (): Promise<void> => {
    if (buffer.size === 0) return writing
    const rows = [...buffer.values()].map((p) => ({
      id: Bun.randomUUIDv7(),
      org_id: p.orgId,
      user_id: p.userId,
      kind: p.kind,
      model: p.model,
      quantity: p.quantity,
      at: p.at,
    }))
    buffer = new Map()
    writing = writing
      .then(() => db.sql`INSERT INTO usage_events ${db.sql(rows)}`)
      .then(() => undefined)
      .catch((err) => logger.error('usage write failed', { err, rows: rows.length }))
    return writing
  }

  const timer = setInterval(() => void flush(), options.flushIntervalMs ?? 1000)
  timer.unref?.()

  return {
    record(event: UsageEvent): void {
      const quantity = event.quantity ?? 1
      if (!(quantity > 0)) return
      const model = event.model ?? null
      const key = `${event.orgId}\u0000${event.userId}\u0000${event.kind}\u0000${model ?? ''}`
      const pending = buffer.get(key)
      if (pending) pending.quantity += quantity
      else buffer.set(key, { orgId: event.orgId, userId: event.userId, kind: event.kind, model, quantity, at: now() })
      if (buffer.size >= maxBuffered) void flush()
    },
    flush,
    async close() {
      clearInterval(timer)
      await flush()
    },
  }
}

export type UsageMeter = ReturnType<typeof createUsageMeter>

export interface UsageQuery {
  orgId: string
  from: number
  to: number
  bucket: 'hour' | 'day'
  userId?: string
  kind?: UsageKind
}

const BUCKET_MS = { hour: 3_600_000, day: 86_400_000 }

/** Totals per kind and model, and a time series per bucket and kind, for one organisation. */
export async function queryUsage(db: Database, q: UsageQuery) {
  const size = BUCKET_MS[q.bucket]
  const user = q.userId ?? null
  const kind = q.kind ?? null
  const totals = await db.sql`
    SELECT kind, model, SUM(quantity) AS quantity, COUNT(*) AS batches FROM usage_events
    WHERE org_id = ${q.orgId} AND at >= ${q.from} AND at < ${q.to}
      AND (CAST(${user} AS TEXT) IS NULL OR user_id = ${user})
      AND (CAST(${kind} AS TEXT) IS NULL OR kind = ${kind})
    GROUP BY kind, model ORDER BY kind, model`
  const series = await db.sql`
    SELECT (at - (at % ${size})) AS bucket_start, kind, SUM(quantity) AS quantity FROM usage_events
    WHERE org_id = ${q.orgId} AND at >= ${q.from} AND at < ${q.to}
      AND (CAST(${user} AS TEXT) IS NULL OR user_id = ${user})
      AND (CAST(${kind} AS TEXT) IS NULL OR kind = ${kind})
    GROUP BY bucket_start, kind ORDER BY bucket_start, kind`
  return {
    totals: totals.map((r: SqlRow) => ({ kind: r.kind as UsageKind, model: r.model ?? null, quantity: toNumber(r.quantity) })),
    series: series.map((r: SqlRow) => ({
      bucketStart: new Date(toNumber(r.bucket_start)).toISOString(),
      kind: r.kind as UsageKind,
      quantity: toNumber(r.quantity),
    })),
  }
}
