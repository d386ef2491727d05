/**
 * OpenTelemetry traces, exported over OTLP/HTTP as JSON to `<endpoint>/v1/traces`: one server span per request,
 * named `METHOD /route/:pattern`, continuing the caller's trace when the request carries a W3C `traceparent`;
 * one client span per upstream model call, a child of the request that started it.
 *
 * Imported only when OTEL_EXPORTER_OTLP_ENDPOINT is set, so without it no OpenTelemetry code is even loaded.
 * Nothing is registered globally (tracer provider, context manager, propagator): the spans' context travels in
 * this module's own AsyncLocalStorage, entered as each request arrives.
 */
import { AsyncLocalStorage } from 'node:async_hooks'
import { ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Context, type Span, type TextMapGetter } from '@opentelemetry/api'
import { W3CTraceContextPropagator, setGlobalErrorHandler } from '@opentelemetry/core'
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http'
import { resourceFromAttributes } from '@opentelemetry/resources'
import { BatchSpanProcessor, TracerProvider } from '@opentelemetry/sdk-trace'
import {
  ATTR_HTTP_REQUEST_METHOD,
  ATTR_HTTP_RESPONSE_STATUS_CODE,
  ATTR_HTTP_ROUTE,
  ATTR_SERVICE_NAME,
  ATTR_SERVICE_VERSION,
  ATTR_URL_PATH,
} from '@opentelemetry/semantic-conventions'
import type { Logger } from '../log.ts'
import type { RequestObserver } from '../request-pipeline.ts'
import type { ModelCallObserver } from './observers.ts'

export interface TracingSettings {
  /** Collector base URL; spans go to `<endpoint>/v1/traces`. */
  endpoint: string
  headers: Readonly<Record<string, string>>
  serviceName: string
  serviceVersion: string
  logger: Logger
  /** How long finished spans wait to be sent together. Default 5000 ms. */
  exportDelayMs?: number
}

export interface Tracing {
  readonly requests: RequestObserver
  readonly modelCalls: ModelCallObserver
  /** Sends every finished span now. */
  flush(): Promise<void>
  /** Sends what is left and stops. */
  shutdown(): Promise<void>
}

const SPAN = Symbol('requestSpan')
type WithSpan = Request & { [SPAN]?: Span }

// The span of the request being served, inherited by everything its handler starts (a chat generation, say).
const current = new AsyncLocalStorage<Context>()

const headerGetter: TextMapGetter<Headers> = {
  get: (headers, key) => headers.get(key) ?? undefined,
  keys: (headers) => [...headers.keys()],
}

// Export failures reach the SDK's global error handler; one warning a minute is enough to notice a collector down.
const WARN_EVERY_MS = 60_000

export function createTracing(settings: TracingSettings): Tracing {
  const { logger } = settings
  const exporter = new OTLPTraceExporter({ url: `${settings.endpoint}/v1/traces`, headers: { ...settings.headers } })
  const provider = new TracerProvider({
    resource: resourceFromAttributes({ [ATTR_SERVICE_NAME]: settings.serviceName, [ATTR_SERVICE_VERSION]: settings.serviceVersion }),
    spanProcessors: [new BatchSpanProcessor({ exporter, scheduledDelayMillis: settings.exportDelayMs ?? 5000 })],
  })
  const tracer = provider.getTracer(settings.serviceName, settings.serviceVersion)
  const propagator = new W3CTraceContextPropagator()
  let warnedAt = -Infinity
  const exportFailed = (err: unknown) => {
    if (performance.now() - warnedAt < WARN_EVERY_MS) return
    warnedAt = performance.now()
    logger.warn('trace export failed', { endpoint: settings.endpoint, err })
  }
  setGlobalErrorHandler(exportFailed)

  return {
    requests: {
      started(request) {
        const parent = propagator.extract(ROOT_CONTEXT, request.headers, headerGetter)
        const span = tracer.startSpan(
          request.method,
          { kind: SpanKind.SERVER, attributes: { [ATTR_HTTP_REQUEST_METHOD]: request.method, [ATTR_URL_PATH]: new URL(request.url).pathname } },
          parent,
        )
        ;(request as WithSpan)[SPAN] = span
        current.enterWith(trace.setSpan(parent, span))
      },
      finished(request, route, status) {
        const span = (request as WithSpan)[SPAN]
        if (!span) return
        if (route) {
          span.updateName(`${request.method} ${route}`)
          span.setAttribute(ATTR_HTTP_ROUTE, route)
        }
        span.setAttribute(ATTR_HTTP_RESPONSE_STATUS_CODE, status)
        if (status >= 500) span.setStatus({ code: SpanStatusCode.ERROR })
        span.end()
      },
    },
    modelCalls: {
      started({ operation, model }) {
        // GenAI semantic conventions: span `{operation} {model}`, kind client.
        const span = tracer.startSpan(
          `${operation} ${model}`,
          { kind: SpanKind.CLIENT, attributes: { 'gen_ai.operation.name': operation, 'gen_ai.request.model': model } },
          current.getStore() ?? ROOT_CONTEXT,
        )
        return {
          firstToken: () => span.addEvent('first_token'),
          usage(inputTokens, outputTokens) {
            span.setAttributes({ 'gen_ai.usage.input_tokens': inputTokens, 'gen_ai.usage.output_tokens': outputTokens })
          },
          ended(outcome, error) {
            span.setAttribute('app.model_call.outcome', outcome)
            if (outcome === 'error') {
              if (error instanceof Error) span.recordException(error)
              span.setStatus({ code: SpanStatusCode.ERROR, message: error instanceof Error ? error.message : undefined })
            }
            span.end()
          },
        }
      },
    },
    // A collector that is down never fails the caller (a test, or shutdown): it is a warning in the log.
    flush: () => provider.forceFlush().catch(exportFailed),
    shutdown: () => provider.shutdown().catch(exportFailed),
  }
}
