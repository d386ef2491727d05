import { Elysia, t } from 'elysia'
import type { PlaygroundAssets } from './bundle.ts'

/** The page runs only its own script and stylesheet, and talks only to this origin (fetch and WebSocket). */
export const PLAYGROUND_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ')

const PAGE_PATH = '/playground'
const SCRIPT_PATH = '/playground/app.js'
const STYLE_PATH = '/playground/app.css'

let loading: Promise<PlaygroundAssets> | undefined
/** Built on first use (see assets.ts); the single executable carries them already built. */
const assets = () => (loading ??= import('./assets.ts').then((m) => m.PLAYGROUND_ASSETS))

/** An asset with its ETag; browsers revalidate each time (no-cache) and mostly get a 304. */
function serve(request: Request, body: string, hash: string, contentType: string, extra: Record<string, string> = {}): Response {
  const etag = `"${hash}"`
  const headers = { etag, 'cache-control': 'no-cache', 'content-type': contentType, 'x-content-type-options': 'nosniff', ...extra }
  if (request.headers.get('if-none-match') === etag) return new Response(null, { status: 304, headers })
  return new Response(body, { headers })
}

const htmlDoc = {
  200: { description: 'The playground page', content: { 'text/html': { schema: { type: 'string' } } } },
  304: { description: 'Not modified since the ETag given in If-None-Match' },
} as const

/**
 * GET /playground: a page that signs in (POST /auth/login) and tries chat, enhanced chat and an agent task
 * with the AI SDK's client, plus its script and stylesheet. Public: the page holds nothing until one signs in.
 */
export function playgroundPlugin() {
  return new Elysia({ name: 'playground', detail: { tags: ['playground'] } })
    .get(
      PAGE_PATH,
      async ({ request }) => {
        const { html, hashes } = await assets()
        return serve(request, html, hashes.html, 'text/html; charset=utf-8', {
          'content-security-policy': PLAYGROUND_CSP,
          'referrer-policy': 'no-referrer',
        })
      },
      {
        response: { 200: t.String({ description: 'The playground page (text/html)' }), 304: t.Void() },
        detail: {
          summary: 'A page that signs in and tries chat, enhanced chat and agent tasks',
          description: 'HTML for browsers, under a strict Content-Security-Policy; its script and stylesheet are served beside it.',
          responses: htmlDoc,
        },
      },
    )
    .get(
      SCRIPT_PATH,
      async ({ request }) => {
        const { script, hashes } = await assets()
        return serve(request, script, hashes.script, 'text/javascript; charset=utf-8')
      },
      { response: { 200: t.String(), 304: t.Void() }, detail: { hide: true } },
    )
    .get(
      STYLE_PATH,
      async ({ request }) => {
        const { style, hashes } = await assets()
        return serve(request, style, hashes.style, 'text/css; charset=utf-8')
      },
      { response: { 200: t.String(), 304: t.Void() }, detail: { hide: true } },
    )
}
