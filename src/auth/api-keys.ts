/**
 * Personal API keys: `rak_<id>_<secret>`, where the id names the row and the secret is 32 random bytes
 * (base64url). Only the SHA-256 of the secret is stored; a presented key is checked by hashing its secret and
 * comparing digests in constant time, and a key whose id is unknown is compared against a decoy digest, so an
 * unknown id and a wrong secret take the same steps.
 */
import type { Database, SqlRow } from '../storage/database.ts'
import { toNullableNumber, toNumber } from '../storage/database.ts'
import { isScope, type Scope } from './roles.ts'

export const API_KEY_PREFIX = 'rak_'

const KEY_PATTERN = /^rak_([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})_([A-Za-z0-9_-]{43})$/

export interface ApiKey {
  id: string
  userId: string
  orgId: string
  name: string
  scopes: Scope[]
  createdAt: number
  expiresAt: number
  lastUsedAt: number | null
  revokedAt: number | null
}

export const isApiKey = (token: string) => token.startsWith(API_KEY_PREFIX)

/** The id and secret of a presented key, or undefined when it is not shaped like one. */
export function parseApiKey(token: string): { id: string; secret: string } | undefined {
  const match = KEY_PATTERN.exec(token)
  return match ? { id: match[1]!, secret: match[2]! } : undefined
}

/** A new key: what the owner is shown once, and the digest that is stored. */
export function mintApiKey(): { id: string; key: string; secretHash: string } {
  const id = Bun.randomUUIDv7()
  const secret = Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString('base64url')
  return { id, key: `${API_KEY_PREFIX}${id}_${secret}`, secretHash: digestOf(secret).toString('hex') }
}

const digestOf = (secret: string) => Buffer.from(new Bun.CryptoHasher('sha256').update(secret).digest())

const DECOY = digestOf(crypto.randomUUID())

/** Whether `secret` is the one whose digest is `storedHex` (a missing row compares against a decoy and fails). */
export function secretMatches(secret: string, storedHex: string | undefined): boolean {
  const stored = storedHex && /^[0-9a-f]{64}$/.test(storedHex) ? Buffer.from(storedHex, 'hex') : DECOY
  const same = crypto.timingSafeEqual(digestOf(secret), stored)
  return same && stored !== DECOY
}

const keyFrom = (r: SqlRow): ApiKey & { secretHash: string } => ({
  id: r.id,
  userId: r.user_id,
  orgId: r.org_id,
  name: r.name,
  scopes: String(r.scopes).split(' ').filter(isScope),
  createdAt: toNumber(r.created_at),
  expiresAt: toNumber(r.expires_at),
  lastUsedAt: toNullableNumber(r.last_used_at),
  revokedAt: toNullableNumber(r.revoked_at),
  secretHash: r.secret_hash,
})

const publicKey = ({ secretHash: _hash, ...key }: ApiKey & { secretHash: string }): ApiKey => key

/** The api_keys table over either SQL backend. */
export class ApiKeyStore {
  constructor(private readonly db: Database) {}

  async insert(input: {
    id: string
    userId: string
    orgId: string
    name: string
    scopes: readonly Scope[]
    secretHash: string
    createdAt: number
    expiresAt: number
  }): Promise<ApiKey> {
    const row = {
      id: input.id,
      user_id: input.userId,
      org_id: input.orgId,
      name: input.name,
      scopes: input.scopes.join(' '),
      secret_hash: input.secretHash,
      created_at: input.createdAt,
      expires_at: input.expiresAt,
    }
    await this.db.sql`INSERT INTO api_keys ${this.db.sql(row)}`
    return publicKey(keyFrom({ ...row, last_used_at: null, revoked_at: null }))
  }

  /** The key with its stored digest and its owner's current role (null when the owner is gone), for verification. */
  async forVerification(id: string): Promise<(ApiKey & { secretHash: string; ownerRole: string | null }) | undefined> {
    const [row] = await this.db.sql`SELECT k.*, u.role AS owner_role FROM api_keys k LEFT JOIN users u ON u.id = k.user_id WHERE k.id = ${id}`
    return row ? { ...keyFrom(row), ownerRole: row.owner_role ?? null } : undefined
  }

  async listOf(userId: string): Promise<ApiKey[]> {
    return (await this.db.sql`SELECT * FROM api_keys WHERE user_id = ${userId} ORDER BY created_at DESC, id DESC`).map((r: SqlRow) => publicKey(keyFrom(r)))
  }

  async countLive(userId: string, now: number): Promise<number> {
    const [row] = await this.db.sql`SELECT COUNT(*) AS n FROM api_keys WHERE user_id = ${userId} AND revoked_at IS NULL AND expires_at > ${now}`
    return toNumber(row.n)
  }

  /** Marks the user's key revoked; the key as it was before, or undefined when the user has no such key. */
  async revoke(userId: string, id: string, now: number): Promise<ApiKey | undefined> {
    const [row] = await this.db.sql`SELECT * FROM api_keys WHERE id = ${id} AND user_id = ${userId}`
    if (!row) return undefined
    await this.db.sql`UPDATE api_keys SET revoked_at = ${now} WHERE id = ${id} AND revoked_at IS NULL`
    return publicKey(keyFrom(row))
  }

  /** Ids and expiry of the user's keys that still work. */
  async liveOf(userId: string, now: number): Promise<{ id: string; expiresAt: number }[]> {
    const rows = await this.db.sql`SELECT id, expires_at FROM api_keys WHERE user_id = ${userId} AND revoked_at IS NULL AND expires_at > ${now}`
    return rows.map((r: SqlRow) => ({ id: String(r.id), expiresAt: toNumber(r.expires_at) }))
  }

  /** Records a use, at most once a minute per key: one write per key and minute, whatever the traffic. */
  async touch(id: string, now: number): Promise<void> {
    await this.db.sql`UPDATE api_keys SET last_used_at = ${now} WHERE id = ${id} AND (last_used_at IS NULL OR last_used_at < ${now - 60_000})`
  }
}
