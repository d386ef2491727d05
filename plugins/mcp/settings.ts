/** The MCP server's slice of the configuration. */
import { defineSettings, derived, hostList } from '../../src/config.ts'

export const mcpSettings = defineSettings({
  title: 'MCP server',
  variables: {
    MCP_ALLOWED_HOSTS: {
      doc: "Comma-separated Host values /mcp accepts besides PUBLIC_BASE_URL's host, each host or host:port exactly as clients send it (an internal name, a proxy that rewrites Host); pages there may call it too. Any other Host or Origin is refused with 403 (DNS rebinding)",
      parse: hostList,
      fallback: derived('localhost:$PORT,127.0.0.1:$PORT,[::1]:$PORT', (env) =>
        ['localhost', '127.0.0.1', '[::1]'].map((name) => `${name}:${env.PORT || 3000}`),
      ),
    },
  },
  build: (v) => ({
    /** The hosted MCP server at /mcp: Host values it accepts besides PUBLIC_BASE_URL's. */
    mcp: { allowedHosts: v.MCP_ALLOWED_HOSTS },
  }),
})
