/**
 * The audit log: append-only rows chained by SHA-256. Each row's hash covers the previous row's hash
 * and the row's own canonical content, so altering, removing or inserting a row breaks every later
 * link. Appends first bump the single chain-head row, which holds a row lock on PostgreSQL (and the
 * write lock on SQLite) until the transaction ends: concurrent appends queue and never fork the chain.
 */
import type { SQL } from 'bun'
import type { Database, SqlRow } from '../../src/storage/database.ts'
import { toNumber } from '../../src/storage/database.ts'

export const GENESIS_HASH = '0'.repeat(64)

/** `user:<id>`, `provider:stripe` or `system`. */
export type Actor = `user:${string}` | `provider:${string}` | 'system'

export interface AuditInput {
  orgId: string | null
  actor: Actor
  action: string
  requestId?: string | null
  clientIp?: string | null
  details: Record<string, unknown>
}

export interface AuditEntry {
  seq: number
  at: number
  orgId: string | null
  actor: string
  action: string
  requestId: string | null
  clientIp: string | null
  details: Record<string, unknown>
  prevHash: string
  hash: string
}

/** JSON with object keys sorted at every level, so equal content always hashes the same. */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value ?? null)
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, v]) => v !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`
}

/** What the hash covers: an entry's fields, with its details as the stored column text. */
type StoredFields = Omit<AuditEntry, 'details' | 'prevHash' | 'hash'> & { detailsText: string }

export function entryHash(prevHash: string, row: StoredFields): string {
  const head = canonicalJson([row.seq, row.at, row.orgId, row.actor, row.action, row.requestId, row.clientIp])
  return new Bun.CryptoHasher('sha256').update(`${prevHash}\n${head}\n${row.detailsText}`).digest('hex')
}

/** Appends one entry. Must run inside a transaction (`db.sql.begin`), which keeps the head locked until commit. */
export async function appendAudit(tx: SQL, input: AuditInput, at: number): Promise<AuditEntry> {
  const [head] = await tx`UPDATE audit_chain_head SET seq = seq + 1 WHERE id = 1 RETURNING seq, hash`
  if (!head) throw new Error('audit_chain_head is missing: migration 4 was not applied')
  const fields: StoredFields = {
    seq: toNumber(head.seq),
    at,
    orgId: input.orgId,
    actor: input.actor,
    action: input.action,
    requestId: input.requestId ?? null,
    clientIp: input.clientIp ?? null,
    detailsText: canonicalJson(input.details),
  }
  const prevHash: string = head.hash
  const hash = entryHash(prevHash, fields)
  await tx`
    INSERT INTO audit_log (seq, at, org_id, actor, action, request_id, client_ip, details, prev_hash, hash)
    VALUES (${fields.seq}, ${at}, ${fields.orgId}, ${fields.actor}, ${fields.action}, ${fields.requestId}, ${fields.clientIp}, ${fields.detailsText}, ${prevHash}, ${hash})`
  await tx`UPDATE audit_chain_head SET hash = ${hash} WHERE id = 1`
  return { ...fields, details: input.details, prevHash, hash }
}

const entryFrom = (r: SqlRow): AuditEntry => ({
  seq: toNumber(r.seq),
  at: toNumber(r.at),
  orgId: r.org_id ?? null,
  actor: r.actor,
  action: r.action,
  requestId: r.request_id ?? null,
  clientIp: r.client_ip ?? null,
  details: JSON.parse(r.details),
  prevHash: r.prev_hash,
  hash: r.hash,
})

export interface AuditQuery {
  orgId: string
  action?: string
  actor?: string
  /** Epoch ms, inclusive. */
  from?: number
  /** Epoch ms, exclusive. */
  to?: number
  /** Entries with a lower sequence number than this (the previous page's last). */
  beforeSeq?: number
  limit: number
}

/** One page of an organisation's entries, newest first. */
export async function listAudit(db: Database, q: AuditQuery): Promise<{ entries: AuditEntry[]; more: boolean }> {
  const action = q.action ?? null
  const actor = q.actor ?? null
  const from = q.from ?? null
  const to = q.to ?? null
  const before = q.beforeSeq ?? null
  const rows = await db.sql`
    SELECT * FROM audit_log
    WHERE org_id = ${q.orgId}
      AND (CAST(${before} AS BIGINT) IS NULL OR seq < ${before})
      AND (CAST(${action} AS TEXT) IS NULL OR action = ${action})
      AND (CAST(${actor} AS TEXT) IS NULL OR actor = ${actor})
      AND (CAST(${from} AS BIGINT) IS NULL OR at >= ${from})
      AND (CAST(${to} AS BIGINT) IS NULL OR at < ${to})
    ORDER BY seq DESC
    LIMIT ${q.limit + 1}`
  return { entries: rows.slice(0, q.limit).map(entryFrom), more: rows.length > q.limit }
}

export interface ChainVerification {
  valid: boolean
  /** Rows checked before the first break (all of them when valid). */
  checked: number
  headSeq: number
  /** The first row that does not hold, and why. */
  firstBroken: { seq: number; reason: string } | null
}

/** Walks the whole chain in order, recomputing every hash; reports the first row that does not hold. */
export async function verifyAuditChain(db: Database, pageSize = 1000): Promise<ChainVerification> {
  const [head] = await db.sql`SELECT seq, hash FROM audit_chain_head WHERE id = 1`
  const headSeq = toNumber(head.seq)
  let expectedSeq = 1
  let prevHash = GENESIS_HASH
  let checked = 0
  const broken = (seq: number, reason: string): ChainVerification => ({ valid: false, checked, headSeq, firstBroken: { seq, reason } })
  for (;;) {
    // Entries appended after the head was read are left for the next check.
    const rows = await db.sql`SELECT * FROM audit_log WHERE seq >= ${expectedSeq} AND seq <= ${headSeq} ORDER BY seq LIMIT ${pageSize}`
    for (const r of rows) {
      const seq = toNumber(r.seq)
      if (seq !== expectedSeq) return broken(expectedSeq, `entry ${expectedSeq} is missing`)
      if (r.prev_hash !== prevHash) return broken(seq, 'prev_hash does not match the previous entry')
      const fields: StoredFields = {
        seq,
        at: toNumber(r.at),
        orgId: r.org_id ?? null,
        actor: r.actor,
        action: r.action,
        requestId: r.request_id ?? null,
        clientIp: r.client_ip ?? null,
        detailsText: r.details,
      }
      if (entryHash(prevHash, fields) !== r.hash) return broken(seq, 'content does not match its hash')
      prevHash = r.hash
      expectedSeq++
      checked++
    }
    if (rows.length < pageSize) break
  }
  // Removing the newest rows leaves an intact prefix; the head still remembers how far the chain went.
  if (checked !== headSeq) return broken(checked + 1, `the chain head records ${headSeq} entries but ${checked} were found`)
  if (headSeq > 0 && head.hash !== prevHash) return broken(headSeq, 'the chain head hash does not match the last entry')
  return { valid: true, checked, headSeq, firstBroken: null }
}
