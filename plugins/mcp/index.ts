import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js'
import { Elysia, t } from 'elysia'
import pkg from '../../package.json' with { type: 'json' }
import type { AccessService } from '../../src/auth/access-service.ts'
import type { PlanDirectory } from '../../src/auth/plans.ts'
import { problem } from '../../src/models.ts'
import type { RateLimitingOptions } from '../../src/rate-limit/plugin.ts'
import type { UsageMeter } from '../../src/usage/meter.ts'
import { bundledDocsSite } from '../docs/bundle.ts' with { type: 'macro' }
import { loadDocsSite } from '../docs/site.ts'
import type { CodeIndex } from '../search/types.ts'
import { callerGuards } from './caller.ts'
import { createDocsIndex } from './docs-index.ts'
import { createMcpServer } from './server.ts'

export interface McpPluginOptions {
  access: AccessService
  plans: PlanDirectory
  rateLimits: RateLimitingOptions
  codeIndex: CodeIndex
  /** Records one `search` event per search_code call. */
  meter?: Pick<UsageMeter, 'record'>
  /** Base of the documentation links the tools hand out, e.g. `https://api.example.com`. */
  publicBaseUrl: string
  /**
   * Directory holding docs.json and the pages it lists, read when the plugin is built (a missing docs.json
   * stops start-up). Default: the project root's documentation, found from the module's location and
   * carried inside the compiled executable, so it needs no files beside it.
   */
  rootDir?: string
}

const jsonRpcMessage = t.Unknown({
  description: 'A JSON-RPC 2.0 message of the Model Context Protocol (initialize, tools/list, tools/call, notifications) or a batch of them',
  examples: [{ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'search_docs', arguments: { query: 'rate limits' } } }],
})

const jsonRpcError = (description: string) =>
  t.Object(
    {
      jsonrpc: t.Literal('2.0'),
      error: t.Object({ code: t.Integer(), message: t.String(), data: t.Optional(t.Unknown()) }),
      id: t.Null(),
    },
    { description },
  )

/**
 * POST /mcp: a hosted MCP server over Streamable HTTP, stateless: every request gets its own server and
 * transport and answers in JSON, so any process behind a load balancer can serve any request. There is
 * no session to resume or end and no server-initiated stream, so GET and DELETE are 405 (MCP lets a server
 * without a standalone stream say so).
 */
export function mcpPlugin(options: McpPluginOptions) {
  const site = options.rootDir === undefined ? bundledDocsSite() : loadDocsSite(options.rootDir)
  const docs = createDocsIndex(site.pages, options.publicBaseUrl)
  const tools = { serverInfo: { name: pkg.name, version: pkg.version }, docs, codeIndex: options.codeIndex, meter: options.meter }
  return new Elysia({ name: 'mcp', seed: `${options.publicBaseUrl} ${options.rootDir ?? ''}`, detail: { tags: ['mcp'] } })
    .use(callerGuards(options.rateLimits))
    .post(
      '/mcp',
      async ({ body, request, caller, set }) => {
        const server = createMcpServer(tools, caller)
        const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true })
        await server.connect(transport)
        try {
          // The body was read under the service's size limit and parsed by the request pipeline.
          const response = await transport.handleRequest(request, { parsedBody: body })
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
        callerRateLimit: 'search',
        response: {
          200: t.Unknown({ description: 'The JSON-RPC response (or batch of responses), application/json' }),
          202: t.Undefined({ description: 'Only notifications or responses were sent; nothing to answer' }),
          400: jsonRpcError('Not a JSON-RPC message (code -32700). Malformed JSON is an application/problem+json invalid_json problem instead'),
          401: problem,
          406: jsonRpcError('Accept does not list both application/json and text/event-stream'),
          413: problem,
          415: problem,
          429: problem,
        },
        detail: {
          summary: 'Hosted MCP server (Streamable HTTP, stateless): documentation search for everyone, code search with a token',
          description:
            'Tools: search_docs (query, limit) and get_page (path) over the documentation; with a bearer token carrying search:read, also search_code (query, repositoryIds, limit) ' +
            "over the caller's organisation's imported repositories. Send Accept: application/json, text/event-stream. " +
            'Anonymous requests are rate limited per client address, signed-in ones per user, under the search budget. GET and DELETE are 405: no sessions, no server-initiated stream.',
        },
      },
    )
}
