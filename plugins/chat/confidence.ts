/**
 * How sure the model is of its answer, measured on the first tokens it streams, as they pass.
 *
 * With log-probabilities: the geometric mean of the token probabilities over the first N tokens,
 * `exp(sum(logprob_i) / N)`, a number in 0..1 (1 = every token was certain).
 * Without them (providers that ignore `logprobs`): no number is available; the leading text is
 * checked for hedging phrases instead, and a hedge counts as unsure.
 */

export type ConfidenceMeasure = { method: 'logprobs'; confidence: number; tokens: number } | { method: 'hedging'; confidence: null; hedge: string | undefined }

export function geometricMeanProbability(logprobs: readonly number[]): number {
  if (logprobs.length === 0) return 1
  let sum = 0
  for (const lp of logprobs) sum += Number.isFinite(lp) ? lp : -100
  return Math.exp(sum / logprobs.length)
}

const HEDGES = [
  "i'm not sure",
  'i am not sure',
  "i don't know",
  'i do not know',
  "i'm not certain",
  'i am not certain',
  'i cannot be certain',
  "i can't be certain",
  'as of my knowledge cutoff',
  'as of my last update',
  'my knowledge cutoff',
  "i don't have access to real-time",
  'i do not have access to real-time',
  "i don't have real-time",
  'i may be wrong',
  'i might be mistaken',
]

export function findHedge(text: string): string | undefined {
  const lower = text.toLowerCase().replace(/[’‘]/g, "'")
  return HEDGES.find((h) => lower.includes(h))
}

/** The measure over the leading text: `logprobs` when every token came with one, else hedging. */
export function measureConfidence(text: string, logprobs: readonly number[] | undefined, tokens: number): ConfidenceMeasure {
  if (logprobs && logprobs.length > 0) {
    const first = logprobs.slice(0, tokens)
    return { method: 'logprobs', confidence: geometricMeanProbability(first), tokens: first.length }
  }
  return { method: 'hedging', confidence: null, hedge: findHedge(text) }
}

export function isUnsure(measure: ConfidenceMeasure, threshold: number): boolean {
  return measure.method === 'logprobs' ? measure.confidence < threshold : measure.hedge !== undefined
}

export interface ConfidenceVerdict {
  measure: ConfidenceMeasure
  unsure: boolean
  /** Tokens seen when the verdict was reached. */
  tokens: number
}

/**
 * Watches an answer's tokens while they stream to the client and gives the verdict as soon as it is
 * certain: after `tokens` tokens, earlier when the answer hedges, or when the log-probabilities seen so far
 * already put the mean over `tokens` below the threshold (log-probabilities are never positive, so later
 * tokens can only lower it).
 */
export function createConfidenceGauge(options: { threshold: number; tokens: number }) {
  const { threshold, tokens: window } = options
  let text = ''
  const logprobs: number[] = []
  let sum = 0
  let seen = 0
  let missingLogprobs = false

  const verdict = (): ConfidenceVerdict => {
    const measure = measureConfidence(text, missingLogprobs ? undefined : logprobs, window)
    return { measure, unsure: isUnsure(measure, threshold), tokens: seen }
  }

  return {
    /** Takes one streamed text delta; answers the verdict once it is certain. */
    add(delta: string, deltaLogprobs?: readonly number[]): ConfidenceVerdict | undefined {
      text += delta
      if (deltaLogprobs?.length) {
        for (const lp of deltaLogprobs.slice(0, Math.max(0, window - logprobs.length))) {
          logprobs.push(lp)
          sum += Number.isFinite(lp) ? lp : -100
        }
      } else missingLogprobs = true
      seen += deltaLogprobs?.length || 1
      if (seen >= window) return verdict()
      if (missingLogprobs) return findHedge(text) === undefined ? undefined : verdict()
      return Math.exp(sum / window) < threshold ? verdict() : undefined
    },
    /** The verdict on what was seen, for an answer that ended (or turned to a tool) before `tokens` tokens. */
    settle: verdict,
  }
}
