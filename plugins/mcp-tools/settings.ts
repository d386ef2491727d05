/** The slice of the configuration for tools from remote MCP servers: what the service may reach, and the caps of a call. */
import { defineSettings, integer, list, url, type SettingsOf } from '../../src/config.ts'

export const mcpToolsSettings = defineSettings({
  title: 'Tools from MCP servers',
  variables: {
    MCP_TOOLS_ALLOW_HOSTS: {
      doc: 'Comma-separated host or host:port entries an MCP server URL may name on any address (a server on the private network); plain http is allowed only for these',
      parse: list,
      fallback: [] as string[],
    },
    MCP_TOOLS_RESULT_MAX_BYTES: {
      doc: 'Most text of one tool result the model reads, in bytes of UTF-8; the rest is cut with a marker saying how much was left out',
      parse: integer(1024, 4 * 1024 ** 2),
      fallback: 64 * 1024,
    },
    MCP_TOOLS_RESPONSE_MAX_BYTES: {
      doc: 'Largest HTTP response body read from an MCP server, in bytes; a longer one fails the call (tool error) without being read further',
      parse: integer(64 * 1024, 256 * 1024 ** 2),
      fallback: 16 * 1024 ** 2,
    },
    MCP_TOOLS_CALL_TIMEOUT_SECONDS: {
      doc: 'Longest an MCP server may take over one tool call (connect, initialize and tools/call) before the call fails as timed out',
      parse: integer(1, 600),
      fallback: 60,
    },
    MCP_TOOLS_RETURN_URL: {
      doc: "Front-end page an MCP server's OAuth callback redirects to with the outcome; default PUBLIC_BASE_URL/mcp-servers",
      parse: url('http:', 'https:'),
    },
  },
  build: (v) => ({
    mcpTools: {
      allowHosts: v.MCP_TOOLS_ALLOW_HOSTS.map((host) => host.toLowerCase()),
      resultMaxBytes: v.MCP_TOOLS_RESULT_MAX_BYTES,
      responseMaxBytes: v.MCP_TOOLS_RESPONSE_MAX_BYTES,
      callTimeoutMs: v.MCP_TOOLS_CALL_TIMEOUT_SECONDS * 1000,
      returnUrl: v.MCP_TOOLS_RETURN_URL ?? `${v.PUBLIC_BASE_URL}/mcp-servers`,
    },
  }),
})

export type McpToolsSettings = SettingsOf<typeof mcpToolsSettings>['mcpTools']
