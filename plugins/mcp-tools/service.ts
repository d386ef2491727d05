/**
 * Remote MCP servers of an organisation and the tools they offer: adding one probes it (initialize + tools/list, or
 * a 401 that marks it as asking for OAuth), the allow list decides which of its tools are offered, and `forCaller`
 * answers the tool set a user's chat or develop task gets: namespaced `mcp__<server>__<tool>`, the server's JSON
 * Schema as the input schema (arguments checked against it before any call), each call timed out, its result capped
 * and labelled untrusted, and recorded in the audit log (server, tool, caller, size and outcome; never arguments).
 */
import type { Caller } from '../../src/auth/caller.ts'
import { AppError } from '../../src/errors.ts'
import type { HttpClient } from '../../src/http.ts'
import { lazily } from '../../src/lazy.ts'
import type { Logger } from '../../src/log.ts'
import type { ExtraToolResult, ExtraTools, ExtraToolSet } from '../../src/llm/extra-tools.ts'
import type { ModelTool } from '../../src/llm/provider.ts'
import type { LeaseClock } from '../../src/refresh-lease.ts'
import type { SecretBox } from '../../src/secret-box.ts'
import { createMcpOAuth } from './oauth.ts'
import { guardedFetch, guardServerUrl, parseServerUrl, withClient, type FetchLike, type RemotePolicy } from './remote.ts'
import { capText, toolOutput } from './results.ts'
import type { McpToolsSettings } from './settings.ts'
import { McpServerStore, type ListedTool, type ServerRow } from './store.ts'

/** What the audit log is written through (the payments service's hash-chained log). */
export interface AuditSink {
  recordAudit(input: { orgId: string | null; actor: `user:${string}`; action: string; details: Record<string, unknown> }): Promise<unknown>
}

export interface McpToolsServiceOptions {
  db: ConstructorParameters<typeof McpServerStore>[0]
  box: SecretBox
  http: HttpClient
  audit: AuditSink
  logger: Logger
  settings: McpToolsSettings
  publicBaseUrl: string
  /** How long an OAuth flow may take to come back: OAUTH_STATE_TTL_SECONDS. */
  stateTtlMs: number
  /** Name resolution of the address check; default the system resolver. */
  lookup?: RemotePolicy['lookup']
  now?: () => number
  /** Clock of the token refresh lease shared across processes; default the wall clock. */
  leaseClock?: LeaseClock
}

export const MAX_SERVERS_PER_ORG = 50
/** Tools kept of one server's tools/list (pages are followed up to this many tools). */
export const MAX_TOOLS_PER_SERVER = 200
/** A tool whose input schema is larger than this (as JSON) is not offered. */
const MAX_SCHEMA_CHARS = 32_000
const MAX_DESCRIPTION_CHARS = 2000
const PREFIX = 'mcp__'

const validatorRuntime = lazily(async () => new (await import('@modelcontextprotocol/sdk/validation/ajv')).AjvJsonSchemaValidator())

/** The name a model calls a tool by: `mcp__<server>__<tool>`, only the characters function names allow, 64 at most. */
export const exposedName = (server: string, tool: string) => `${PREFIX}${server}__${tool.replace(/[^A-Za-z0-9_-]/g, '_')}`.slice(0, 64)

const isAllowed = (server: ServerRow, tool: string) => server.allowedTools === null || server.allowedTools.includes(tool)

const clip = (text: string, max: number) => (text.length > max ? `${text.slice(0, max)}…` : text)

export interface AddServer {
  name: string
  url: string
  allowedTools?: string[] | null
  offeredByDefault?: boolean
}

