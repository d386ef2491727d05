/**
 * How metrics and tracing hear about requests (from the request pipeline) and upstream model calls (from the
 * chat plugin's provider wrapper), and how several of them listen as one.
 */
import type { RequestObserver } from '../request-pipeline.ts'

export type ModelCallOutcome = 'ok' | 'error' | 'cancelled'

/** One call in progress. */
export interface ModelCallWatch {
  /** The first answer token (text, reasoning or a tool call) arrived; streams only. */
  firstToken(): void
  /** Token counts the provider reported. */
  usage(inputTokens: number, outputTokens: number): void
  /** Called once, when the call ends however it ends. */
  ended(outcome: ModelCallOutcome, error?: unknown): void
}

export interface ModelCallObserver {
  started(call: { operation: 'chat' | 'image'; model: string }): ModelCallWatch
}

/** One observer telling several, or undefined when there are none. */
export function combineModelCallObservers(observers: readonly (ModelCallObserver | undefined)[]): ModelCallObserver | undefined {
  const present = observers.filter((o): o is ModelCallObserver => o !== undefined)
  if (present.length <= 1) return present[0]
  return {
    started(call) {
      const watches = present.map((o) => o.started(call))
      return {
        firstToken: () => {
          for (const w of watches) w.firstToken()
        },
        usage: (input, output) => {
          for (const w of watches) w.usage(input, output)
        },
        ended: (outcome, error) => {
          for (const w of watches) w.ended(outcome, error)
        },
      }
    },
  }
}

/** One request observer telling several, or undefined when there are none (the pipeline then skips the call). */
export function combineRequestObservers(observers: readonly (RequestObserver | undefined)[]): RequestObserver | undefined {
  const present = observers.filter((o): o is RequestObserver => o !== undefined)
  if (present.length <= 1) return present[0]
  const starting = present.filter((o) => o.started)
  return {
    started: starting.length
      ? (request) => {
          for (const o of starting) o.started!(request)
        }
      : undefined,
    finished: (request, route, status, durationMs) => {
      for (const o of present) o.finished(request, route, status, durationMs)
    },
  }
}
