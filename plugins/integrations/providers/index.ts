import type { IntegrationsSettings, OAuthAppSettings } from '../settings.ts'
import { genericProvider } from './generic.ts'
import { github } from './github.ts'
import type { Provider, ProviderDefinition } from './provider.ts'
import { supabase } from './supabase.ts'

export type { Provider, ProviderDefinition } from './provider.ts'

function builtin(definition: ProviderDefinition, app: OAuthAppSettings): Provider {
  const { clientId, clientSecret } = app
  return Object.freeze({
    definition,
    endpoints: Object.freeze({ authorizeUrl: app.authorizeUrl, tokenUrl: app.tokenUrl, apiUrl: app.apiUrl, revokeUrl: app.revokeUrl }),
    client: clientId && clientSecret ? Object.freeze({ clientId, clientSecret }) : undefined,
    scopes: app.scopes,
  })
}

/** Every provider the service knows, in the order they are listed: built-ins first, then OAUTH_PROVIDERS. */
export function providersFromConfig(integrations: IntegrationsSettings): Provider[] {
  return [
    builtin(github, integrations.github),
    builtin(supabase, integrations.supabase),
    ...integrations.generic.map((settings) =>
      Object.freeze({
        definition: genericProvider(settings),
        endpoints: Object.freeze({
          authorizeUrl: settings.authorizeUrl,
          tokenUrl: settings.tokenUrl,
          apiUrl: new URL(settings.accountUrl).origin,
          revokeUrl: settings.revokeUrl,
        }),
        client: Object.freeze({ clientId: settings.clientId, clientSecret: settings.clientSecret }),
        scopes: settings.scopes,
      }),
    ),
  ]
}