export function createMcpToolsService(options: McpToolsServiceOptions) {
  const { settings, logger, audit } = options
  const now = options.now ?? Date.now
  const store = new McpServerStore(options.db)
  const policy: RemotePolicy = {
    allowHosts: settings.allowHosts,
    lookup: options.lookup,
    responseMaxBytes: settings.responseMaxBytes,
    timeoutMs: settings.callTimeoutMs,
  }
  const fetchFn = guardedFetch(options.http, policy)
  const oauth = createMcpOAuth({
    store,
    box: options.box,
    fetch: fetchFn,
    logger,
    publicBaseUrl: options.publicBaseUrl,
    returnUrl: settings.returnUrl,
    stateTtlMs: options.stateTtlMs,
    now,
    leaseClock: options.leaseClock,
    tokenRequestTimeoutMs: settings.callTimeoutMs,
  })

  /** Every tool of the server (following pages), as listed. */
  async function listTools(url: string, token: string | undefined, fetch: FetchLike): Promise<ListedTool[]> {
    const signal = AbortSignal.timeout(settings.callTimeoutMs)
    return withClient({ url, token, fetch, signal, timeoutMs: settings.callTimeoutMs }, async (client, requestOptions) => {
      const tools: ListedTool[] = []
      let cursor: string | undefined
      do {
        const page = await client.listTools(cursor ? { cursor } : undefined, requestOptions)
        for (const tool of page.tools)
          tools.push({
            name: tool.name,
            ...(tool.description ? { description: clip(tool.description, MAX_DESCRIPTION_CHARS) } : {}),
            inputSchema: tool.inputSchema as Record<string, unknown>,
          })
        cursor = page.nextCursor
      } while (cursor && tools.length < MAX_TOOLS_PER_SERVER)
      return tools.slice(0, MAX_TOOLS_PER_SERVER)
    })
  }

  /** initialize + tools/list without credentials: the tools, or that the server asks for OAuth (401). */
  async function probe(url: string): Promise<{ auth: 'none'; tools: ListedTool[] } | { auth: 'oauth' }> {
    const fetch = guardedFetch(options.http, policy)
    try {
      return { auth: 'none', tools: await listTools(url, undefined, fetch) }
    } catch (error) {
      if (fetch.unauthorized !== undefined) return { auth: 'oauth' }
      if (error instanceof AppError && error.code === 'mcp_server_url_refused') throw error
      const reason = error instanceof AppError ? error.message : clip(String((error as Error).message ?? error), 300)
      throw new AppError('mcp_probe_failed', `The MCP server at ${url} did not answer initialize and tools/list: ${reason}`)
    }
  }

  async function ownServer(caller: Caller, id: string): Promise<ServerRow> {
    const server = await store.get(caller.orgId, id)
    if (!server) throw new AppError('not_found', 'No MCP server with this id in your organisation')
    return server
  }

  async function record(caller: Caller, action: string, details: Record<string, unknown>) {
    await audit
      .recordAudit({ orgId: caller.orgId, actor: `user:${caller.userId}`, action, details })
      .catch((err: unknown) => logger.error('MCP audit entry could not be written', { action, err }))
  }

  /** A server as the API answers it, with the caller's connection state. */
  async function describe(server: ServerRow, userId: string) {
    const connection = server.auth === 'oauth' ? await store.connection(server.id, userId) : undefined
    return {
      id: server.id,
      name: server.name,
      url: server.url,
      auth: server.auth === 'oauth' ? ('oauth_required' as const) : ('none' as const),
      allowedTools: server.allowedTools,
      offeredByDefault: server.offeredByDefault,
      tools: server.tools.map((t) => ({
        name: t.name,
        exposedName: exposedName(server.name, t.name),
        description: t.description ?? null,
        allowed: isAllowed(server, t.name),
      })),
      toolsListedAt: server.toolsListedAt === null ? null : new Date(server.toolsListedAt).toISOString(),
      connection:
        server.auth === 'oauth'
          ? {
              connected: connection !== undefined,
              expiresAt: connection?.expiresAt ? new Date(connection.expiresAt).toISOString() : null,
              connectedAt: connection ? new Date(connection.connectedAt).toISOString() : null,
            }
          : null,
      createdAt: new Date(server.createdAt).toISOString(),
    }
  }

  /** The server's tools a user may call now: allowed, listed, with a schema the validator compiles. */
  async function offered(server: ServerRow, userId: string) {
    const token = server.auth === 'oauth' ? await oauth.tokenFor(server, userId).catch(() => undefined) : undefined
    if (server.auth === 'oauth' && token === undefined) return []
    const validator = await validatorRuntime()
    const tools: { exposed: string; tool: ListedTool; definition: ModelTool; check: (input: unknown) => string | undefined; token?: string }[] = []
    const seen = new Set<string>()
    for (const tool of server.tools) {
      if (!isAllowed(server, tool.name)) continue
      const exposed = exposedName(server.name, tool.name)
      const schema = tool.inputSchema
      if (seen.has(exposed) || !schema || schema.type !== 'object' || JSON.stringify(schema).length > MAX_SCHEMA_CHARS) continue
      let validate: (input: unknown) => { valid: boolean; errorMessage?: string }
      try {
        validate = validator.getValidator(schema as never)
      } catch {
        logger.warn('MCP tool input schema does not compile; the tool is not offered', { serverId: server.id, tool: tool.name })
        continue
      }
      seen.add(exposed)
      tools.push({
        exposed,
        tool,
        token,
        check: (input) => {
          const verdict = validate(input)
          return verdict.valid ? undefined : (verdict.errorMessage ?? 'the arguments do not match the input schema')
        },
        definition: {
          type: 'function',
          function: {
            name: exposed,
            description: `[${server.name} MCP server] ${tool.description ?? tool.name}`,
            parameters: schema,
          },
        },
      })
    }
    return tools
  }

  /** Runs one tool call: validated, timed out, capped, audited. */
  async function callTool(
    caller: Caller,
    server: ServerRow,
    entry: Awaited<ReturnType<typeof offered>>[number],
    input: Record<string, unknown>,
    signal: AbortSignal,
  ): Promise<ExtraToolResult> {
    const source = { server: server.name, tool: entry.tool.name }
    const started = now()
    const fail = async (outcome: string, message: string): Promise<ExtraToolResult> => {
      await record(caller, 'mcp.tool_call', { serverId: server.id, ...source, outcome, resultBytes: 0, durationMs: now() - started })
      const output = { ...source, untrusted: true, isError: true, content: message }
      return { text: JSON.stringify(output), output, isError: true }
    }
    const invalid = entry.check(input)
    if (invalid) return fail('invalid_arguments', `Invalid arguments for ${entry.exposed}: ${clip(invalid, 500)}`)
    const deadline = AbortSignal.timeout(settings.callTimeoutMs)
    let result: Awaited<ReturnType<import('@modelcontextprotocol/sdk/client/index.js').Client['callTool']>>
    try {
      result = await withClient(
        { url: server.url, token: entry.token, fetch: fetchFn, signal: AbortSignal.any([signal, deadline]), timeoutMs: settings.callTimeoutMs },
        (client, requestOptions) => client.callTool({ name: entry.tool.name, arguments: input }, undefined, requestOptions),
      )
    } catch (error) {
      if (signal.aborted) throw signal.reason
      if (deadline.aborted || (error instanceof AppError && error.code === 'upstream_timeout') || /timed out|timeout/i.test(String((error as Error)?.message)))
        return fail('timeout', `The MCP server ${server.name} did not answer ${entry.tool.name} within ${settings.callTimeoutMs / 1000} s`)
      const reason = error instanceof AppError ? error.message : clip(String((error as Error)?.message ?? error), 300)
      return fail('failed', `The MCP server ${server.name} failed on ${entry.tool.name}: ${reason}`)
    }
    const output = toolOutput(source, result as Record<string, unknown>, settings.resultMaxBytes)
    await record(caller, 'mcp.tool_call', {
      serverId: server.id,
      ...source,
      outcome: output.isError ? 'tool_error' : 'ok',
      resultBytes: output.truncated?.totalBytes ?? Buffer.byteLength(output.content),
      truncated: output.truncated !== undefined,
      durationMs: now() - started,
    })
    return { text: JSON.stringify(output), output, isError: output.isError }
  }

  const tools: ExtraTools = {
    async forCaller(caller, selection = {}) {
      const servers = (await store.list(caller.orgId)).filter((s) => (selection.servers ? selection.servers.includes(s.name) : s.offeredByDefault))
      const entries = new Map<string, { server: ServerRow; entry: Awaited<ReturnType<typeof offered>>[number] }>()
      for (const server of servers) for (const entry of await offered(server, caller.userId)) entries.set(entry.exposed, { server, entry })
      const set: ExtraToolSet = {
        definitions: [...entries.values()].map((e) => e.entry.definition),
        // Every namespaced name is answered here, so a call to a tool not offered is refused and recorded, not run.
        has: (name) => name.startsWith(PREFIX),
        async call(name, input, signal) {
          const found = entries.get(name)
          if (!found) {
            const [, serverName = '', tool = ''] = name.split('__')
            await record(caller, 'mcp.tool_call', { server: serverName, tool, outcome: 'refused', resultBytes: 0, durationMs: 0 })
            const output = { server: serverName, tool, untrusted: true, isError: true, content: `Refused: ${name} is not a tool offered in this conversation` }
            return { text: JSON.stringify(output), output, isError: true }
          }
          return callTool(caller, found.server, found.entry, input, signal)
        },
      }
      return set
    },
  }

  return {
    tools,
    oauth,

    async add(caller: Caller, request: AddServer) {
      const url = parseServerUrl(request.url)
      await guardServerUrl(url, policy)
      if (await store.byName(caller.orgId, request.name)) throw new AppError('conflict', `The organisation has an MCP server named ${request.name} already`)
      if ((await store.list(caller.orgId)).length >= MAX_SERVERS_PER_ORG)
        throw new AppError('conflict', `An organisation may add at most ${MAX_SERVERS_PER_ORG} MCP servers`)
      const found = await probe(url.toString())
      const at = now()
      const server: ServerRow = {
        id: `mcps_${Bun.randomUUIDv7('hex').replaceAll('-', '')}`,
        orgId: caller.orgId,
        name: request.name,
        url: url.toString(),
        auth: found.auth,
        allowedTools: request.allowedTools ?? null,
        offeredByDefault: request.offeredByDefault ?? true,
        tools: found.auth === 'none' ? found.tools : [],
        toolsListedAt: found.auth === 'none' ? at : null,
        oauthIssuer: null,
        oauthClient: null,
        createdBy: caller.userId,
        createdAt: at,
        updatedAt: at,
      }
      await store.add(server)
      await record(caller, 'mcp.server_added', { serverId: server.id, server: server.name, url: `${url.origin}${url.pathname}`, auth: server.auth })
      return describe(server, caller.userId)
    },

    async list(caller: Caller) {
      return Promise.all((await store.list(caller.orgId)).map((s) => describe(s, caller.userId)))
    },

    async get(caller: Caller, id: string) {
      return describe(await ownServer(caller, id), caller.userId)
    },

    /** Changes the allow list or the default offer; `refreshTools` lists the tools again (with the caller's connection for an OAuth server). */
    async update(caller: Caller, id: string, change: { allowedTools?: string[] | null; offeredByDefault?: boolean; refreshTools?: boolean }) {
      const server = await ownServer(caller, id)
      let listed: ListedTool[] | undefined
      if (change.refreshTools) {
        const token = server.auth === 'oauth' ? await oauth.tokenFor(server, caller.userId) : undefined
        if (server.auth === 'oauth' && !token)
          throw new AppError('conflict', 'Connect to this MCP server first (POST /api/mcp-servers/{id}/auth): its tools are listed with your token')
        try {
          listed = await listTools(server.url, token, fetchFn)
        } catch (error) {
          throw new AppError('mcp_probe_failed', `The MCP server did not answer tools/list: ${clip(String((error as Error).message), 300)}`)
        }
      }
      await store.update(
        caller.orgId,
        id,
        { allowedTools: change.allowedTools, offeredByDefault: change.offeredByDefault, tools: listed, toolsListedAt: listed && now() },
        now(),
      )
      await record(caller, 'mcp.server_changed', {
        serverId: id,
        server: server.name,
        ...(change.allowedTools !== undefined ? { allowedTools: change.allowedTools } : {}),
        ...(change.offeredByDefault !== undefined ? { offeredByDefault: change.offeredByDefault } : {}),
      })
      return describe((await store.get(caller.orgId, id))!, caller.userId)
    },

    async remove(caller: Caller, id: string) {
      const server = await ownServer(caller, id)
      await store.delete(caller.orgId, id)
      await record(caller, 'mcp.server_removed', { serverId: id, server: server.name })
      return { id, deleted: true }
    },

    async beginAuth(caller: Caller, id: string, returnTo?: string) {
      return oauth.begin(await ownServer(caller, id), caller.userId, returnTo)
    },

    /** The OAuth callback; once connected, the server's tools are listed with the new token. */
    async completeAuth(id: string, params: { state?: string; code?: string; error?: string }, binding: string | undefined) {
      const outcome = await oauth.complete(id, params, binding)
      if (outcome.connected && outcome.server && outcome.userId) {
        const token = await oauth.tokenFor(outcome.server, outcome.userId)
        try {
          const listed = await listTools(outcome.server.url, token, fetchFn)
          await store.update(outcome.server.orgId, id, { tools: listed, toolsListedAt: now() }, now())
        } catch (error) {
          logger.warn('MCP tools could not be listed after connecting', { serverId: id, reason: capText(String((error as Error).message), 300).text })
        }
      }
      return outcome
    },

    async disconnect(caller: Caller, id: string) {
      await ownServer(caller, id)
      return { id, disconnected: await store.disconnect(id, caller.userId) }
    },

    deleteUser: (userId: string) => store.deleteUser(userId),
    deleteOrganisation: (orgId: string) => store.deleteOrganisation(orgId),
  }
}

export type McpToolsService = ReturnType<typeof createMcpToolsService>
