/**
 * The API explorer's page: Scalar's HTML integration (its configuration in the `data-configuration` attribute of an
 * empty `#api-reference` script element, read by the pinned script) with nothing inline to run, so the page keeps to
 * a `script-src 'self'` policy. An empty script element is never executed, so the browser reports no violation.
 */

/**
 * Scalar's features that talk to its vendor's servers, switched off: the "Ask AI" agent (it sends the document to
 * Scalar's service), the developer tools bar ("Generate MCP", "Deploy", "Share"; shown on localhost by default),
 * the MCP panel and telemetry. What is left works on this origin alone: the reference and its request client.
 */
export const EXPLORER_OFFLINE = {
  agent: { disabled: true },
  mcp: { disabled: true },
  showDeveloperTools: 'never',
  telemetry: false,
} as const

/**
 * Run before the explorer's script: the Zod it bundles would otherwise probe `Function('')` to see whether it may
 * compile validators, which `script-src 'self'` refuses (caught, but reported as a violation). `jitless` is Zod's own
 * setting for pages without eval, read from this global.
 */
export const EXPLORER_SETUP_SCRIPT = 'globalThis.__zod_globalConfig = Object.assign(globalThis.__zod_globalConfig ?? {}, { jitless: true })\n'

const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`)

/** The page for a document at `documentUrl` (relative to the page), the explorer's script and its setup script. */
export function explorerPage(options: { title: string; description: string; documentUrl: string; scriptPath: string; setupPath: string }): string {
  const configuration = { url: options.documentUrl, withDefaultFonts: false, _integration: 'elysiajs', ...EXPLORER_OFFLINE }
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(options.title)}</title>
<meta name="description" content="${escapeHtml(options.description)}">
<link rel="icon" href="data:,">
</head>
<body>
<script id="api-reference" data-configuration="${escapeHtml(JSON.stringify(configuration))}"></script>
<script src="${escapeHtml(options.setupPath)}"></script>
<script src="${escapeHtml(options.scriptPath)}"></script>
</body>
</html>
`
}
