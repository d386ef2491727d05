/**
 * A model provider that tells an observer (metrics, tracing) about each call: when it started, its first
 * token, the tokens the provider counted and how it ended. Events pass through untouched, batch by batch.
 */
import type { ModelCallObserver, ModelCallOutcome } from '../observability/observers.ts'
import type { ModelEvent, ModelProvider } from './provider.ts'

const answers = (event: ModelEvent) => event.type === 'text' || event.type === 'reasoning' || event.type === 'tool-call'

export function observedProvider(provider: ModelProvider, observer: ModelCallObserver): ModelProvider {
  return {
    async *stream(request, signal) {
      const watch = observer.started({ operation: 'chat', model: request.model })
      let outcome: ModelCallOutcome = 'cancelled'
      let failure: unknown
      let waitingForFirst = true
      try {
        for await (const batch of provider.stream(request, signal)) {
          for (const event of batch) {
            if (waitingForFirst && answers(event)) {
              waitingForFirst = false
              watch.firstToken()
            } else if (event.type === 'usage') watch.usage(event.inputTokens, event.outputTokens)
          }
          yield batch
        }
        // The provider ends quietly when the caller aborts.
        if (!signal.aborted) outcome = 'ok'
      } catch (err) {
        outcome = 'error'
        failure = err
        throw err
      } finally {
        // Reached without an outcome when the consumer stopped reading early.
        watch.ended(outcome, failure)
      }
    },

    async generateImage(request, signal) {
      const watch = observer.started({ operation: 'image', model: request.model })
      try {
        const image = await provider.generateImage(request, signal)
        watch.ended('ok')
        return image
      } catch (err) {
        watch.ended(signal.aborted ? 'cancelled' : 'error', err)
        throw err
      }
    },
  }
}
