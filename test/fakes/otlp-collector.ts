/**
 * A fake OpenTelemetry collector speaking OTLP/HTTP with JSON bodies (the OTLP specification's JSON mapping of
 * ExportTraceServiceRequest): POST /v1/traces, decoded into flat spans. Protobuf bodies are refused with 415, as
 * a collector without that encoding would, so an exporter sending them fails visibly.
 */
import { startFakeServer, type FakeServer } from './server.ts'

type AnyValue = { stringValue?: string; intValue?: string | number; doubleValue?: number; boolValue?: boolean; arrayValue?: { values?: AnyValue[] } }
type KeyValue = { key: string; value: AnyValue }

export interface CollectedSpan {
  traceId: string
  spanId: string
  /** Empty for a root span. */
  parentSpanId: string
  name: string
  /** OTLP SpanKind: 1 internal, 2 server, 3 client. */
  kind: number
  attributes: Record<string, unknown>
  events: string[]
  /** OTLP status code: 0 unset, 1 ok, 2 error. */
  statusCode: number
  resource: Record<string, unknown>
  startTimeUnixNano: bigint
  endTimeUnixNano: bigint
}

export interface FakeCollector extends FakeServer {
  /** Base URL for OTEL_EXPORTER_OTLP_ENDPOINT. */
  readonly endpoint: string
  readonly spans: CollectedSpan[]
}

function attributeValue(value: AnyValue): unknown {
  if (value.stringValue !== undefined) return value.stringValue
  // int64 travels as a JSON string in OTLP/JSON.
  if (value.intValue !== undefined) return Number(value.intValue)
  if (value.doubleValue !== undefined) return value.doubleValue
  if (value.boolValue !== undefined) return value.boolValue
  if (value.arrayValue) return (value.arrayValue.values ?? []).map(attributeValue)
  return undefined
}

const attributesOf = (list: KeyValue[] | undefined) => Object.fromEntries((list ?? []).map((kv) => [kv.key, attributeValue(kv.value)]))

export function startFakeCollector(): FakeCollector {
  const spans: CollectedSpan[] = []
  const server = startFakeServer((request, recorded) => {
    if (request.method !== 'POST' || recorded.path !== '/v1/traces') return new Response('not found', { status: 404 })
    if (!request.headers.get('content-type')?.startsWith('application/json')) return new Response('only application/json here', { status: 415 })
    const body = JSON.parse(recorded.body) as {
      resourceSpans?: { resource?: { attributes?: KeyValue[] }; scopeSpans?: { spans?: Record<string, any>[] }[] }[]
    }
    for (const resourceSpan of body.resourceSpans ?? []) {
      const resource = attributesOf(resourceSpan.resource?.attributes)
      for (const scope of resourceSpan.scopeSpans ?? [])
        for (const span of scope.spans ?? [])
          spans.push({
            traceId: span.traceId,
            spanId: span.spanId,
            parentSpanId: span.parentSpanId ?? '',
            name: span.name,
            kind: span.kind,
            attributes: attributesOf(span.attributes),
            events: (span.events ?? []).map((e: { name: string }) => e.name),
            statusCode: span.status?.code ?? 0,
            resource,
            startTimeUnixNano: BigInt(span.startTimeUnixNano),
            endTimeUnixNano: BigInt(span.endTimeUnixNano),
          })
    }
    return Response.json({})
  })
  return Object.assign(server, { endpoint: server.url, spans })
}
