/**
 * Builds the model catalogue from the configuration: the OPENAI_* provider (over the `openai` package) and each of
 * MODEL_PROVIDERS, an `openai-compatible` one the same way and `anthropic` and `google` through the AI SDK's own
 * provider packages, whose requests go through the service's outbound client.
 */
import type { HttpClient } from '../http.ts'
import { createAiSdkProvider } from './ai-sdk-provider.ts'
import { createModelCatalogue, type CatalogueProvider, type ModelCatalogue, type ProviderKind } from './model-catalogue.ts'
import { createOpenAiProvider, type ModelProvider } from './provider.ts'

export interface ModelProvidersConfig {
  /** OPENAI_API_KEY / OPENAI_BASE_URL; undefined when neither is set. */
  provider?: { apiKey?: string; baseUrl?: string }
  /** MODEL_PROVIDERS with their keys resolved. */
  providers: readonly { name: string; kind: ProviderKind; baseUrl?: string; apiKey?: string; models: readonly string[] }[]
  /** CHAT_MODEL. */
  model: string
  upstreamTimeoutMs: number
  upstreamIdleMs: number
}

/** The name the OPENAI_* provider has in GET /api/models. */
export const IMPLICIT_PROVIDER = 'openai'

/** Undefined when no provider is configured. `implicit` stands in for the OPENAI_* provider (tests hand a fake). */
export function buildModelCatalogue(config: ModelProvidersConfig, http: HttpClient, implicit?: ModelProvider): ModelCatalogue | undefined {
  const timing = { timeoutMs: config.upstreamTimeoutMs, idleMs: config.upstreamIdleMs }
  const first = implicit ?? (config.provider && createOpenAiProvider({ apiKey: config.provider.apiKey, baseUrl: config.provider.baseUrl, ...timing }))
  const named: CatalogueProvider[] = config.providers.map((p) => ({
    name: p.name,
    models: p.models,
    provider:
      p.kind === 'openai-compatible'
        ? createOpenAiProvider({ apiKey: p.apiKey, baseUrl: p.baseUrl, ...timing })
        : createAiSdkProvider({ kind: p.kind, name: p.name, apiKey: p.apiKey ?? '', baseUrl: p.baseUrl, http, ...timing }),
  }))
  if (!first && !named.length) return undefined
  // CHAT_MODEL names a model of the OPENAI_* provider unless it names one of MODEL_PROVIDERS.
  const chatModelIsNamed = named.some((p) => config.model.startsWith(`${p.name}/`))
  return createModelCatalogue({
    implicit: first && { name: IMPLICIT_PROVIDER, provider: first, models: chatModelIsNamed ? [] : [config.model] },
    named,
    chatModel: config.model,
  })
}
