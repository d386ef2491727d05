/**
 * /api/mcp-servers: an organisation's remote MCP servers, whose tools chat and develop tasks offer. Owners and
 * admins add, change and remove them; every member lists them and connects their own account to a server that
 * asks for OAuth. The callback arrives from the authorization server in the browser without a bearer token, so it
 * is bound to its user by `state` and to the browser by the flow cookie, and limited per client address.
 */
import { Elysia } from 'elysia'
import type { AccessService } from '../../src/auth/access-service.ts'
import type { PlanDirectory } from '../../src/auth/plans.ts'
import { accessControl, authenticateRequest, openApiExtension } from '../../src/auth/plugin.ts'
import { AppError } from '../../src/errors.ts'
import { guard } from '../../src/guards.ts'
import { rateLimiting, type RateLimitingOptions } from '../../src/rate-limit/plugin.ts'
import { problem } from '../../src/schemas.ts'
import {
  addServerBody,
  callbackQuery,
  callbackRedirect,
  connectAnswer,
  connectBody,
  deleteAnswer,
  disconnectAnswer,
  mcpServer,
  serverList,
  serverParams,
  updateServerBody,
} from './schemas.ts'
import type { McpToolsService } from './service.ts'

export { mcpToolsSettings, type McpToolsSettings } from './settings.ts'
export { createMcpToolsService, exposedName, type McpToolsService } from './service.ts'

export interface McpToolsPluginOptions {
  mcpServers: McpToolsService
  access: AccessService
  plans: PlanDirectory
  rateLimits: RateLimitingOptions
  /** PUBLIC_BASE_URL; the flow cookie is Secure when it is https. */
  publicBaseUrl: string
  /** How long the flow cookie lives: OAUTH_STATE_TTL_SECONDS. */
  stateTtlSeconds: number
}

const MANAGERS = ['owner', 'admin'] as const
const FLOW_COOKIE = 'mcp_flow'

function cookieValue(header: string | null, name: string): string | undefined {
  for (const part of header?.split(';') ?? []) {
    const at = part.indexOf('=')
    if (at > 0 && part.slice(0, at).trim() === name) return part.slice(at + 1).trim()
  }
  return undefined
}

/** `{ manager: true }`: the caller must be an owner or an admin; refused (403) before the body is read, after `auth`. */
function managersOnly(access: AccessService) {
  return new Elysia({ name: 'mcp-managers-only' }).macro({
    manager: (required: boolean) => {
      const check = guard(async ({ request }: { request: Request }) => {
        const principal = await authenticateRequest(access, request)
        if (required && !(MANAGERS as readonly string[]).includes(principal.role))
          throw new AppError('forbidden', `Only an owner or an admin may manage MCP servers; a ${principal.role} may not`)
      })
      return { detail: openApiExtension({ 'x-required-role': 'owner or admin' }), transform: check.early, beforeHandle: check }
    },
  })
}

