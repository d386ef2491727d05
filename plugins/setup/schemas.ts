import { t } from 'elysia'
import { strictObject } from '../../src/schemas.ts'

/** POST /setup, as JSON or as the setup page's form posts it (every field a string either way). */
export const setupBody = strictObject({
  code: t.String({ minLength: 1, maxLength: 64, description: 'The one-time setup code from the start-up log; case, spaces and dashes do not matter' }),
  email: t.String({ format: 'email', maxLength: 254, description: 'Email of the first owner (case-insensitive)' }),
  password: t.String({ minLength: 12, maxLength: 1024, description: 'At least 12 characters' }),
  organizationName: t.String({ minLength: 1, maxLength: 200, description: 'Name of the organisation the owner owns' }),
})

export type SetupBody = typeof setupBody.static

const link = (description: string) => t.String({ description })

/** GET / for API clients: what the service is and where to go. */
export const landing = t.Object({
  name: t.String(),
  version: t.String(),
  setup: t.Object({
    open: t.Boolean({ description: 'True while no user exists: create the first owner at /setup with the code from the start-up log' }),
  }),
  links: t.Object({
    docs: link('The documentation site'),
    explorer: link('The API explorer'),
    openapi: link('The OpenAPI document'),
    playground: link('A page that signs in and tries chat, enhanced chat and agents'),
    health: link('Liveness'),
    login: link('POST here to sign in'),
    setup: t.Optional(link('Where the first owner is created; present while setup is open')),
  }),
})

export type Landing = typeof landing.static

export const htmlPage = (description: string) => t.String({ description: `${description} (text/html)` })
