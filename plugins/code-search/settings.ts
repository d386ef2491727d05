/** Code search's slice of the configuration: where vectors come from, and how the index is saved and refreshed. */
import { decimal, defineSettings, integer, text, url, type SettingsOf } from '../../src/config.ts'

export const codeSearchSettings = defineSettings({
  title: 'Code search',
  variables: {
    EMBEDDINGS_MODEL: {
      doc: "Embeddings model of an OpenAI-compatible endpoint for code search (text-embedding-3-small, nomic-embed-text ...); unset uses the offline hashed sub-word embeddings and a term space learnt from each organisation's code",
      parse: text,
    },
    EMBEDDINGS_BASE_URL: {
      doc: 'Base URL of the embeddings endpoint, with /v1; unset: OPENAI_BASE_URL, else https://api.openai.com/v1',
      parse: url('http:', 'https:'),
    },
    EMBEDDINGS_API_KEY: { doc: 'Key of the embeddings endpoint; unset: OPENAI_API_KEY', parse: text },
    EMBEDDINGS_DIMENSIONS: {
      doc: 'Vector size: asked of EMBEDDINGS_MODEL when set (models that can shorten their vectors), else the size of the offline embeddings (default 256)',
      parse: integer(16, 4096),
    },
    CODE_SEARCH_EXPANSION_MODEL: {
      doc: 'Chat model of the configured provider (OPENAI_API_KEY / OPENAI_BASE_URL) that writes the code a search question describes, searched beside the question; unset: questions are searched alone',
      parse: text,
    },
    CODE_SEARCH_EXPANSION_TIMEOUT_MS: {
      doc: 'How long a search waits for CODE_SEARCH_EXPANSION_MODEL before searching the question alone',
      parse: integer(100, 60_000),
      fallback: 3000,
    },
    CODE_INDEX_SNAPSHOT_DELAY_MS: {
      doc: 'Quiet time after a code index change before its snapshot is written to DATA_DIR (an import also saves when it ends)',
      parse: integer(0, 600_000),
      fallback: 2000,
    },
    CODE_INDEX_REFRESH_MS: {
      doc: 'How often a search checks the database for a newer code index snapshot saved by another process (with REDIS_URL, processes also announce each snapshot as it is saved; this check makes up for announcements missed)',
      parse: integer(0, 600_000),
      fallback: 2000,
    },
    CODE_INDEX_LOAD_WAIT_MS: {
      doc: "How long a search waits for its organisation's code index to be loaded from a snapshot of 512 KiB or more (by a process taking over an index, or after one was dropped) before answering with no results, marked partial (X-Code-Search-Partial: loading); the load goes on meanwhile. A smaller snapshot is always waited for",
      parse: integer(0, 600_000),
      fallback: 150,
    },
    CODE_INDEX_MEMORY_BUDGET_MB: {
      doc: "Megabytes of organisations' code indexes one process keeps, each counted as the size of its snapshot plus unsaved changes; beyond it the least recently used indexes are dropped (their changes saved first) and loaded again when next searched. 0: no limit",
      parse: decimal(0, 1_000_000),
      fallback: 0,
    },
    CODE_SEARCH_ADVERTISE_URL: {
      doc: "With REDIS_URL: the base URL other processes of the deployment reach this one at (http://10.0.0.5:3000), where they send searches of the organisations whose code index this process owns; default http://HOST:PORT as listening, with the machine's first external IPv4 address (else 127.0.0.1) when HOST is 0.0.0.0 or ::, which suits processes on one host and containers on one network",
      parse: url('http:', 'https:'),
    },
  },
  build: (v, report) => {
    const embeddings = () => {
      if (!v.EMBEDDINGS_MODEL) {
        for (const name of ['EMBEDDINGS_BASE_URL', 'EMBEDDINGS_API_KEY'] as const)
          if (v[name]) report.problem(`${name} is set but EMBEDDINGS_MODEL is not; set the model to use the endpoint`)
        return { kind: 'hashed' as const, dimensions: v.EMBEDDINGS_DIMENSIONS ?? 256 }
      }
      const baseUrl = v.EMBEDDINGS_BASE_URL ?? v.OPENAI_BASE_URL ?? 'https://api.openai.com/v1'
      const apiKey = v.EMBEDDINGS_API_KEY ?? v.OPENAI_API_KEY
      if (!apiKey && new URL(baseUrl).hostname === 'api.openai.com')
        report.problem('EMBEDDINGS_MODEL is set for api.openai.com but neither EMBEDDINGS_API_KEY nor OPENAI_API_KEY is')
      return { kind: 'openai' as const, baseUrl, apiKey, model: v.EMBEDDINGS_MODEL, dimensions: v.EMBEDDINGS_DIMENSIONS }
    }
    const expansion = () => {
      if (!v.CODE_SEARCH_EXPANSION_MODEL) return undefined
      if (!v.OPENAI_API_KEY && !v.OPENAI_BASE_URL)
        report.problem('CODE_SEARCH_EXPANSION_MODEL is set but no model provider is (OPENAI_API_KEY or OPENAI_BASE_URL)')
      return { model: v.CODE_SEARCH_EXPANSION_MODEL, timeoutMs: v.CODE_SEARCH_EXPANSION_TIMEOUT_MS }
    }
    return {
      codeSearch: {
        embeddings: embeddings(),
        expansion: expansion(),
        snapshotDelayMs: v.CODE_INDEX_SNAPSHOT_DELAY_MS,
        refreshMs: v.CODE_INDEX_REFRESH_MS,
        loadWaitMs: v.CODE_INDEX_LOAD_WAIT_MS,
        memoryBudgetBytes: Math.round(v.CODE_INDEX_MEMORY_BUDGET_MB * 1024 * 1024),
        advertiseUrl: v.CODE_SEARCH_ADVERTISE_URL,
      },
    }
  },
})

export type CodeSearchSettings = SettingsOf<typeof codeSearchSettings>['codeSearch']

/** Where code search gets its vectors: the offline hashed embeddings, or an OpenAI-compatible endpoint. */
export type EmbeddingsSettings = CodeSearchSettings['embeddings']