export function mcpToolsPlugin(options: McpToolsPluginOptions) {
  const { mcpServers } = options
  const secure = options.publicBaseUrl.startsWith('https:') ? '; Secure' : ''
  const cookie = (serverId: string, value: string, maxAge: number) =>
    `${FLOW_COOKIE}=${value}; Path=/api/mcp-servers/${serverId}/callback; HttpOnly; SameSite=Lax; Max-Age=${maxAge}${secure}`
  const errors = { 401: problem, 403: problem, 429: problem }

  return new Elysia({ name: 'mcp-tools', detail: { tags: ['mcp-servers'] } })
    .use(accessControl(options))
    .use(managersOnly(options.access))
    .use(rateLimiting(options.rateLimits))
    .get('/api/mcp-servers', async ({ principal }) => ({ servers: await mcpServers.list(principal) }), {
      auth: 'integrations:read',
      rateLimit: 'integrations',
      response: { 200: serverList, ...errors },
      detail: {
        summary: "The organisation's MCP servers, each with its tools, allow list and the caller's connection state",
        description: 'Answers from storage without calling any server.',
      },
    })
    .post(
      '/api/mcp-servers',
      async ({ body, principal, set }) => {
        set.status = 201
        return mcpServers.add(principal, body)
      },
      {
        body: addServerBody,
        auth: 'integrations:write',
        manager: true,
        rateLimit: 'integrations',
        response: { 201: mcpServer, 400: problem, ...errors, 409: problem, 422: problem, 502: problem, 504: problem },
        detail: {
          summary: 'Add a remote MCP server (Streamable HTTP); owners and admins',
          description:
            'The URL is checked before any connection (400 mcp_server_url_refused: private, loopback, link-local or metadata addresses unless MCP_TOOLS_ALLOW_HOSTS names the host; plain http only for those). ' +
            'The server is probed: initialize and tools/list, or a 401 with WWW-Authenticate, which marks it oauth_required. A server that answers neither: 502 mcp_probe_failed. A name already used: 409 conflict.',
        },
      },
    )
    .get('/api/mcp-servers/:id', async ({ params, principal }) => mcpServers.get(principal, params.id), {
      params: serverParams,
      auth: 'integrations:read',
      rateLimit: 'integrations',
      response: { 200: mcpServer, ...errors, 404: problem },
      detail: { summary: 'One MCP server of the organisation' },
    })
    .patch('/api/mcp-servers/:id', async ({ params, body, principal }) => mcpServers.update(principal, params.id, body), {
      params: serverParams,
      body: updateServerBody,
      auth: 'integrations:write',
      manager: true,
      rateLimit: 'integrations',
      response: { 200: mcpServer, ...errors, 404: problem, 409: problem, 422: problem, 502: problem },
      detail: { summary: "Change a server's allow list or default offer, or list its tools again; owners and admins" },
    })
    .delete('/api/mcp-servers/:id', async ({ params, principal }) => mcpServers.remove(principal, params.id), {
      params: serverParams,
      auth: 'integrations:write',
      manager: true,
      rateLimit: 'integrations',
      response: { 200: deleteAnswer, ...errors, 404: problem },
      detail: { summary: 'Remove a server with every member’s connection to it; owners and admins' },
    })
    .post(
      '/api/mcp-servers/:id/auth',
      async ({ params, body, principal, set }) => {
        const flow = await mcpServers.beginAuth(principal, params.id, body?.returnTo)
        set.headers['set-cookie'] = cookie(params.id, flow.binding, options.stateTtlSeconds)
        set.headers['cache-control'] = 'no-store'
        const answer = {
          serverId: params.id,
          authorizationUrl: flow.authorizationUrl,
          redirectUri: flow.redirectUri,
          expiresAt: new Date(flow.expiresAt).toISOString(),
        }
        if (body?.redirect) {
          set.status = 302
          set.headers.location = flow.authorizationUrl
        }
        return answer
      },
      {
        params: serverParams,
        body: connectBody,
        auth: 'integrations:write',
        rateLimit: 'integrations',
        response: { 200: connectAnswer, 302: connectAnswer, ...errors, 404: problem, 409: problem, 422: problem, 502: problem, 504: problem },
        detail: {
          summary: "Connect the caller's account to an MCP server that asks for OAuth 2.1: answers the authorization URL",
          description:
            "The authorization server is discovered from the server's protected resource metadata; the service registers itself there (dynamic client registration) the first time. " +
            'PKCE S256 and the resource indicator are used; the state is single-use, expires after OAUTH_STATE_TTL_SECONDS and is bound to this browser by the flow cookie. ' +
            'A server that needs no OAuth: 409 conflict.',
        },
      },
    )
    .get(
      '/api/mcp-servers/:id/callback',
      async ({ params, query, request, set }) => {
        const binding = cookieValue(request.headers.get('cookie'), FLOW_COOKIE)
        const outcome = await mcpServers.completeAuth(params.id, { state: query.state, code: query.code, error: query.error }, binding)
        set.status = 303
        set.headers.location = outcome.location
        set.headers['set-cookie'] = cookie(params.id, '', 0)
        set.headers['cache-control'] = 'no-store'
        set.headers['referrer-policy'] = 'no-referrer'
        return ''
      },
      {
        params: serverParams,
        query: callbackQuery,
        rateLimit: { spend: 'integrations', by: 'address' },
        response: { 303: callbackRedirect, 422: problem, 429: problem },
        detail: {
          summary: "The authorization server's redirect back; answers 303 to the front end with the outcome",
          description:
            'No bearer token: the browser arrives from the authorization server. The state must be known, unused, unexpired, for this server, and come with the flow cookie of the browser that started it; ' +
            'otherwise nothing is stored and the redirect names the error (invalid_state, state_expired, state_mismatch...).',
        },
      },
    )
    .delete('/api/mcp-servers/:id/connection', async ({ params, principal }) => mcpServers.disconnect(principal, params.id), {
      params: serverParams,
      auth: 'integrations:write',
      rateLimit: 'integrations',
      response: { 200: disconnectAnswer, ...errors, 404: problem },
      detail: { summary: "Forget the caller's own tokens for an MCP server" },
    })
}
