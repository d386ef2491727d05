/** The MCP server one request talks to: documentation tools for everyone, code search for signed-in callers. */
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js'
import * as z from 'zod/v4'
import type { Principal } from '../../src/auth/access-service.ts'
import type { Scope } from '../../src/auth/roles.ts'
import type { UsageMeter } from '../../src/usage/meter.ts'
import { MAX_LIMIT, MAX_QUERY_LENGTH, type CodeIndex } from '../code-search/index.ts'
import { pageMarkdown, type DocsIndex } from '../docs/index.ts'

/** The scope POST /api/search requires; search_code is listed only for tokens carrying it. */
export const CODE_SEARCH_SCOPE: Scope = 'search:read'

export interface McpToolsDeps {
  serverInfo: { name: string; version: string }
  docs: DocsIndex
  codeIndex: CodeIndex
  meter?: Pick<UsageMeter, 'record'>
}

const INSTRUCTIONS =
  "Search this service's documentation with search_docs and read a whole page with get_page. " +
  "Signed in with a bearer token that has the search:read scope, search_code searches the code of your organisation's imported repositories."

// Bounds what one tools/call can make the server parse; the schemas below need far fewer.
const MAX_TOOL_INPUT_ELEMENTS = 500

const query = z.string().min(1).max(MAX_QUERY_LENGTH).regex(/\S/, 'must not be blank')

// Also as text: clients that ignore structuredContent read the same JSON.
const json = (value: unknown) => JSON.stringify(value)

const docsHit = z.object({
  path: z.string().describe('Navigation path of the page, for get_page'),
  title: z.string().describe('Title of the page'),
  section: z.string().optional().describe('Heading of the matching section; absent for the opening of the page'),
  url: z.string(),
  markdownUrl: z.string(),
  snippet: z.string(),
  score: z.number(),
})

const codeHit = z.object({
  repositoryId: z.string(),
  repositoryName: z.string(),
  path: z.string(),
  language: z.string().nullable(),
  startLine: z.number().int(),
  endLine: z.number().int(),
  snippet: z.string().describe('HTML-escaped lines of the chunk, matched words in <mark></mark>'),
  score: z.number(),
})

/** A fresh server for one request; `caller` is undefined for anonymous requests. */
export function createMcpServer(deps: McpToolsDeps, caller: Principal | undefined): McpServer {
  const { docs, codeIndex, meter } = deps
  const server = new McpServer(deps.serverInfo, { instructions: INSTRUCTIONS, maxToolInputElements: MAX_TOOL_INPUT_ELEMENTS })

  server.registerTool(
    'search_docs',
    {
      title: 'Search the documentation',
      description:
        "Full-text search over the service's documentation. Each result is a section of a page: its title, path, section heading, URLs and a snippet.",
      inputSchema: {
        query: query.describe('Words to look for, e.g. "rate limit search"'),
        limit: z.number().int().min(1).max(20).optional().describe('Results wanted, 1-20. Default 5'),
      },
      outputSchema: { query: z.string(), results: z.array(docsHit) },
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    async ({ query, limit }) => {
      const results = await docs.search(query, limit ?? 5)
      return { content: [{ type: 'text', text: json({ query, results }) }], structuredContent: { query, results } }
    },
  )

  server.registerTool(
    'get_page',
    {
      title: 'Read a documentation page',
      description: `One documentation page as Markdown, by its path as search_docs gives it (e.g. docs/search). Pages: ${docs.pages.map((p) => p.path).join(', ') || 'none'}.`,
      inputSchema: { path: z.string().min(1).max(500).describe('Path of the page, e.g. "docs/search"') },
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    async ({ path }) => {
      const page = docs.page(path)
      if (!page) {
        const known = docs.pages.map((p) => p.path).join(', ') || 'none'
        return { isError: true, content: [{ type: 'text', text: `No documentation page "${path}"; the pages are: ${known}` }] }
      }
      // The same Markdown as /docs/<path>.md. Text only: clients that prefer structuredContent would
      // otherwise hand the model metadata instead of the page.
      return { content: [{ type: 'text', text: pageMarkdown(page) }] }
    },
  )

  if (caller?.scopes.includes(CODE_SEARCH_SCOPE)) {
    const scope = { orgId: caller.orgId }
    server.registerTool(
      'search_code',
      {
        title: "Search your organisation's code",
        description:
          "Searches the code of your organisation's imported repositories by words, identifiers (parseConfig, parse_config) or a description. " +
          'Results give the repository, file path, line range and a snippet with matched words in <mark></mark>.',
        inputSchema: {
          query: query.describe('What to look for, e.g. "verify webhook signature"'),
          repositoryIds: z
            .array(z.string().min(1).max(200))
            .min(1)
            .max(100)
            .optional()
            .describe('Only these repositories (the repositoryId of earlier results or of the import). Default: all of them'),
          limit: z.number().int().min(1).max(MAX_LIMIT).optional().describe(`Results wanted, 1-${MAX_LIMIT}. Default 10`),
        },
        outputSchema: { query: z.string(), results: z.array(codeHit) },
        annotations: { readOnlyHint: true, openWorldHint: false },
      },
      async ({ query, repositoryIds, limit }) => {
        const results = await codeIndex.search(scope, { query, repositoryIds, limit: limit ?? 10, mode: 'hybrid', expand: false })
        meter?.record({ orgId: caller.orgId, userId: caller.userId, kind: 'search' })
        const listed = results.map((r) => ({ ...r, language: r.language ?? null, score: Number(r.score.toFixed(4)) }))
        return { content: [{ type: 'text', text: json({ query, results: listed }) }], structuredContent: { query, results: listed } }
      },
    )
  }
  return server
}
