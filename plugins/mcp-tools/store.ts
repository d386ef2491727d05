/**
 * MCP servers, users' connections to them and OAuth flows in progress, over either SQL backend. Token and client
 * secret columns hold sealed values; this module never sees them in clear. Every token change of a connection bumps
 * its `version`, and the refresh lease is taken by compare-and-set on it, so across processes one holder spends a
 * refresh token.
 */
import { toNullableNumber, toNumber, type Database, type SqlRow } from '../../src/storage/database.ts'

/** A tool as the server listed it: its name, description and the JSON Schema of its input. */
export interface ListedTool {
  name: string
  description?: string
  inputSchema: Record<string, unknown>
}

/** Where an OAuth server's tokens come from, as discovered (RFC 9728, RFC 8414). */
export interface OAuthIssuer {
  authorizationServerUrl: string
  /** The authorization server's metadata document as it answered. */
  metadata: Record<string, unknown>
  /** The resource indicator (RFC 8707) tokens are asked for. */
  resource: string
  scopes?: string[]
}

export interface ServerRow {
  id: string
  orgId: string
  name: string
  url: string
  auth: 'none' | 'oauth'
  /** Null: every tool is allowed. */
  allowedTools: string[] | null
  offeredByDefault: boolean
  tools: ListedTool[]
  toolsListedAt: number | null
  oauthIssuer: OAuthIssuer | null
  /** Sealed JSON of the OAuth client the service registered (or was given). */
  oauthClient: string | null
  createdBy: string
  createdAt: number
  updatedAt: number
}

export interface ConnectionRow {
  serverId: string
  userId: string
  /** Sealed. */
  accessToken: string
  /** Sealed. */
  refreshToken: string | null
  scopes: string[]
  expiresAt: number | null
  connectedAt: number
  version: number
  refreshLeaseUntil: number | null
}

/** Sealed tokens as a grant or a refresh writes them. */
export type SealedConnection = Omit<ConnectionRow, 'version' | 'refreshLeaseUntil'>

export interface StateRow {
  serverId: string
  userId: string
  /** Sealed. */
  codeVerifier: string
  bindingHash: string
  returnTo: string
  expiresAt: number
}

const json = <T>(text: unknown, fallback: T): T => {
  if (typeof text !== 'string' || text === '') return fallback
  try {
    return JSON.parse(text) as T
  } catch {
    return fallback
  }
}

const serverFrom = (r: SqlRow): ServerRow => ({
  id: r.id,
  orgId: r.org_id,
  name: r.name,
  url: r.url,
  auth: r.auth === 'oauth' ? 'oauth' : 'none',
  allowedTools: r.allowed_tools == null ? null : json<string[]>(r.allowed_tools, []),
  offeredByDefault: toNumber(r.offered_by_default) === 1,
  tools: json<ListedTool[]>(r.tools, []),
  toolsListedAt: toNullableNumber(r.tools_listed_at),
  oauthIssuer: r.oauth_issuer == null ? null : json<OAuthIssuer | null>(r.oauth_issuer, null),
  oauthClient: r.oauth_client ?? null,
  createdBy: r.created_by,
  createdAt: toNumber(r.created_at),
  updatedAt: toNumber(r.updated_at),
})

const connectionFrom = (r: SqlRow): ConnectionRow => ({
  serverId: r.server_id,
  userId: r.user_id,
  accessToken: r.access_token,
  refreshToken: r.refresh_token ?? null,
  scopes: typeof r.scopes === 'string' && r.scopes !== '' ? r.scopes.split(' ') : [],
  expiresAt: toNullableNumber(r.expires_at),
  connectedAt: toNumber(r.connected_at),
  version: toNumber(r.version),
  refreshLeaseUntil: toNullableNumber(r.refresh_lease_until),
})

export class McpServerStore {
  constructor(private readonly db: Database) {}

  async add(row: ServerRow): Promise<void> {
    await this.db.sql`
      INSERT INTO mcp_servers (id, org_id, name, url, auth, allowed_tools, offered_by_default, tools, tools_listed_at, oauth_issuer, oauth_client,
        created_by, created_at, updated_at)
      VALUES (${row.id}, ${row.orgId}, ${row.name}, ${row.url}, ${row.auth}, ${row.allowedTools ? JSON.stringify(row.allowedTools) : null},
        ${row.offeredByDefault ? 1 : 0}, ${JSON.stringify(row.tools)}, ${row.toolsListedAt}, ${row.oauthIssuer ? JSON.stringify(row.oauthIssuer) : null},
        ${row.oauthClient}, ${row.createdBy}, ${row.createdAt}, ${row.updatedAt})`
  }

  async get(orgId: string, id: string): Promise<ServerRow | undefined> {
    const [row] = await this.db.sql`SELECT * FROM mcp_servers WHERE id = ${id} AND org_id = ${orgId}`
    return row ? serverFrom(row) : undefined
  }

