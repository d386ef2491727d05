import { t } from 'elysia'
import { oneOf, strictObject } from '../../src/schemas.ts'
import { CALLBACK_ERRORS } from './flow.ts'
import { DISCONNECTED_REASONS } from './status.ts'

export const providerParams = t.Object({
  provider: t.String({ description: 'Provider id: github, supabase, or one from OAUTH_PROVIDERS', examples: ['github'] }),
})

export const connectBody = t.Optional(
  strictObject({
    scopes: t.Optional(
      t.Array(t.String({ pattern: '^[\\x21\\x23-\\x5B\\x5D-\\x7E]{1,100}$', description: 'A scope as the provider names it' }), {
        maxItems: 50,
        description: "Scopes to ask for; default the provider's configured scopes (GITHUB_SCOPES for GitHub)",
      }),
    ),
    returnTo: t.Optional(
      t.String({ minLength: 1, maxLength: 2000, description: 'Front-end page to come back to: a path, or a URL on the origin of INTEGRATIONS_RETURN_URL' }),
    ),
    redirect: t.Optional(t.Boolean({ description: 'Answer 302 with Location instead of 200 (the body is the same)' })),
  }),
)

export const connectAnswer = t.Object({
  provider: t.String(),
  authorizationUrl: t.String({ description: 'Send the browser here to authorise' }),
  redirectUri: t.String({ description: 'The callback the provider must have registered, matched exactly' }),
  expiresAt: t.String({ format: 'date-time', description: 'The flow must come back through the callback before this' }),
})

export const callbackQuery = t.Object(
  {
    state: t.Optional(t.String({ maxLength: 512 })),
    code: t.Optional(t.String({ maxLength: 2048 })),
    error: t.Optional(t.String({ maxLength: 256 })),
    error_description: t.Optional(t.String({ maxLength: 2048 })),
  },
  // Providers add their own parameters (iss, installation_id...); they are ignored, not refused.
  { additionalProperties: true },
)

export const callbackRedirect = t.String({
  description:
    'Empty body; Location is the front-end page with integration=<provider>&status=connected, or status=error&error=' +
    CALLBACK_ERRORS.join('|') +
    " (and provider_error with the provider's OAuth error code when there is one)",
})

export const statusQuery = t.Object({
  fresh: t.Optional(t.BooleanString({ description: 'Ask the provider even when a cached status exists' })),
})

const account = t.Nullable(
  t.Object({
    id: t.String(),
    name: t.String({ description: 'Login (GitHub), organisation (Supabase), or the configured name field' }),
    url: t.Optional(t.String()),
  }),
)

const common = {
  provider: t.String(),
  label: t.String(),
  connected: t.Boolean(),
  reason: t.Optional(oneOf(DISCONNECTED_REASONS, { description: 'Why it is not connected' })),
  account,
  scopes: t.Array(t.String(), { description: 'Scopes granted (as the provider last reported them)' }),
  expiresAt: t.Nullable(t.String({ format: 'date-time', description: "Access token expiry; null when the provider's tokens do not expire" })),
  connectedAt: t.Nullable(t.String({ format: 'date-time' })),
  verifiedAt: t.Nullable(t.String({ format: 'date-time', description: "When the token last worked against the provider's API" })),
}

export const integrationStatus = t.Object({
  ...common,
  detail: t.Optional(t.String()),
  metadata: t.Record(t.String(), t.Unknown(), { description: 'Provider-specific: GitHub login, name, avatar; Supabase organisations and projects' }),
  cached: t.Boolean({ description: 'Served from the status cache (also x-cache: HIT or MISS)' }),
})

export const integrationList = t.Object({
  providers: t.Array(
    t.Object({
      ...common,
      kind: oneOf(['builtin', 'generic'] as const),
      configured: t.Boolean(),
      variables: t.Optional(t.Array(t.String(), { description: 'Settings that would configure it' })),
    }),
  ),
})

export const disconnectAnswer = t.Object({
  provider: t.String(),
  disconnected: t.Boolean({ description: 'False when there was no connection' }),
  revocation: oneOf(['revoked', 'unsupported', 'failed', 'none'] as const, {
    description: 'revoked at the provider; unsupported (the provider has no revocation); failed (tokens forgotten anyway); none (nothing to revoke)',
  }),
})
