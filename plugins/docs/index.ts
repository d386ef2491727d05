import { swagger } from '@elysiajs/swagger'
import { Elysia } from 'elysia'
import pkg from '../../package.json' with { type: 'json' }
// The explorer's script, served by the service from the pinned package (and carried inside the single executable),
// so /swagger works offline and its Content-Security-Policy can name only this origin.
import scalarScript from '../../node_modules/@scalar/api-reference/dist/browser/standalone.js' with { type: 'file' }

/** Path of the generated OpenAPI document. */
export const OPENAPI_JSON_PATH = '/swagger/json'
const EXPLORER_PATH = '/swagger'
const EXPLORER_SCRIPT_PATH = '/swagger/explorer.js'

/**
 * The explorer page runs only its own script; Scalar sets styles inline and calls the API it documents.
 * Fonts come with the script (`withDefaultFonts: false`), so nothing leaves the origin.
 */
export const EXPLORER_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data: blob:",
  "font-src 'self' data:",
  "connect-src 'self'",
  "worker-src 'self' blob:",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ')

/** The OpenAPI document built from every route's TypeBox schemas, and its explorer at /swagger. */
export function openApiPlugin() {
  return new Elysia({ name: 'openapi' })
    .onAfterHandle(({ path, set }) => {
      if (path === EXPLORER_PATH) set.headers['content-security-policy'] = EXPLORER_CSP
    })
    .get(EXPLORER_SCRIPT_PATH, ({ set }) => {
      set.headers['cache-control'] = 'public, max-age=86400'
      return Bun.file(scalarScript)
    }, { detail: { hide: true } })
    .use(
      swagger({
        path: EXPLORER_PATH,
        specPath: OPENAPI_JSON_PATH,
        exclude: [EXPLORER_PATH, OPENAPI_JSON_PATH, EXPLORER_SCRIPT_PATH],
        scalarCDN: EXPLORER_SCRIPT_PATH,
        scalarConfig: { withDefaultFonts: false },
        documentation: {
          info: {
            title: 'Real-time AI development platform API',
            version: pkg.version,
            description: 'Streaming chat, agents, integrations, billing and search. Errors are application/problem+json.',
          },
          components: {
            securitySchemes: { bearer: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' } },
          },
        },
      }),
    )
}
