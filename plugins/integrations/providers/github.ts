import { AppError } from '../../../src/errors.ts'
import { asRecord, asText, basicAuthorization, type ProviderDefinition } from './provider.ts'

/**
 * GitHub OAuth apps (and GitHub Apps' user tokens, which expire and come with refresh tokens).
 * The token is verified with GET /user; the scopes it carries are in the X-OAuth-Scopes header.
 */
export const github: ProviderDefinition = {
  id: 'github',
  label: 'GitHub',
  kind: 'builtin',
  variables: ['GITHUB_CLIENT_ID', 'GITHUB_CLIENT_SECRET'],
  clientAuth: 'body',
  scopeSeparator: ' ',
  // GitHub refuses API calls without a User-Agent.
  apiHeaders: { accept: 'application/vnd.github+json', 'x-github-api-version': '2022-11-28', 'user-agent': 'realtime-ai-backend' },

  async verify(api) {
    const me = await api.get('/user')
    const user = asRecord(me.body)
    const id = asText(user.id)
    const login = asText(user.login)
    if (!id || !login) throw new AppError('upstream_error', 'GitHub answered GET /user without an id and login', { extensions: { provider: 'github' } })
    // Fine-grained and GitHub App tokens have no OAuth scopes, and GitHub leaves the header out for them.
    const header = me.headers.get('x-oauth-scopes')
    return {
      account: { id, name: login, url: asText(user.html_url) },
      scopes:
        header === null
          ? undefined
          : header
              .split(',')
              .map((s) => s.trim())
              .filter(Boolean),
      metadata: { login, name: asText(user.name) ?? null, avatarUrl: asText(user.avatar_url) ?? null, type: asText(user.type) ?? null },
    }
  },

  // Deleting the app authorisation revokes every token the grant issued, not just this one.
  revocation: ({ accessToken }, client, endpoints) => ({
    url: `${endpoints.apiUrl}/applications/${encodeURIComponent(client.clientId)}/grant`,
    init: {
      method: 'DELETE',
      headers: {
        authorization: basicAuthorization(client),
        accept: 'application/vnd.github+json',
        'content-type': 'application/json',
        'user-agent': 'realtime-ai-backend',
      },
      body: JSON.stringify({ access_token: accessToken }),
    },
  }),
}
