import { t } from 'elysia'
import { ROLES, SCOPES } from '../../src/auth/roles.ts'
import { integer, oneOf, strictObject } from '../../src/schemas.ts'

const email = t.String({ format: 'email', maxLength: 254, description: 'Account email (case-insensitive)' })

export const loginBody = strictObject({
  email,
  password: t.String({ minLength: 1, maxLength: 1024 }),
})

export const registerBody = strictObject({
  email,
  password: t.String({ minLength: 12, maxLength: 1024, description: 'At least 12 characters' }),
  organizationName: t.Optional(t.String({ minLength: 1, maxLength: 200 })),
})

/** A refresh token in the body; none (or no body) with `X-Session: cookie` means the session cookie's. */
export const refreshBody = t.Optional(
  strictObject({
    refreshToken: t.Optional(t.String({ minLength: 1, maxLength: 512, description: 'Required unless the request sends X-Session: cookie' })),
  }),
)

const role = oneOf(ROLES)
const scope = oneOf(SCOPES)

export const tokenPair = t.Object({
  accessToken: t.String({ description: 'JWT (HS256, typ at+jwt) to send as Authorization: Bearer' }),
  tokenType: t.Literal('Bearer'),
  expiresIn: integer({ description: 'Seconds until the access token expires' }),
  refreshToken: t.String({ description: 'Opaque, single-use; exchange at /auth/refresh' }),
  refreshExpiresIn: integer(),
  scopes: t.Array(scope),
  user: t.Object({ id: t.String(), email: t.String(), role, organizationId: t.String() }),
})

/** What sign-in and refresh answer: with `X-Session: cookie` the refresh token is in the cookie instead. */
export const sessionTokens = t.Composite([
  t.Omit(tokenPair, ['refreshToken']),
  t.Object({
    refreshToken: t.Optional(
      t.String({ description: 'Opaque, single-use; exchange at /auth/refresh. Absent with X-Session: cookie, which sets the session cookie instead' }),
    ),
  }),
])

export const me = t.Object({
  userId: t.String(),
  organizationId: t.String(),
  role,
  scopes: t.Array(scope),
  plan: t.String(),
  source: t.Union([t.Literal('local'), t.Literal('external'), t.Literal('api_key')], {
    description: "local: a token this service issued; external: the identity provider's; api_key: a personal API key",
  }),
})
