/** Chat's slice of the configuration; the model providers it calls are the core's (OPENAI_API_KEY, OPENAI_BASE_URL, MODEL_PROVIDERS). */
import { boolean, decimal, defineSettings, integer, text } from '../../src/config.ts'

export const chatSettings = defineSettings({
  title: 'Chat',
  variables: {
    CHAT_MODEL: {
      doc: 'Model used when a chat request names none and the organisation chose no default: a plain name (OPENAI_* provider) or <provider>/<model> of MODEL_PROVIDERS',
      parse: text,
      fallback: 'gpt-4o-mini',
    },
    CHAT_IMAGE_MODEL: { doc: 'Model the `!image` command and the generate_image tool use', parse: text, fallback: 'gpt-image-1' },
    CHAT_IMAGE_MAX_BYTES: {
      doc: 'Largest generated image streamed back as a data URL, in bytes',
      parse: integer(1024, 32 * 1024 * 1024),
      fallback: 4 * 1024 * 1024,
    },
    CHAT_MAX_STEPS: { doc: 'Most model calls in one chat turn (tool calls loop back to the model)', parse: integer(1, 50), fallback: 5 },
    CHAT_CONFIDENCE_THRESHOLD: {
      doc: 'Below this confidence (0-1) the answer is searched for and grounded on web results',
      parse: decimal(0, 1),
      fallback: 0.8,
    },
    CHAT_CONFIDENCE_TOKENS: { doc: 'How many leading answer tokens the confidence is measured over', parse: integer(1, 1000), fallback: 24 },
    CHAT_SEARCH_AUGMENTATION: { doc: 'Enables the automatic web search when the model is unsure', parse: boolean, fallback: true },
    CHAT_UPSTREAM_TIMEOUT_MS: { doc: 'Longest wait for the model provider to start answering', parse: integer(100, 600_000), fallback: 60_000 },
    CHAT_UPSTREAM_IDLE_MS: { doc: 'A model stream silent for this long is treated as stalled', parse: integer(100, 600_000), fallback: 30_000 },
    CHAT_GENERATION_TIMEOUT_SECONDS: {
      doc: 'Cap on one generation, followed or not; it is stopped and stored when reached',
      parse: integer(1, 86_400),
      fallback: 600,
    },
    CHAT_STREAM_TTL_SECONDS: { doc: "How long a generation's event log stays resumable after it ends", parse: integer(10, 7 * 86_400), fallback: 900 },
  },
  build: (v, report, env) => ({
    chat: {
      /** Undefined when neither OPENAI_API_KEY nor OPENAI_BASE_URL is set. */
      provider: v.OPENAI_API_KEY || v.OPENAI_BASE_URL ? { apiKey: v.OPENAI_API_KEY, baseUrl: v.OPENAI_BASE_URL } : undefined,
      /** MODEL_PROVIDERS with each key resolved; with none of these and no `provider`, chat answers 503 not_configured. */
      providers: (v.MODEL_PROVIDERS ?? []).map(({ apiKeyEnv, ...listing }) => {
        const apiKey = listing.apiKey ?? (apiKeyEnv ? env[apiKeyEnv] : undefined)
        if (apiKeyEnv && !apiKey) report.problem(`MODEL_PROVIDERS ${listing.name}: its key variable ${apiKeyEnv} is not set`)
        return { ...listing, apiKey }
      }),
      model: v.CHAT_MODEL,
      imageModel: v.CHAT_IMAGE_MODEL,
      imageMaxBytes: v.CHAT_IMAGE_MAX_BYTES,
      maxSteps: v.CHAT_MAX_STEPS,
      confidenceThreshold: v.CHAT_CONFIDENCE_THRESHOLD,
      confidenceTokens: v.CHAT_CONFIDENCE_TOKENS,
      searchAugmentation: v.CHAT_SEARCH_AUGMENTATION,
      upstreamTimeoutMs: v.CHAT_UPSTREAM_TIMEOUT_MS,
      upstreamIdleMs: v.CHAT_UPSTREAM_IDLE_MS,
      generationTimeoutSeconds: v.CHAT_GENERATION_TIMEOUT_SECONDS,
      streamTtlSeconds: v.CHAT_STREAM_TTL_SECONDS,
    },
  }),
})
