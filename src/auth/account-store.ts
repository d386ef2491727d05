import type { SQL } from 'bun'
import type { Database, SqlRow } from '../storage/database.ts'
import { toNullableNumber, toNumber } from '../storage/database.ts'
import type { Role } from './roles.ts'

export interface Organization {
  id: string
  name: string
  plan: string
  /** When set, the plan lapses at this instant (ms) and the first plan applies; billing sets it for ending subscriptions. */
  planExpiresAt: number | null
  /** Set when an identity provider's organisation claim names it (see `externalOrgKey`). */
  externalKey: string | null
  createdAt: number
}

export interface User {
  id: string
  orgId: string
  email: string
  role: Role
  passwordHash: string | null
  externalIssuer: string | null
  externalSubject: string | null
  createdAt: number
}

export interface RefreshTokenRow {
  id: string
  familyId: string
  userId: string
  expiresAt: number
  usedAt: number | null
  revokedAt: number | null
}

const orgFrom = (r: SqlRow): Organization => ({
  id: r.id,
  name: r.name,
  plan: r.plan,
  planExpiresAt: toNullableNumber(r.plan_expires_at),
  externalKey: r.external_key ?? null,
  createdAt: toNumber(r.created_at),
})
const userFrom = (r: SqlRow): User => ({
  id: r.id,
  orgId: r.org_id,
  email: r.email,
  role: r.role,
  passwordHash: r.password_hash ?? null,
  externalIssuer: r.external_issuer ?? null,
  externalSubject: r.external_subject ?? null,
  createdAt: toNumber(r.created_at),
})
const refreshFrom = (r: SqlRow): RefreshTokenRow => ({
  id: r.id,
  familyId: r.family_id,
  userId: r.user_id,
  expiresAt: toNumber(r.expires_at),
  usedAt: toNullableNumber(r.used_at),
  revokedAt: toNullableNumber(r.revoked_at),
})

/** Organisations, users, refresh tokens and login failures, over either SQL backend. */
export class AccountStore {
  constructor(private readonly db: Database) {}

  async createOrganization(name: string, plan: string): Promise<Organization> {
    const org = { id: Bun.randomUUIDv7(), name, plan, created_at: Date.now() }
    await this.db.sql`INSERT INTO organizations ${this.db.sql(org)}`
    return orgFrom(org)
  }

  /** The organisation linked to `externalKey`, created when there is none yet (concurrent callers get the same one). */
  async organizationForExternalKey(externalKey: string, name: string, plan: string): Promise<Organization> {
    const org = { id: Bun.randomUUIDv7(), name, plan, external_key: externalKey, created_at: Date.now() }
    await this.db.sql`INSERT INTO organizations ${this.db.sql(org)} ON CONFLICT (external_key) DO NOTHING`
    return (await this.organizationByExternalKey(externalKey))!
  }

  async organizationByExternalKey(externalKey: string): Promise<Organization | undefined> {
    const [row] = await this.db.sql`SELECT * FROM organizations WHERE external_key = ${externalKey}`
    return row ? orgFrom(row) : undefined
  }

  /** Links an organisation to an identity provider's; false when there is no such organisation or the key is taken. */
  async linkOrganization(id: string, externalKey: string): Promise<boolean> {
    const taken = await this.organizationByExternalKey(externalKey)
    if (taken) return taken.id === id
    const rows = await this.db.sql`UPDATE organizations SET external_key = ${externalKey} WHERE id = ${id} RETURNING id`
    return rows.length > 0
  }

  /** Removes an organisation nobody belongs to yet (one made for an account that could not be created). */
  async deleteEmptyOrganization(id: string): Promise<void> {
    await this.db.sql`DELETE FROM organizations WHERE id = ${id} AND NOT EXISTS (SELECT 1 FROM users WHERE org_id = ${id})`
  }

  async organization(id: string): Promise<Organization | undefined> {
    const [row] = await this.db.sql`SELECT * FROM organizations WHERE id = ${id}`
    return row ? orgFrom(row) : undefined
  }

  async organizations(): Promise<Organization[]> {
    return (await this.db.sql`SELECT * FROM organizations ORDER BY created_at`).map(orgFrom)
  }

  /**
   * Sets the plan, permanently unless `expiresAt` says when it lapses. `sql` runs the update
   * inside a caller's transaction (billing changes a plan together with the event that caused it).
   */
  async setPlan(orgId: string, plan: string, options: { expiresAt?: number | null; sql?: SQL } = {}): Promise<boolean> {
    const sql = options.sql ?? this.db.sql
    const rows = await sql`UPDATE organizations SET plan = ${plan}, plan_expires_at = ${options.expiresAt ?? null} WHERE id = ${orgId} RETURNING id`
    return rows.length > 0
  }

  async createUser(input: {
    orgId: string
    email: string
    role: Role
    passwordHash?: string | null
    externalIssuer?: string | null
    externalSubject?: string | null
  }): Promise<User | undefined> {
    const row = {
      id: Bun.randomUUIDv7(),
      org_id: input.orgId,
      email: input.email,
      role: input.role,
      password_hash: input.passwordHash ?? null,
      external_issuer: input.externalIssuer ?? null,
      external_subject: input.externalSubject ?? null,
      created_at: Date.now(),
    }
    // Another request or process may take the email between a caller's check and this insert.
    const inserted = await this.db.sql`INSERT INTO users ${this.db.sql(row)} ON CONFLICT (email) DO NOTHING RETURNING id`
    return inserted.length > 0 ? userFrom(row) : undefined
  }

