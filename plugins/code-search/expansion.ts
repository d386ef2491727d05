/**
 * Questions rewritten as code by a model: for "remove an interceptor from the stack" the model writes the few
 * lines such code would hold (`eject(id) { this.handlers[id] = null }`), and the index searches those as well as
 * the question, so code whose words the question never uses can still be found. Off unless
 * CODE_SEARCH_EXPANSION_MODEL names a model of the configured provider.
 */
import type { Caller } from '../../src/auth/caller.ts'
import { runModelLoop } from '../../src/llm/model-loop.ts'
import type { ModelMessage, ModelProvider } from '../../src/llm/provider.ts'
import type { Logger } from '../../src/log.ts'
import type { UsageMeter } from '../../src/usage/meter.ts'

/**
 * Writes code a question describes, or answers undefined (no model, a failure, a timeout): search then uses the
 * question alone. The tokens of a model call are metered to `caller`, when one is given.
 */
export type QueryExpander = (query: string, caller?: Caller) => Promise<string | undefined>

export interface QueryExpanderOptions {
  provider: ModelProvider
  model: string
  /** A search waits this long for the model, then goes on without it. */
  timeoutMs: number
  logger?: Logger
  /** Counts the model's tokens as chat tokens of the searching user, with the expansion model. */
  meter?: Pick<UsageMeter, 'record'>
  /** Questions whose code is remembered. Default 1000. */
  cacheSize?: number
}

/** The snippet is searched, never shown: a few hundred characters carry the identifiers it is for. */
const MAX_SNIPPET_CHARS = 1500
const MAX_OUTPUT_TOKENS = 200

const INSTRUCTIONS =
  'You help search a code base. Given a question about code, write the code that would answer it: one short ' +
  'function or method (at most 15 lines) with the names, calls and literals such code typically has. ' +
  'Answer with code only: no prose, no comments, no Markdown fences.'

export function expansionMessages(query: string): ModelMessage[] {
  return [
    { role: 'system', content: INSTRUCTIONS },
    { role: 'user', content: query },
  ]
}

/** The code inside a fence when the model sent one anyway, else the whole answer; trimmed and capped. */
export function snippetFromAnswer(answer: string): string {
  const fenced = /```[\w+-]*\n([\s\S]*?)(?:```|$)/.exec(answer)
  return (fenced ? fenced[1]! : answer).trim().slice(0, MAX_SNIPPET_CHARS)
}

export function createQueryExpander(options: QueryExpanderOptions): QueryExpander {
  const { provider, model, timeoutMs, logger, meter } = options
  const cacheSize = options.cacheSize ?? 1000
  // Promises, so that the same question asked twice at once makes one model call.
  const cache = new Map<string, Promise<string | undefined>>()

  async function expand(query: string, caller: Caller | undefined): Promise<string | undefined> {
    const signal = AbortSignal.timeout(timeoutMs)
    try {
      const answer = await runModelLoop({
        provider,
        model,
        messages: expansionMessages(query),
        signal,
        request: { temperature: 0, maxOutputTokens: MAX_OUTPUT_TOKENS },
        // A refused request (an HTTP error before any token) used no tokens; a cut-short answer did.
        metering: caller && { meter, caller, skipEmpty: true },
      })
      const snippet = snippetFromAnswer(answer.text)
      return snippet === '' ? undefined : snippet
    } catch (error) {
      // A timed-out answer may be cut short, so it is not used.
      if (signal.aborted) logger?.warn('code search: the model did not answer in time; searching the question alone', { model, timeoutMs })
      else logger?.warn('code search: the model did not write code for the question; searching the question alone', { err: error, model })
      return undefined
    }
  }

  return (query, caller) => {
    const cached = cache.get(query)
    if (cached) return cached
    const pending = expand(query, caller)
    if (cache.size >= cacheSize) cache.delete(cache.keys().next().value!)
    cache.set(query, pending)
    // A failure is not remembered: the next search of the question asks again.
    void pending.then((snippet) => {
      if (snippet === undefined && cache.get(query) === pending) cache.delete(query)
    })
    return pending
  }
}
