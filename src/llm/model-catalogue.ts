/**
 * The models the service offers, from several providers at once: the implicit one of OPENAI_API_KEY /
 * OPENAI_BASE_URL (its model ids plain, as CHAT_MODEL names them) and those of MODEL_PROVIDERS (ids
 * `<provider>/<model>`). The catalogue is also one `ModelProvider` that routes each call by its model id, so every
 * caller of the model loop keeps passing a provider and a model and needs to know nothing of the list.
 */
import type { ModelProvider } from './provider.ts'

export const PROVIDER_KINDS = ['openai-compatible', 'anthropic', 'google'] as const
export type ProviderKind = (typeof PROVIDER_KINDS)[number]

/** One entry of MODEL_PROVIDERS as written, with `apiKeyEnv` still a variable's name. */
export interface ModelProviderListing {
  name: string
  kind: ProviderKind
  baseUrl?: string
  apiKey?: string
  apiKeyEnv?: string
  models: string[]
}

const NAME = /^[a-z0-9][a-z0-9-]{0,29}$/

/** Parses MODEL_PROVIDERS (a JSON array); throws an Error whose message completes "MODEL_PROVIDERS ...". */
export function parseModelProviders(raw: string): ModelProviderListing[] {
  let list: unknown
  try {
    list = JSON.parse(raw)
  } catch {
    throw new Error('must be a JSON array of providers')
  }
  if (!Array.isArray(list)) throw new Error('must be a JSON array of providers')
  const seen = new Set<string>()
  return list.map((entry, i) => {
    const where = `entry ${i}`
    if (!entry || typeof entry !== 'object') throw new Error(`${where} must be an object`)
    const { name, kind, baseUrl, apiKey, apiKeyEnv, models, ...rest } = entry as Record<string, unknown>
    const unknown = Object.keys(rest)
    if (unknown.length) throw new Error(`${where} has unknown fields: ${unknown.join(', ')}`)
    if (typeof name !== 'string' || !NAME.test(name)) throw new Error(`${where}: name must be 1-30 of a-z, 0-9 and -, starting with a letter or digit`)
    if (seen.has(name)) throw new Error(`${where}: the name ${name} is used twice`)
    seen.add(name)
    if (!PROVIDER_KINDS.includes(kind as ProviderKind)) throw new Error(`${name}: kind must be one of ${PROVIDER_KINDS.join(', ')}`)
    if (baseUrl !== undefined && (typeof baseUrl !== 'string' || !/^https?:\/\/[^\s]+$/.test(baseUrl)))
      throw new Error(`${name}: baseUrl must be an http(s) URL`)
    if (kind === 'openai-compatible' && baseUrl === undefined) throw new Error(`${name}: an openai-compatible provider needs its baseUrl`)
    if (apiKey !== undefined && (typeof apiKey !== 'string' || !apiKey)) throw new Error(`${name}: apiKey must be a non-empty string`)
    if (apiKeyEnv !== undefined && (typeof apiKeyEnv !== 'string' || !/^[A-Z_][A-Z0-9_]*$/.test(apiKeyEnv)))
      throw new Error(`${name}: apiKeyEnv must name an environment variable (A-Z, 0-9, _)`)
    if (apiKey !== undefined && apiKeyEnv !== undefined) throw new Error(`${name}: give apiKey or apiKeyEnv, not both`)
    if (kind !== 'openai-compatible' && apiKey === undefined && apiKeyEnv === undefined)
      throw new Error(`${name}: a provider of kind ${kind} needs apiKeyEnv (or apiKey)`)
    if (!Array.isArray(models) || !models.length || !models.every((m) => typeof m === 'string' && m.length > 0 && m.length <= 150))
      throw new Error(`${name}: models must be a non-empty array of model names`)
    return { name, kind: kind as ProviderKind, baseUrl, apiKey, apiKeyEnv, models } as ModelProviderListing
  })
}

export interface CatalogueModel {
  /** What a request's `model` names: plain for the implicit provider, `<provider>/<model>` otherwise. */
  id: string
  /** The provider's name (`openai` for the implicit one). */
  provider: string
}

export interface ModelCatalogue {
  readonly models: readonly CatalogueModel[]
  /** The service's default: CHAT_MODEL when it is offered, else the first model listed. */
  readonly defaultModel: string
  has(id: string): boolean
  /** Routes each call to the provider its model id names, with the provider's own model name. */
  readonly provider: ModelProvider
}

export interface CatalogueProvider {
  name: string
  provider: ModelProvider
  models: readonly string[]
}

/** `implicit` is the OPENAI_* provider, whose ids are plain; `named` come from MODEL_PROVIDERS. */
export function createModelCatalogue(parts: { implicit?: CatalogueProvider; named: readonly CatalogueProvider[]; chatModel: string }): ModelCatalogue {
  const models: CatalogueModel[] = []
  const routes = new Map<string, { provider: ModelProvider; model: string }>()
  if (parts.implicit)
    for (const model of parts.implicit.models) {
      models.push({ id: model, provider: parts.implicit.name })
      routes.set(model, { provider: parts.implicit.provider, model })
    }
  for (const named of parts.named)
    for (const model of named.models) {
      const id = `${named.name}/${model}`
      models.push({ id, provider: named.name })
      routes.set(id, { provider: named.provider, model })
    }
  const defaultModel = routes.has(parts.chatModel) ? parts.chatModel : (models[0]?.id ?? parts.chatModel)
  // A model outside the list (the image model, a caller's own choice already checked elsewhere) goes to the
  // implicit provider, or to the provider its `<provider>/` prefix names.
  const route = (id: string) => {
    const known = routes.get(id)
    if (known) return known
    const slash = id.indexOf('/')
    const named = slash > 0 ? parts.named.find((p) => p.name === id.slice(0, slash)) : undefined
    if (named) return { provider: named.provider, model: id.slice(slash + 1) }
    const fallback = parts.implicit ?? parts.named[0]
    if (!fallback) throw new Error('no model provider')
    return { provider: fallback.provider, model: id }
  }
  return {
    models,
    defaultModel,
    has: (id) => routes.has(id),
    provider: {
      stream(request, signal) {
        const { provider, model } = route(request.model)
        return provider.stream({ ...request, model }, signal)
      },
      generateImage(request, signal) {
        const { provider, model } = route(request.model)
        return provider.generateImage({ ...request, model }, signal)
      },
    },
  }
}
