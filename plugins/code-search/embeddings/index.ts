import type { EmbeddingsSettings } from '../settings.ts'
import { createHashedEmbeddings } from './hashed.ts'
import { createOpenAiEmbeddings } from './openai.ts'
import type { EmbeddingProvider } from './provider.ts'

export { normalise, type EmbeddingProvider } from './provider.ts'
export { createHashedEmbeddings, hashedVector, hashedVectorOfTerms } from './hashed.ts'

/** The embeddings configuration names: the offline hashed features, or an OpenAI-compatible endpoint. */
export function createEmbeddings(settings: EmbeddingsSettings): EmbeddingProvider {
  return settings.kind === 'hashed'
    ? createHashedEmbeddings({ dimensions: settings.dimensions })
    : createOpenAiEmbeddings({ baseUrl: settings.baseUrl, apiKey: settings.apiKey, model: settings.model, dimensions: settings.dimensions })
}
