/** The documentation site's slice of the configuration. */
import { defineSettings, url } from '../../src/config.ts'

export const docsSettings = defineSettings({
  title: 'Documentation site',
  variables: {
    DOCS_MCP_URL: { doc: 'Public URL of the hosted MCP server the documentation menu hands out; default PUBLIC_BASE_URL/mcp', parse: url('http:', 'https:') },
  },
  build: (v) => ({
    /** The documentation site at /docs. */
    docs: { mcpUrl: v.DOCS_MCP_URL ?? `${v.PUBLIC_BASE_URL}/mcp` },
  }),
})
