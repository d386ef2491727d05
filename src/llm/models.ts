/**
 * The model provider as the plugins that ask it are handed it: chat, enhanced chat, the agents and the
 * documentation assistant share one, with the default model, and refuse alike when none is configured.
 */
import { AppError } from '../errors.ts'
import type { ModelProvider } from './provider.ts'

/** The settings that configure a provider, named when there is none. */
export const PROVIDER_VARIABLES: readonly string[] = ['OPENAI_API_KEY', 'OPENAI_BASE_URL']

export interface Models {
  /** False without a provider: what needs one answers 503 `not_configured`. */
  readonly configured: boolean
  /** The provider; throws the 503 `not_configured` problem when there is none. */
  provider(): ModelProvider
  /** The model asked unless a request names another (CHAT_MODEL). */
  readonly model: string
  /** The settings that configure a provider (PROVIDER_VARIABLES). */
  readonly settings: readonly string[]
}

export function providerNotConfigured(): AppError {
  return new AppError('not_configured', 'Chat has no model provider; set OPENAI_API_KEY (OpenAI) or OPENAI_BASE_URL (any OpenAI-compatible server)', {
    extensions: { variables: PROVIDER_VARIABLES },
  })
}

/** `provider` undefined when none is configured. */
export function createModels(provider: ModelProvider | undefined, model: string): Models {
  return {
    configured: provider !== undefined,
    provider() {
      if (provider) return provider
      throw providerNotConfigured()
    },
    model,
    settings: PROVIDER_VARIABLES,
  }
}
