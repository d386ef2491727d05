/**
 * The model provider as the plugins that ask it are handed it: chat, enhanced chat, the agents and the
 * documentation assistant share one, with the models offered and the default, and refuse alike when none is
 * configured. Which model a request uses: the one it names when offered (else 422 naming those offered), else its
 * organisation's default, else the service's (CHAT_MODEL).
 */
import { AppError } from '../errors.ts'
import type { CatalogueModel } from './model-catalogue.ts'
import type { ModelProvider } from './provider.ts'

/** The settings that configure a provider, named when there is none. */
export const PROVIDER_VARIABLES: readonly string[] = ['OPENAI_API_KEY', 'OPENAI_BASE_URL', 'MODEL_PROVIDERS']

/** Each organisation's chosen default model (a column of organizations). */
export interface OrgModelDefaults {
  get(orgId: string): Promise<string | undefined>
  set(orgId: string, model: string | null): Promise<void>
}

export interface Models {
  /** False without a provider: what needs one answers 503 `not_configured`. */
  readonly configured: boolean
  /** The provider; throws the 503 `not_configured` problem when there is none. */
  provider(): ModelProvider
  /** The service's default model (CHAT_MODEL when offered, else the first listed). */
  readonly model: string
  /** The settings that configure a provider (PROVIDER_VARIABLES). */
  readonly settings: readonly string[]
  /** Every model offered, in the order configured. */
  readonly catalogue: readonly CatalogueModel[]
  /** The organisation's default: its own choice while still offered, else the service's. */
  defaultFor(orgId: string): Promise<string>
  /** The model a request uses: `requested` when offered (else 422 naming those offered), else the organisation's default. */
  modelFor(orgId: string, requested?: string): Promise<string>
  /** Sets (or with null clears) the organisation's default; a model not offered is 422. */
  setDefault(orgId: string, model: string | null): Promise<void>
}

export function providerNotConfigured(): AppError {
  return new AppError(
    'not_configured',
    'Chat has no model provider; set OPENAI_API_KEY (OpenAI), OPENAI_BASE_URL (any OpenAI-compatible server) or MODEL_PROVIDERS',
    { extensions: { variables: PROVIDER_VARIABLES } },
  )
}

const noDefaults: OrgModelDefaults = { get: async () => undefined, set: async () => {} }

/** `provider` undefined when none is configured; without a catalogue, `model` is the one model offered. */
export function createModels(
  provider: ModelProvider | undefined,
  model: string,
  options: { catalogue?: readonly CatalogueModel[]; orgDefaults?: OrgModelDefaults } = {},
): Models {
  const catalogue = options.catalogue ?? [{ id: model, provider: 'openai' }]
  const offered = new Set(catalogue.map((m) => m.id))
  const orgDefaults = options.orgDefaults ?? noDefaults
  const check = (field: string, id: string) => {
    if (offered.has(id)) return id
    const allowed = [...offered]
    const message = `must be one of ${allowed.join(', ')}`
    throw new AppError('validation_failed', `${field}: ${message}`, { errors: [{ field, message }], extensions: { allowed } })
  }
  const defaultFor = async (orgId: string) => {
    const chosen = await orgDefaults.get(orgId)
    return chosen && offered.has(chosen) ? chosen : model
  }
  return {
    configured: provider !== undefined,
    provider() {
      if (provider) return provider
      throw providerNotConfigured()
    },
    model,
    settings: PROVIDER_VARIABLES,
    catalogue,
    defaultFor,
    modelFor: async (orgId, requested) => (requested === undefined ? defaultFor(orgId) : check('model', requested)),
    setDefault: (orgId, chosen) => orgDefaults.set(orgId, chosen === null ? null : check('model', chosen)),
  }
}