  async userById(id: string): Promise<User | undefined> {
    const [row] = await this.db.sql`SELECT * FROM users WHERE id = ${id}`
    return row ? userFrom(row) : undefined
  }

  async userByEmail(email: string): Promise<User | undefined> {
    const [row] = await this.db.sql`SELECT * FROM users WHERE email = ${email}`
    return row ? userFrom(row) : undefined
  }

  async userByExternalIdentity(issuer: string, subject: string): Promise<User | undefined> {
    const [row] = await this.db.sql`SELECT * FROM users WHERE external_issuer = ${issuer} AND external_subject = ${subject}`
    return row ? userFrom(row) : undefined
  }

  async users(orgId?: string): Promise<User[]> {
    const rows = orgId
      ? await this.db.sql`SELECT * FROM users WHERE org_id = ${orgId} ORDER BY created_at`
      : await this.db.sql`SELECT * FROM users ORDER BY created_at`
    return rows.map(userFrom)
  }

  async countUsers(): Promise<number> {
    const [row] = await this.db.sql`SELECT COUNT(*) AS n FROM users`
    return toNumber(row.n)
  }

  async setRole(userId: string, role: Role): Promise<boolean> {
    return (await this.db.sql`UPDATE users SET role = ${role} WHERE id = ${userId} RETURNING id`).length > 0
  }

  async setPassword(userId: string, passwordHash: string): Promise<void> {
    await this.db.sql`UPDATE users SET password_hash = ${passwordHash} WHERE id = ${userId}`
  }

  /** Sets a new password hash if the stored one is still `expected`; false when it changed meanwhile. */
  async replacePassword(userId: string, expected: string, passwordHash: string): Promise<boolean> {
    const rows = await this.db.sql`UPDATE users SET password_hash = ${passwordHash} WHERE id = ${userId} AND password_hash = ${expected} RETURNING id`
    return rows.length > 0
  }

  async insertRefreshToken(input: { familyId: string; userId: string; tokenHash: string; expiresAt: number }): Promise<void> {
    const row = {
      id: Bun.randomUUIDv7(),
      family_id: input.familyId,
      user_id: input.userId,
      token_hash: input.tokenHash,
      expires_at: input.expiresAt,
      created_at: Date.now(),
    }
    await this.db.sql`INSERT INTO refresh_tokens ${this.db.sql(row)}`
  }

  async refreshTokenByHash(tokenHash: string): Promise<RefreshTokenRow | undefined> {
    const [row] = await this.db.sql`SELECT * FROM refresh_tokens WHERE token_hash = ${tokenHash}`
    return row ? refreshFrom(row) : undefined
  }

  /** Marks a token used; false when another request used it first (a reuse). */
  async consumeRefreshToken(id: string, now: number): Promise<boolean> {
    const rows = await this.db.sql`
      UPDATE refresh_tokens SET used_at = ${now}
      WHERE id = ${id} AND used_at IS NULL AND revoked_at IS NULL
      RETURNING id`
    return rows.length > 0
  }

  /** The role of each of `ids` that is still a user. */
  async rolesOf(ids: readonly string[]): Promise<Map<string, Role>> {
    const roles = new Map<string, Role>()
    if (ids.length === 0) return roles
    for (const row of await this.db.sql`SELECT id, role FROM users WHERE id IN ${this.db.sql(ids as string[])}`) roles.set(row.id, row.role as Role)
    return roles
  }

  /** Every sign-in session (refresh-token family) the user ever had whose tokens are still stored. */
  async sessionFamiliesOf(userId: string): Promise<string[]> {
    return (await this.db.sql`SELECT DISTINCT family_id FROM refresh_tokens WHERE user_id = ${userId}`).map((r: SqlRow) => String(r.family_id))
  }

  /** Records that a sign-in session ended; its first end is kept. */
  async endSession(familyId: string, now: number): Promise<void> {
    await this.db.sql`INSERT INTO ended_sessions (family_id, ended_at) VALUES (${familyId}, ${now}) ON CONFLICT (family_id) DO NOTHING`
  }

  async sessionEnded(familyId: string): Promise<boolean> {
    const rows = await this.db.sql`SELECT 1 AS ended FROM ended_sessions WHERE family_id = ${familyId}`
    return rows.length > 0
  }

  async revokeRefreshToken(tokenHash: string, now: number): Promise<void> {
    await this.db.sql`UPDATE refresh_tokens SET revoked_at = ${now} WHERE token_hash = ${tokenHash} AND revoked_at IS NULL`
  }

  async revokeFamily(familyId: string, now: number): Promise<void> {
    await this.db.sql`UPDATE refresh_tokens SET revoked_at = ${now} WHERE family_id = ${familyId} AND revoked_at IS NULL`
  }

  async loginFailures(subject: string): Promise<{ failures: number; lockedUntil: number; updatedAt: number } | undefined> {
    const [row] = await this.db.sql`SELECT * FROM login_failures WHERE subject = ${subject}`
    return row ? { failures: toNumber(row.failures), lockedUntil: toNumber(row.locked_until), updatedAt: toNumber(row.updated_at) } : undefined
  }

  async saveLoginFailures(subject: string, failures: number, lockedUntil: number, now: number): Promise<void> {
    await this.db.sql`
      INSERT INTO login_failures (subject, failures, locked_until, updated_at)
      VALUES (${subject}, ${failures}, ${lockedUntil}, ${now})
      ON CONFLICT (subject) DO UPDATE SET failures = excluded.failures, locked_until = excluded.locked_until, updated_at = excluded.updated_at`
  }

  async clearLoginFailures(subject: string): Promise<void> {
    await this.db.sql`DELETE FROM login_failures WHERE subject = ${subject}`
  }
}
