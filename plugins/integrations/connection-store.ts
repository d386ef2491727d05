/**
 * Connections and flows in progress, over either SQL backend. Token columns hold sealed values; this
 * module never sees clear tokens. Every token change bumps `version`, and the refresh lease is taken by
 * compare-and-set on it, so across processes exactly one holder spends a refresh token.
 */
import { toNullableNumber, toNumber, type Database, type SqlRow } from '../../src/storage/database.ts'

export interface ConnectionRow {
  userId: string
  provider: string
  /** Sealed. */
  accessToken: string
  /** Sealed. */
  refreshToken: string | null
  tokenType: string
  scopes: string[]
  expiresAt: number | null
  refreshExpiresAt: number | null
  accountId: string | null
  accountName: string | null
  accountUrl: string | null
  version: number
  refreshLeaseUntil: number | null
  /** Why the connection no longer works (token_revoked, refresh_failed...); null while it works. */
  brokenReason: string | null
  connectedAt: number
  verifiedAt: number | null
}

export interface StateRow {
  userId: string
  provider: string
  /** Sealed. */
  codeVerifier: string
  bindingHash: string
  scopes: string[]
  returnTo: string
  expiresAt: number
}

/** Sealed tokens and what came with them, as written after a grant. */
export interface SealedGrant {
  accessToken: string
  refreshToken: string | null
  tokenType: string
  scopes: string[]
  expiresAt: number | null
  refreshExpiresAt: number | null
}

export interface AccountFields {
  accountId: string | null
  accountName: string | null
  accountUrl: string | null
}

const scopesFrom = (text: unknown) => (typeof text === 'string' && text !== '' ? text.split(' ') : [])

const connectionFrom = (r: SqlRow): ConnectionRow => ({
  userId: r.user_id,
  provider: r.provider,
  accessToken: r.access_token,
  refreshToken: r.refresh_token ?? null,
  tokenType: r.token_type,
  scopes: scopesFrom(r.scopes),
  expiresAt: toNullableNumber(r.expires_at),
  refreshExpiresAt: toNullableNumber(r.refresh_expires_at),
  accountId: r.account_id ?? null,
  accountName: r.account_name ?? null,
  accountUrl: r.account_url ?? null,
  version: toNumber(r.version),
  refreshLeaseUntil: toNullableNumber(r.refresh_lease_until),
  brokenReason: r.broken_reason ?? null,
  connectedAt: toNumber(r.connected_at),
  verifiedAt: toNullableNumber(r.verified_at),
})

export class ConnectionStore {
  constructor(private readonly db: Database) {}

  async get(userId: string, provider: string): Promise<ConnectionRow | undefined> {
    const [row] = await this.db.sql`SELECT * FROM integration_connections WHERE user_id = ${userId} AND provider = ${provider}`
    return row ? connectionFrom(row) : undefined
  }

  async list(userId: string): Promise<ConnectionRow[]> {
    return (await this.db.sql`SELECT * FROM integration_connections WHERE user_id = ${userId}`).map(connectionFrom)
  }

  /** A new grant from the callback: replaces whatever was there, working or not. */
  async connect(userId: string, provider: string, grant: SealedGrant, account: AccountFields & { verifiedAt: number | null }, now: number): Promise<void> {
    const scopes = grant.scopes.join(' ')
    await this.db.sql`
      INSERT INTO integration_connections (user_id, provider, access_token, refresh_token, token_type, scopes, expires_at, refresh_expires_at,
        account_id, account_name, account_url, version, refresh_lease_until, broken_reason, broken_at, connected_at, verified_at, updated_at)
      VALUES (${userId}, ${provider}, ${grant.accessToken}, ${grant.refreshToken}, ${grant.tokenType}, ${scopes}, ${grant.expiresAt}, ${grant.refreshExpiresAt},
        ${account.accountId}, ${account.accountName}, ${account.accountUrl}, 1, NULL, NULL, NULL, ${now}, ${account.verifiedAt}, ${now})
      ON CONFLICT (user_id, provider) DO UPDATE SET
        access_token = excluded.access_token, refresh_token = excluded.refresh_token, token_type = excluded.token_type, scopes = excluded.scopes,
        expires_at = excluded.expires_at, refresh_expires_at = excluded.refresh_expires_at, account_id = excluded.account_id,
        account_name = excluded.account_name, account_url = excluded.account_url, version = integration_connections.version + 1,
        refresh_lease_until = NULL, broken_reason = NULL, broken_at = NULL, connected_at = excluded.connected_at,
        verified_at = excluded.verified_at, updated_at = excluded.updated_at`
  }

  /**
   * Claims the right to refresh: succeeds only for the version the caller read and when no unexpired
   * lease is held. Answers the new version, which the holder passes to releaseLease or breakRefused.
   */
  async leaseRefresh(userId: string, provider: string, version: number, until: number, now: number): Promise<number | undefined> {
    const [row] = await this.db.sql`
      UPDATE integration_connections SET refresh_lease_until = ${until}, version = version + 1, updated_at = ${now}
      WHERE user_id = ${userId} AND provider = ${provider} AND version = ${version}
        AND broken_reason IS NULL AND (refresh_lease_until IS NULL OR refresh_lease_until < ${now})
      RETURNING version`
    return row ? toNumber(row.version) : undefined
  }

