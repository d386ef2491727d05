import { Elysia, t } from 'elysia'
import pkg from '../../package.json' with { type: 'json' }
import type { AccessService } from '../../src/auth/access-service.ts'
import type { PlanDirectory } from '../../src/auth/plans.ts'
import { AppError, type ErrorCode } from '../../src/errors.ts'
import { integer, problem } from '../../src/schemas.ts'
import { rateLimiting, type RateLimitingOptions } from '../../src/rate-limit/plugin.ts'
import { lazily } from '../../src/lazy.ts'
import type { UsageMeter } from '../../src/usage/meter.ts'
import type { CodeIndex } from '../code-search/index.ts'
import type { DocsIndex } from '../docs/index.ts'
import { mcpAddresses } from './addresses.ts'
import { callerGuards } from './caller.ts'
export { mcpSettings } from './settings.ts'

// The MCP SDK and its schema libraries take longer to load than the rest of start-up: loaded at the first POST /mcp.
const mcpRuntime = lazily(async () => {
  const [{ createMcpServer }, { WebStandardStreamableHTTPServerTransport }] = await Promise.all([
    import('./server.ts'),
    import('@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js'),
  ])
  return { createMcpServer, WebStandardStreamableHTTPServerTransport }
})

export interface McpPluginOptions {
  access: AccessService
  plans: PlanDirectory
  rateLimits: RateLimitingOptions
  codeIndex: CodeIndex
  /** The documentation search_docs and get_page read: the documentation plugin's index. */
  docs: DocsIndex
  /** Records one `search` event per search_code call. */
  meter?: Pick<UsageMeter, 'record'>
  /**
   * Base of the documentation links the tools hand out, e.g. `https://api.example.com`. Its host name and
   * origin are the ones /mcp accepts in Host and Origin.
   */
  publicBaseUrl: string
  /**
   * Further Host header values /mcp accepts, `host` or `host:port` as clients send them, e.g.
   * `['mcp.internal:3000']`; a page on one of them may call /mcp too. Default: none.
   */
  allowedHosts?: readonly string[]
}

const jsonRpcMessage = t.Unknown({
  description: 'A JSON-RPC 2.0 message of the Model Context Protocol (initialize, tools/list, tools/call, notifications) or a batch of them',
  examples: [{ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'search_docs', arguments: { query: 'rate limits' } } }],
})

/** A refusal of the MCP transport: a problem body that is also a JSON-RPC error response (`jsonrpc`, `error`, `id`). */
const jsonRpcProblem = (description: string) =>
  t.Composite(
    [
      problem,
      t.Object({
        jsonrpc: t.Literal('2.0'),
        error: t.Object({ code: integer(), message: t.String(), data: t.Optional(t.Unknown()) }),
        id: t.Null(),
      }),
    ],
    { description },
  )

const transportRefusals: Record<number, ErrorCode> = {
  400: 'bad_request',
  403: 'forbidden',
  404: 'not_found',
  405: 'method_not_allowed',
  406: 'not_acceptable',
  415: 'unsupported_media_type',
}

/**
 * The transport answers its refusals (not JSON-RPC, wrong Accept, Host or Origin of another site) as bare
 * JSON-RPC errors. They become the service's problem bodies, keeping the JSON-RPC members, so MCP clients
 * and every other client read them alike.
 */
async function asProblem(response: Response): Promise<Response> {
  if (response.status < 400) return response
  const code = transportRefusals[response.status] ?? 'internal_error'
  let rpc: { error?: { message?: unknown } } = {}
  try {
    rpc = (await response.json()) as typeof rpc
  } catch {
    // Not JSON: the status and code still say what happened.
  }
  const message = typeof rpc.error?.message === 'string' ? rpc.error.message : `The MCP transport refused the request (${response.status})`
  throw new AppError(code, message, { extensions: { jsonrpc: '2.0', error: rpc.error ?? { code: -32000, message }, id: null } })
}

/**
 * POST /mcp: a hosted MCP server over Streamable HTTP, stateless: every request gets its own server and
 * transport and answers in JSON, so any process behind a load balancer can serve any request. There is
 * no session to resume or end and no server-initiated stream, so GET and DELETE are 405 (MCP lets a server
 * without a standalone stream say so).
 */
export function mcpPlugin(options: McpPluginOptions) {
  const tools = { serverInfo: { name: pkg.name, version: pkg.version }, docs: options.docs, codeIndex: options.codeIndex, meter: options.meter }
  const addresses = mcpAddresses(options.publicBaseUrl, options.allowedHosts)
  // The transport refuses any other Host, and any other Origin when one is sent (browsers always send it on POST).
  const rebindingProtection = { enableDnsRebindingProtection: true, allowedHosts: [...addresses.hosts], allowedOrigins: [...addresses.origins] }
  return new Elysia({
    name: 'mcp',
    seed: `${options.publicBaseUrl} ${addresses.hosts.join(',')}`,
    detail: { tags: ['mcp'] },
  })
    .use(callerGuards(options.rateLimits))
    .use(rateLimiting(options.rateLimits))
    .post(
      '/mcp',
      async ({ body, request, caller, set }) => {
        const { createMcpServer, WebStandardStreamableHTTPServerTransport } = await mcpRuntime()
        const server = createMcpServer(tools, caller)
        const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true, ...rebindingProtection })
        await server.connect(transport)
        try {
          // The body was read under the service's size limit and parsed by the request pipeline.
          const response = await asProblem(await transport.handleRequest(request, { parsedBody: body }))
          // private: tools/list depends on the caller's token.
          set.headers['cache-control'] = 'private, no-store'
          return response
        } finally {
          // JSON answers are complete when handleRequest returns, so nothing is left for the server to send.
          await server.close()
        }
      },
      {
        body: jsonRpcMessage,
        optionalAuth: true,
        rateLimit: { spend: 'search', by: 'caller' },
        response: {
          200: t.Unknown({ description: 'The JSON-RPC response (or batch of responses), application/json' }),
          202: t.Undefined({ description: 'Only notifications or responses were sent; nothing to answer' }),
          400: jsonRpcProblem('Not a JSON-RPC message (code -32700). Malformed JSON is an application/problem+json invalid_json problem instead'),
          401: problem,
          403: jsonRpcProblem('Host is not an address of this service, or Origin is a page elsewhere (code -32000): DNS rebinding protection'),
          406: jsonRpcProblem('Accept does not list both application/json and text/event-stream'),
          413: problem,
          415: problem,
          429: problem,
        },
        detail: {
          summary: 'Hosted MCP server (Streamable HTTP, stateless): documentation search for everyone, code search with a token',
          description:
            'Tools: search_docs (query, limit) and get_page (path) over the documentation; with a bearer token carrying search:read, also search_code (query, repositoryIds, limit) ' +
            "over the caller's organisation's imported repositories. Send Accept: application/json, text/event-stream. " +
            'Anonymous requests are rate limited per client address, signed-in ones per user, under the search budget. GET and DELETE are 405: no sessions, no server-initiated stream. ' +
            "Host must be PUBLIC_BASE_URL's host or one in MCP_ALLOWED_HOSTS, and an Origin, when sent, one of theirs: others are 403.",
        },
      },
    )
}