  async byId(id: string): Promise<ServerRow | undefined> {
    const [row] = await this.db.sql`SELECT * FROM mcp_servers WHERE id = ${id}`
    return row ? serverFrom(row) : undefined
  }

  async byName(orgId: string, name: string): Promise<ServerRow | undefined> {
    const [row] = await this.db.sql`SELECT * FROM mcp_servers WHERE org_id = ${orgId} AND name = ${name}`
    return row ? serverFrom(row) : undefined
  }

  async list(orgId: string): Promise<ServerRow[]> {
    return (await this.db.sql`SELECT * FROM mcp_servers WHERE org_id = ${orgId} ORDER BY name`).map(serverFrom)
  }

  async update(
    orgId: string,
    id: string,
    change: { allowedTools?: string[] | null; offeredByDefault?: boolean; tools?: ListedTool[]; toolsListedAt?: number },
    now: number,
  ): Promise<void> {
    const current = await this.get(orgId, id)
    if (!current) return
    const allowed = change.allowedTools === undefined ? current.allowedTools : change.allowedTools
    const offered = change.offeredByDefault ?? current.offeredByDefault
    const tools = change.tools ?? current.tools
    const listedAt = change.toolsListedAt ?? current.toolsListedAt
    await this.db.sql`
      UPDATE mcp_servers SET allowed_tools = ${allowed ? JSON.stringify(allowed) : null}, offered_by_default = ${offered ? 1 : 0},
        tools = ${JSON.stringify(tools)}, tools_listed_at = ${listedAt}, updated_at = ${now}
      WHERE id = ${id} AND org_id = ${orgId}`
  }

  async saveOAuth(id: string, issuer: OAuthIssuer, client: string, now: number): Promise<void> {
    await this.db.sql`UPDATE mcp_servers SET oauth_issuer = ${JSON.stringify(issuer)}, oauth_client = ${client}, updated_at = ${now} WHERE id = ${id}`
  }

  /** Deletes a server with every user's connection and flow; false when there was none. */
  async delete(orgId: string, id: string): Promise<boolean> {
    return this.db.sql.begin(async (tx) => {
      const gone = await tx`DELETE FROM mcp_servers WHERE id = ${id} AND org_id = ${orgId} RETURNING id`
      if (gone.length === 0) return false
      await tx`DELETE FROM mcp_connections WHERE server_id = ${id}`
      await tx`DELETE FROM mcp_oauth_states WHERE server_id = ${id}`
      return true
    })
  }

  async connection(serverId: string, userId: string): Promise<ConnectionRow | undefined> {
    const [row] = await this.db.sql`SELECT * FROM mcp_connections WHERE server_id = ${serverId} AND user_id = ${userId}`
    return row ? connectionFrom(row) : undefined
  }

  async connectionsOf(userId: string): Promise<ConnectionRow[]> {
    return (await this.db.sql`SELECT * FROM mcp_connections WHERE user_id = ${userId}`).map(connectionFrom)
  }

  /** A new grant from the callback: replaces whatever was there, and ends any refresh lease on the old tokens. */
  async connect(row: SealedConnection, now: number): Promise<void> {
    await this.db.sql`
      INSERT INTO mcp_connections (server_id, user_id, access_token, refresh_token, scopes, expires_at, connected_at, updated_at, version, refresh_lease_until)
      VALUES (${row.serverId}, ${row.userId}, ${row.accessToken}, ${row.refreshToken}, ${row.scopes.join(' ')}, ${row.expiresAt}, ${row.connectedAt}, ${now}, 1, NULL)
      ON CONFLICT (server_id, user_id) DO UPDATE SET access_token = excluded.access_token, refresh_token = excluded.refresh_token,
        scopes = excluded.scopes, expires_at = excluded.expires_at, connected_at = excluded.connected_at, updated_at = excluded.updated_at,
        version = mcp_connections.version + 1, refresh_lease_until = NULL`
  }

  /**
   * Claims the right to refresh: succeeds only for the version the caller read and when no unexpired lease is held.
   * Answers the new version, which the holder passes to releaseLease or dropRefused.
   */
  async leaseRefresh(serverId: string, userId: string, version: number, until: number, now: number): Promise<number | undefined> {
    const [row] = await this.db.sql`
      UPDATE mcp_connections SET refresh_lease_until = ${until}, version = version + 1, updated_at = ${now}
      WHERE server_id = ${serverId} AND user_id = ${userId} AND version = ${version}
        AND (refresh_lease_until IS NULL OR refresh_lease_until < ${now})
      RETURNING version`
    return row ? toNumber(row.version) : undefined
  }

