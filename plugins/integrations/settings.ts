/**
 * The integrations' slice of the configuration: the built-in OAuth apps (GitHub, Supabase), the generic providers
 * of OAUTH_PROVIDERS, and the connection flow's pages and lifetimes.
 */
import { defineSettings, integer, list, text, url, type SettingsOf } from '../../src/config.ts'
import { parseGenericProviders } from './providers/generic.ts'

export const integrationsSettings = defineSettings({
  title: 'Integrations',
  variables: {
    GITHUB_CLIENT_ID: { doc: 'OAuth app client id for the code-hosting provider', parse: text },
    GITHUB_CLIENT_SECRET: { doc: 'OAuth app client secret for the code-hosting provider', parse: text },
    SUPABASE_CLIENT_ID: { doc: 'OAuth app client id for the database platform', parse: text },
    SUPABASE_CLIENT_SECRET: { doc: 'OAuth app client secret for the database platform', parse: text },
    GITHUB_AUTHORIZE_URL: { doc: 'GitHub OAuth authorize endpoint', parse: url('http:', 'https:'), fallback: 'https://github.com/login/oauth/authorize' },
    GITHUB_TOKEN_URL: { doc: 'GitHub OAuth token endpoint', parse: url('http:', 'https:'), fallback: 'https://github.com/login/oauth/access_token' },
    GITHUB_API_URL: {
      doc: 'GitHub REST API base (GET /user verifies a connection; grants are revoked there)',
      parse: url('http:', 'https:'),
      fallback: 'https://api.github.com',
    },
    GITHUB_SCOPES: { doc: 'Comma-separated GitHub scopes asked for when a connection names none', parse: list, fallback: ['repo', 'read:user'] },
    SUPABASE_AUTHORIZE_URL: {
      doc: 'Supabase OAuth authorize endpoint',
      parse: url('http:', 'https:'),
      fallback: 'https://api.supabase.com/v1/oauth/authorize',
    },
    SUPABASE_TOKEN_URL: { doc: 'Supabase OAuth token endpoint', parse: url('http:', 'https:'), fallback: 'https://api.supabase.com/v1/oauth/token' },
    SUPABASE_API_URL: {
      doc: 'Supabase Management API base (organisations and projects verify a connection)',
      parse: url('http:', 'https:'),
      fallback: 'https://api.supabase.com',
    },
    SUPABASE_REVOKE_URL: { doc: 'Supabase OAuth revocation endpoint', parse: url('http:', 'https:'), fallback: 'https://api.supabase.com/v1/oauth/revoke' },
    OAUTH_PROVIDERS: {
      doc: 'Generic OAuth 2.0 providers as a JSON object keyed by id (GitLab, Vercel, Netlify...); see the Integrations section',
      parse: text,
    },
    INTEGRATIONS_RETURN_URL: {
      doc: 'Front-end page the OAuth callback redirects to with the outcome; default PUBLIC_BASE_URL/integrations',
      parse: url('http:', 'https:'),
    },
    OAUTH_STATE_TTL_SECONDS: { doc: 'How long a started connection may take to come back through the callback', parse: integer(30, 3600), fallback: 600 },
    INTEGRATIONS_STATUS_CACHE_TTL_SECONDS: {
      doc: 'How long a verified connection status is reused before the provider is asked again (0 = never)',
      parse: integer(0, 3600),
      fallback: 60,
    },
  },
  build: (v, report) => {
    for (const [id, clientId, clientSecret] of [
      ['GITHUB', v.GITHUB_CLIENT_ID, v.GITHUB_CLIENT_SECRET],
      ['SUPABASE', v.SUPABASE_CLIENT_ID, v.SUPABASE_CLIENT_SECRET],
    ] as const)
      if ((clientId === undefined) !== (clientSecret === undefined)) report.problem(`${id}_CLIENT_ID and ${id}_CLIENT_SECRET must be set together`)
    const generic = parseGenericProviders(v.OAUTH_PROVIDERS, ['github', 'supabase'])
    for (const problem of generic.problems) report.problem(problem)
    if (!v.GITHUB_CLIENT_ID && !v.SUPABASE_CLIENT_ID && !v.OAUTH_PROVIDERS)
      report.unconfigured('OAuth apps (GITHUB_CLIENT_ID, SUPABASE_CLIENT_ID or OAUTH_PROVIDERS)')
    return {
      integrations: {
        /** Front-end page the OAuth callback redirects to. */
        returnUrl: v.INTEGRATIONS_RETURN_URL ?? `${v.PUBLIC_BASE_URL}/integrations`,
        stateTtlSeconds: v.OAUTH_STATE_TTL_SECONDS,
        statusCacheTtlSeconds: v.INTEGRATIONS_STATUS_CACHE_TTL_SECONDS,
        github: {
          clientId: v.GITHUB_CLIENT_ID,
          clientSecret: v.GITHUB_CLIENT_SECRET,
          authorizeUrl: v.GITHUB_AUTHORIZE_URL,
          tokenUrl: v.GITHUB_TOKEN_URL,
          apiUrl: v.GITHUB_API_URL,
          revokeUrl: undefined as string | undefined,
          scopes: v.GITHUB_SCOPES,
        },
        supabase: {
          clientId: v.SUPABASE_CLIENT_ID,
          clientSecret: v.SUPABASE_CLIENT_SECRET,
          authorizeUrl: v.SUPABASE_AUTHORIZE_URL,
          tokenUrl: v.SUPABASE_TOKEN_URL,
          apiUrl: v.SUPABASE_API_URL,
          revokeUrl: v.SUPABASE_REVOKE_URL as string | undefined,
          scopes: [] as string[],
        },
        /** Providers from OAUTH_PROVIDERS. */
        generic: generic.providers,
      },
    }
  },
})

export type IntegrationsSettings = SettingsOf<typeof integrationsSettings>['integrations']

/** The OAuth app of a built-in integration provider; the client pair is unset until configured. */
export type OAuthAppSettings = IntegrationsSettings['github' | 'supabase']
