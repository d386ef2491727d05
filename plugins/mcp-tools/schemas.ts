import { t } from 'elysia'
import { strictObject } from '../../src/schemas.ts'
import { MCP_CALLBACK_ERRORS } from './oauth.ts'

const toolName = t.String({ minLength: 1, maxLength: 128, description: 'A tool name as the server lists it' })

export const serverParams = t.Object({ id: t.String({ minLength: 1, maxLength: 64, pattern: '^[A-Za-z0-9_-]+$', description: 'MCP server id' }) })

export const addServerBody = strictObject({
  name: t.String({
    minLength: 1,
    maxLength: 30,
    pattern: '^[a-z0-9][a-z0-9-]*$',
    description: 'Unique in the organisation; the tools are offered as mcp__<name>__<tool>. Lower-case letters, digits and hyphens',
    examples: ['tracker'],
  }),
  url: t.String({
    minLength: 1,
    maxLength: 2000,
    description: 'The Streamable HTTP endpoint, e.g. https://mcp.example.com/mcp',
    examples: ['https://mcp.example.com/mcp'],
  }),
  allowedTools: t.Optional(
    t.Nullable(t.Array(toolName, { maxItems: 200, description: 'Tools offered to chat and develop tasks; null or absent: every tool the server lists' })),
  ),
  offeredByDefault: t.Optional(t.Boolean({ description: 'Offered in chats that name no servers (options.mcpServers) and in develop tasks. Default true' })),
})

export const updateServerBody = strictObject({
  allowedTools: t.Optional(t.Nullable(t.Array(toolName, { maxItems: 200, description: 'The new allow list; null offers every tool' }))),
  offeredByDefault: t.Optional(t.Boolean()),
  refreshTools: t.Optional(t.Boolean({ description: "List the server's tools again (an OAuth server: with the caller's connection)" })),
})

export const mcpServer = t.Object({
  id: t.String(),
  name: t.String(),
  url: t.String(),
  auth: t.Union([t.Literal('none'), t.Literal('oauth_required')], {
    description: 'oauth_required: the server answered 401 with WWW-Authenticate; each user connects with POST /api/mcp-servers/{id}/auth',
  }),
  allowedTools: t.Nullable(t.Array(t.String())),
  offeredByDefault: t.Boolean(),
  tools: t.Array(
    t.Object({
      name: t.String(),
      exposedName: t.String({ description: 'The name the model calls it by: mcp__<server>__<tool>' }),
      description: t.Nullable(t.String()),
      allowed: t.Boolean({ description: 'On the allow list: offered to chat and develop tasks' }),
    }),
    { description: 'As the server last listed them (at add, at refreshTools, and after a connection)' },
  ),
  toolsListedAt: t.Nullable(t.String({ format: 'date-time' })),
  connection: t.Nullable(
    t.Object(
      {
        connected: t.Boolean(),
        expiresAt: t.Nullable(t.String({ format: 'date-time' })),
        connectedAt: t.Nullable(t.String({ format: 'date-time' })),
      },
      { description: "The caller's own OAuth connection; null for a server that needs none" },
    ),
  ),
  createdAt: t.String({ format: 'date-time' }),
})

export const serverList = t.Object({ servers: t.Array(mcpServer) })

export const deleteAnswer = t.Object({ id: t.String(), deleted: t.Boolean() })
export const disconnectAnswer = t.Object({ id: t.String(), disconnected: t.Boolean({ description: 'False when there was no connection' }) })

export const connectBody = t.Optional(
  strictObject({
    returnTo: t.Optional(
      t.String({ minLength: 1, maxLength: 2000, description: 'Front-end page to come back to: a path, or a URL on the origin of MCP_TOOLS_RETURN_URL' }),
    ),
    redirect: t.Optional(t.Boolean({ description: 'Answer 302 with Location instead of 200 (the body is the same)' })),
  }),
)

export const connectAnswer = t.Object({
  serverId: t.String(),
  authorizationUrl: t.String({ description: "Send the browser here to authorise, at the server's authorization server" }),
  redirectUri: t.String({ description: 'The callback registered with the authorization server' }),
  expiresAt: t.String({ format: 'date-time' }),
})

export const callbackQuery = t.Object(
  {
    state: t.Optional(t.String({ maxLength: 512 })),
    code: t.Optional(t.String({ maxLength: 2048 })),
    error: t.Optional(t.String({ maxLength: 256 })),
    error_description: t.Optional(t.String({ maxLength: 2048 })),
  },
  { additionalProperties: true },
)

export const callbackRedirect = t.String({
  description: `Empty body; Location is the front-end page with mcp_server=<id>&status=connected, or status=error&error=${MCP_CALLBACK_ERRORS.join('|')}`,
})