  /**
   * Writes refreshed tokens and ends any lease, only while the row still holds the refresh token that was spent (by
   * its sealed value, which every write seals anew): false when a new grant replaced it or the row is gone. Not by
   * version: a holder whose lease ran out still owns the only working tokens once the server rotated on its call.
   */
  async saveRefreshed(spentRefreshToken: string, row: SealedConnection, now: number): Promise<boolean> {
    const rows = await this.db.sql`
      UPDATE mcp_connections SET access_token = ${row.accessToken}, refresh_token = ${row.refreshToken}, scopes = ${row.scopes.join(' ')},
        expires_at = ${row.expiresAt}, version = version + 1, refresh_lease_until = NULL, updated_at = ${now}
      WHERE server_id = ${row.serverId} AND user_id = ${row.userId} AND refresh_token = ${spentRefreshToken}
      RETURNING version`
    return rows.length > 0
  }

  /** Gives a lease back without new tokens (the authorization server could not be reached). */
  async releaseLease(serverId: string, userId: string, leasedVersion: number, now: number): Promise<void> {
    await this.db.sql`
      UPDATE mcp_connections SET refresh_lease_until = NULL, version = version + 1, updated_at = ${now}
      WHERE server_id = ${serverId} AND user_id = ${userId} AND version = ${leasedVersion}`
  }

  /**
   * Deletes a connection whose refresh token the authorization server refused, only while it still holds that token
   * and no other holder's lease is running (its refresh of the same token may be the one the server honoured):
   * tokens another process or a new grant stored stay. False when the connection is kept.
   */
  async dropRefused(serverId: string, userId: string, leasedVersion: number, refusedRefreshToken: string, now: number): Promise<boolean> {
    const rows = await this.db.sql`
      DELETE FROM mcp_connections
      WHERE server_id = ${serverId} AND user_id = ${userId} AND refresh_token = ${refusedRefreshToken}
        AND (version = ${leasedVersion} OR refresh_lease_until IS NULL OR refresh_lease_until < ${now})
      RETURNING server_id`
    return rows.length > 0
  }

  async disconnect(serverId: string, userId: string): Promise<boolean> {
    return (await this.db.sql`DELETE FROM mcp_connections WHERE server_id = ${serverId} AND user_id = ${userId} RETURNING server_id`).length > 0
  }

  async saveState(stateHash: string, state: StateRow, now: number): Promise<void> {
    await this.db.sql`
      INSERT INTO mcp_oauth_states (state_hash, server_id, user_id, code_verifier, binding_hash, return_to, expires_at, created_at)
      VALUES (${stateHash}, ${state.serverId}, ${state.userId}, ${state.codeVerifier}, ${state.bindingHash}, ${state.returnTo}, ${state.expiresAt}, ${now})`
  }

  /** Removes and answers a state in one statement: a state is used at most once whatever runs concurrently. */
  async takeState(stateHash: string): Promise<StateRow | undefined> {
    const [row] = await this.db.sql`DELETE FROM mcp_oauth_states WHERE state_hash = ${stateHash} RETURNING *`
    if (!row) return undefined
    return {
      serverId: row.server_id,
      userId: row.user_id,
      codeVerifier: row.code_verifier,
      bindingHash: row.binding_hash,
      returnTo: row.return_to,
      expiresAt: toNumber(row.expires_at),
    }
  }

  async purgeStates(now: number): Promise<void> {
    await this.db.sql`DELETE FROM mcp_oauth_states WHERE expires_at < ${now}`
  }

  /** A user's connections and flows in progress (an account's deletion); answers how many of each. */
  async deleteUser(userId: string): Promise<{ mcpConnections: number; mcpFlows: number }> {
    return this.db.sql.begin(async (tx) => {
      const connections = await tx`DELETE FROM mcp_connections WHERE user_id = ${userId} RETURNING server_id`
      const flows = await tx`DELETE FROM mcp_oauth_states WHERE user_id = ${userId} RETURNING state_hash`
      return { mcpConnections: connections.length, mcpFlows: flows.length }
    })
  }

  /** An organisation's servers with every connection and flow to them (an organisation's deletion). */
  async deleteOrganisation(orgId: string): Promise<{ mcpServers: number; mcpConnections: number }> {
    return this.db.sql.begin(async (tx) => {
      const connections = await tx`DELETE FROM mcp_connections WHERE server_id IN (SELECT id FROM mcp_servers WHERE org_id = ${orgId}) RETURNING server_id`
      await tx`DELETE FROM mcp_oauth_states WHERE server_id IN (SELECT id FROM mcp_servers WHERE org_id = ${orgId})`
      const servers = await tx`DELETE FROM mcp_servers WHERE org_id = ${orgId} RETURNING id`
      return { mcpServers: servers.length, mcpConnections: connections.length }
    })
  }
}
