import { swagger } from '@elysiajs/swagger'
import { Elysia } from 'elysia'
import pkg from '../../package.json' with { type: 'json' }

/** Path of the generated OpenAPI document. */
export const OPENAPI_JSON_PATH = '/swagger/json'

/** The OpenAPI document built from every route's TypeBox schemas, and its explorer at /swagger. */
export function openApiPlugin() {
  return new Elysia({ name: 'openapi' }).use(
    swagger({
      path: '/swagger',
      specPath: OPENAPI_JSON_PATH,
      exclude: ['/swagger', OPENAPI_JSON_PATH],
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
