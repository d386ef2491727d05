/**
 * Verified payment events, kept durably before they are acknowledged and applied from here.
 * The event id is the primary key (a redelivery is recognised), and an event is claimed by the
 * UPDATE that opens its apply transaction: on PostgreSQL that row stays locked until commit, so a
 * concurrent claim (another request, another process) waits and then finds it applied; SQLite
 * transactions are serial. A crash rolls the claim back and leaves the event pending.
 */
import type { SQL } from 'bun'
import { toNumber } from '../../src/storage/database.ts'
import type { VerifiedEvent } from './signature.ts'

export interface ReceiptMeta {
  requestId: string | null
  clientIp: string | null
}

export interface ClaimedEvent {
  id: string
  type: string
  created: number
  object: Record<string, unknown>
  receipt: ReceiptMeta
}

export type EventResult = 'applied' | 'stale' | 'ignored'

/** Stores the event unless its id is known; true when this call stored it. */
export async function storeEvent(sql: SQL, event: VerifiedEvent, receipt: ReceiptMeta, now: number): Promise<boolean> {
  const rows = await sql`
    INSERT INTO payment_events (id, type, created, payload, received_at, request_id, client_ip)
    VALUES (${event.id}, ${event.type}, ${event.created}, ${event.raw}, ${now}, ${receipt.requestId}, ${receipt.clientIp})
    ON CONFLICT (id) DO NOTHING
    RETURNING id`
  return rows.length > 0
}

/** Claims an event not applied yet, inside the caller's transaction; undefined when it is applied already. */
export async function claimEvent(tx: SQL, id: string): Promise<ClaimedEvent | undefined> {
  const [row] = await tx`
    UPDATE payment_events SET attempts = attempts + 1 WHERE id = ${id} AND processed_at IS NULL
    RETURNING id, type, created, payload, request_id, client_ip`
  if (!row) return undefined
  const payload = JSON.parse(row.payload) as { data?: { object?: Record<string, unknown> } }
  return {
    id: row.id,
    type: row.type,
    created: toNumber(row.created),
    object: payload.data?.object ?? {},
    receipt: { requestId: row.request_id ?? null, clientIp: row.client_ip ?? null },
  }
}

export async function markProcessed(tx: SQL, id: string, result: EventResult, detail: string | null, now: number): Promise<void> {
  await tx`UPDATE payment_events SET processed_at = ${now}, result = ${detail ? `${result}: ${detail}` : result}, last_error = NULL WHERE id = ${id}`
}

/** Counts a failed attempt outside the rolled-back transaction, so a poisonous event stops being retried. */
export async function recordFailure(sql: SQL, id: string, error: unknown): Promise<void> {
  const message = error instanceof Error ? error.message : String(error)
  await sql`UPDATE payment_events SET attempts = attempts + 1, last_error = ${message.slice(0, 1000)} WHERE id = ${id} AND processed_at IS NULL`
}

/** Events stored but not applied, oldest first, that have not used up their attempts. */
export async function pendingEvents(sql: SQL, options: { maxAttempts: number; limit: number }): Promise<string[]> {
  const rows = await sql`
    SELECT id FROM payment_events WHERE processed_at IS NULL AND attempts < ${options.maxAttempts}
    ORDER BY received_at, id LIMIT ${options.limit}`
  return rows.map((r: { id: string }) => r.id)
}
