// The asset import's type, named here so the app's type also checks in projects that import it (Eden clients).
/// <reference path="./assets.d.ts" />
import { openapi } from '@elysiajs/openapi'
import { Elysia } from 'elysia'
import pkg from '../../package.json' with { type: 'json' }
// The explorer's script, served by the service from the pinned package (and carried inside the single executable),
// so /swagger works offline and its Content-Security-Policy can name only this origin.
import scalarScript from '../../node_modules/@scalar/api-reference/dist/browser/standalone.js' with { type: 'file' }
import { asyncApiDocument } from './asyncapi.ts'
import { completeDocument, type RouteEntry } from './openapi-contract.ts'
export { docsSettings } from './settings.ts'

/** Path of the generated OpenAPI document. */
export const OPENAPI_JSON_PATH = '/swagger/json'
/** Path of the AsyncAPI document: the agent WebSocket's messages and the chat stream's events. */
export const ASYNCAPI_JSON_PATH = '/asyncapi.json'
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

const INFO = {
  title: 'Real-time AI development platform API',
  version: pkg.version,
  description:
    'Streaming chat, agents, integrations, billing and search. Errors are application/problem+json (the `Problem` schema) with a stable `code`. ' +
    'Any route may also answer 405 (wrong method, with Allow), 414 or 431 (request head too large) and 500. ' +
    `The agent WebSocket's messages and the chat stream's events are described by the AsyncAPI document at ${ASYNCAPI_JSON_PATH}.`,
}

/**
 * The OpenAPI document built by @elysiajs/openapi from every route's TypeBox schemas and completed with what the
 * core adds to every route (./openapi-contract.ts), its explorer at /swagger, and the AsyncAPI document.
 */
export function openApiPlugin() {
  const plugin = new Elysia({ name: 'openapi' })
  // The route table, once every plugin is registered (Elysia hands a used plugin its root's routes).
  const routes = () => (plugin as unknown as { getGlobalRoutes(): RouteEntry[] }).getGlobalRoutes()
  // The generator's document is built once and kept; so is its completion.
  const completed = new WeakMap<object, object>()
  let asyncApi: object | undefined
  return plugin
    .onAfterHandle(({ path, set, responseValue }) => {
      if (path === EXPLORER_PATH) set.headers['content-security-policy'] = EXPLORER_CSP
      if (path === OPENAPI_JSON_PATH && responseValue && typeof responseValue === 'object') {
        let document = completed.get(responseValue)
        if (!document) completed.set(responseValue, (document = completeDocument(responseValue, routes())))
        return document
      }
    })
    .get(EXPLORER_SCRIPT_PATH, ({ set }) => {
      set.headers['cache-control'] = 'public, max-age=86400'
      return Bun.file(scalarScript)
    }, { detail: { hide: true } })
    .get(ASYNCAPI_JSON_PATH, () => (asyncApi ??= asyncApiDocument({ title: INFO.title, version: INFO.version })), { detail: { hide: true } })
    .use(
      openapi({
        path: EXPLORER_PATH,
        specPath: OPENAPI_JSON_PATH,
        // The WebSocket route is described by its plain GET (101 or a refusal) and by the AsyncAPI document.
        exclude: { methods: ['options', 'ws'] },
        scalar: { cdn: EXPLORER_SCRIPT_PATH, withDefaultFonts: false },
        documentation: {
          info: INFO,
          servers: [{ url: '/', description: 'This service: the origin the document is served from' }],
          components: {
            securitySchemes: { bearer: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' } },
          },
        },
      }),
    )
}