  /**
   * Writes refreshed tokens and ends any lease, only while the row still holds the refresh token that was spent (by
   * its sealed value, which every write seals anew): the new version, or undefined when a new grant replaced it or the
   * row is gone. Not by version: a holder whose lease ran out still owns the only working tokens once the provider
   * rotated on its call, and a refresh_failed judged meanwhile on that spent token is undone by them.
   */
  async saveRefreshed(userId: string, provider: string, spentRefreshToken: string, grant: SealedGrant, now: number): Promise<number | undefined> {
    const rows = await this.db.sql`
      UPDATE integration_connections SET access_token = ${grant.accessToken}, refresh_token = ${grant.refreshToken}, token_type = ${grant.tokenType},
        scopes = ${grant.scopes.join(' ')}, expires_at = ${grant.expiresAt}, refresh_expires_at = ${grant.refreshExpiresAt},
        version = version + 1, refresh_lease_until = NULL, updated_at = ${now},
        broken_at = CASE WHEN broken_reason = 'refresh_failed' THEN NULL ELSE broken_at END,
        broken_reason = CASE WHEN broken_reason = 'refresh_failed' THEN NULL ELSE broken_reason END
      WHERE user_id = ${userId} AND provider = ${provider} AND refresh_token = ${spentRefreshToken}
      RETURNING version`
    return rows[0] ? toNumber(rows[0].version) : undefined
  }

  /** Gives a lease back without new tokens (the provider could not be reached). */
  async releaseLease(userId: string, provider: string, leasedVersion: number, now: number): Promise<void> {
    await this.db.sql`
      UPDATE integration_connections SET refresh_lease_until = NULL, version = version + 1, updated_at = ${now}
      WHERE user_id = ${userId} AND provider = ${provider} AND version = ${leasedVersion}`
  }

  /** Records that the connection stopped working; only if it is still the version the caller judged. */
  async markBroken(userId: string, provider: string, version: number, reason: string, now: number): Promise<boolean> {
    const rows = await this.db.sql`
      UPDATE integration_connections SET broken_reason = ${reason}, broken_at = ${now}, refresh_lease_until = NULL,
        version = version + 1, updated_at = ${now}
      WHERE user_id = ${userId} AND provider = ${provider} AND version = ${version}
      RETURNING version`
    return rows.length > 0
  }

  /**
   * Marks refresh_failed a connection whose refresh token the provider refused, only while it still holds that token
   * and no other holder's lease is running (its refresh of the same token may be the one the provider honoured):
   * tokens another process or a new grant stored stay. False when the connection is kept.
   */
  async breakRefused(userId: string, provider: string, leasedVersion: number, refusedRefreshToken: string, now: number): Promise<boolean> {
    const rows = await this.db.sql`
      UPDATE integration_connections SET broken_reason = 'refresh_failed', broken_at = ${now}, refresh_lease_until = NULL,
        version = version + 1, updated_at = ${now}
      WHERE user_id = ${userId} AND provider = ${provider} AND refresh_token = ${refusedRefreshToken} AND broken_reason IS NULL
        AND (version = ${leasedVersion} OR refresh_lease_until IS NULL OR refresh_lease_until < ${now})
      RETURNING version`
    return rows.length > 0
  }

  /** The account and scopes a verification found. Not a token change, so the version stays. */
  async markVerified(userId: string, provider: string, account: AccountFields, scopes: string[] | undefined, now: number): Promise<void> {
    if (scopes)
      await this.db.sql`
        UPDATE integration_connections SET account_id = ${account.accountId}, account_name = ${account.accountName},
          account_url = ${account.accountUrl}, scopes = ${scopes.join(' ')}, verified_at = ${now}
        WHERE user_id = ${userId} AND provider = ${provider}`
    else
      await this.db.sql`
        UPDATE integration_connections SET account_id = ${account.accountId}, account_name = ${account.accountName},
          account_url = ${account.accountUrl}, verified_at = ${now}
        WHERE user_id = ${userId} AND provider = ${provider}`
  }

  /** Re-seals tokens under the current key; skipped when the row changed since it was read. */
  async reseal(userId: string, provider: string, version: number, accessToken: string, refreshToken: string | null, now: number): Promise<void> {
    await this.db.sql`
      UPDATE integration_connections SET access_token = ${accessToken}, refresh_token = ${refreshToken}, version = version + 1, updated_at = ${now}
      WHERE user_id = ${userId} AND provider = ${provider} AND version = ${version} AND refresh_lease_until IS NULL`
  }

  async delete(userId: string, provider: string): Promise<boolean> {
    return (await this.db.sql`DELETE FROM integration_connections WHERE user_id = ${userId} AND provider = ${provider} RETURNING provider`).length > 0
  }

  async saveState(stateHash: string, state: StateRow, now: number): Promise<void> {
    await this.db.sql`
      INSERT INTO oauth_states (state_hash, user_id, provider, code_verifier, binding_hash, scopes, return_to, expires_at, created_at)
      VALUES (${stateHash}, ${state.userId}, ${state.provider}, ${state.codeVerifier}, ${state.bindingHash}, ${state.scopes.join(' ')},
        ${state.returnTo}, ${state.expiresAt}, ${now})`
  }

  /** Removes and answers a state in one statement, so a state is used at most once whatever runs concurrently. */
  async takeState(stateHash: string): Promise<StateRow | undefined> {
    const [row] = await this.db.sql`DELETE FROM oauth_states WHERE state_hash = ${stateHash} RETURNING *`
    if (!row) return undefined
    return {
      userId: row.user_id,
      provider: row.provider,
      codeVerifier: row.code_verifier,
      bindingHash: row.binding_hash,
      scopes: scopesFrom(row.scopes),
      returnTo: row.return_to,
      expiresAt: toNumber(row.expires_at),
    }
  }

  /** Deletes the user's connection flows in progress; answers how many. */
  async deleteStatesOf(userId: string): Promise<number> {
    return (await this.db.sql`DELETE FROM oauth_states WHERE user_id = ${userId} RETURNING state_hash`).length
  }

  async purgeStates(now: number): Promise<void> {
    await this.db.sql`DELETE FROM oauth_states WHERE expires_at < ${now}`
  }
}
