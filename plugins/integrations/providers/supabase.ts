import { AppError } from '../../../src/errors.ts'
import { asRecord, asText, type ProviderDefinition } from './provider.ts'

const records = (value: unknown) => (Array.isArray(value) ? value.map(asRecord) : undefined)

/**
 * The Supabase Management API's OAuth apps. A grant is given for one organisation, so the connected
 * account is that organisation; the status lists its organisations and projects.
 */
export const supabase: ProviderDefinition = {
  id: 'supabase',
  label: 'Supabase',
  kind: 'builtin',
  variables: ['SUPABASE_CLIENT_ID', 'SUPABASE_CLIENT_SECRET'],
  clientAuth: 'basic',
  // The Management API has no scopes to ask for: the app's permissions are set where it is registered.
  scopeSeparator: ' ',

  async verify(api) {
    const [organizationsAnswer, projectsAnswer] = await Promise.all([api.get('/v1/organizations'), api.get('/v1/projects')])
    const organizations = records(organizationsAnswer.body)
    const projects = records(projectsAnswer.body)
    if (!organizations || !projects)
      throw new AppError('upstream_error', 'Supabase answered without organisation and project lists', { extensions: { provider: 'supabase' } })
    const first = organizations[0]
    return {
      account: first ? { id: asText(first.id) ?? '', name: asText(first.name) ?? asText(first.id) ?? '' } : { id: '', name: '' },
      metadata: {
        organizations: organizations.map((o) => ({ id: asText(o.id) ?? null, name: asText(o.name) ?? null })),
        projects: projects.map((p) => ({
          id: asText(p.id) ?? asText(p.ref) ?? null,
          name: asText(p.name) ?? null,
          organizationId: asText(p.organization_id) ?? null,
          region: asText(p.region) ?? null,
          status: asText(p.status) ?? null,
        })),
      },
    }
  },

  // Revoking the refresh token ends the authorisation and every token it issued.
  revocation: ({ refreshToken }, client, endpoints) =>
    refreshToken && endpoints.revokeUrl
      ? {
          url: endpoints.revokeUrl,
          init: {
            method: 'POST',
            headers: { 'content-type': 'application/json', accept: 'application/json' },
            body: JSON.stringify({ client_id: client.clientId, client_secret: client.clientSecret, refresh_token: refreshToken }),
          },
        }
      : undefined,
}
