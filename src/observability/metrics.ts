/**
 * The service's Prometheus metrics, in one registry of this process (prom-client, text exposition format 0.0.4),
 * plus the per-request histogram, kept by hand for speed (request-histogram.ts) and appended to its text.
 * Counters and histograms are updated where things happen (the request pipeline, the rate limiter, the model
 * provider); gauges of what is open right now are read from their owners only when /metrics is scraped.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client'
import type { RequestObserver } from '../request-pipeline.ts'
import type { ModelCallObserver } from './observers.ts'
import { RequestHistogram } from './request-histogram.ts'
import type { RateDecision, RateLimiter } from '../rate-limit/index.ts'

/** What is open right now, read at scrape time. */
export interface LiveCounts {
  sseStreams(): number
  webSockets(): number
  agentTasks(): number
  imports(): number
}

export interface ServiceMetrics {
  /** The request pipeline's hook: one histogram observation per answered request. */
  readonly requests: RequestObserver
  /** Told of every model call through the provider. */
  readonly modelCalls: ModelCallObserver
  /** `limiter` with its refusals counted by the policy that refused. */
  countRefusals(limiter: RateLimiter): RateLimiter
  agentTaskEnded(command: string, status: string): void
  importEnded(status: string): void
  /** Where the gauges read their values; until called they read 0. */
  watch(counts: LiveCounts): void
  /** The exposition text, and its content type. */
  render(): Promise<{ body: string; contentType: string }>
}

// Route latencies run from well under a millisecond (a token check) to seconds (an upstream call).
const REQUEST_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]
const MODEL_BUCKETS = [0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300]
// Model names come from requests; past this many distinct ones, further names count as `other`.
const MAX_MODEL_LABELS = 20

/** A label whose values a client chooses, held to `limit` distinct values so the series stay bounded. */
function boundedLabel(limit: number): (value: string) => string {
  const seen = new Set<string>()
  return (value) => {
    if (seen.has(value)) return value
    if (seen.size >= limit) return 'other'
    seen.add(value)
    return value
  }
}

export function createServiceMetrics(): ServiceMetrics {
  const registry = new Registry()
  // prom-client's process and runtime metrics, less the gauges it names *_total, which Prometheus' linter rejects.
  const defaults = new Registry()
  collectDefaultMetrics({ register: defaults })
  for (const { name } of defaults.getMetricsAsArray()) {
    const metric = defaults.getSingleMetric(name)!
    if (!(name.endsWith('_total') && !(metric instanceof Counter))) registry.registerMetric(metric)
  }
  let counts: LiveCounts | undefined

  const requestDuration = new RequestHistogram(
    'http_request_duration_seconds',
    'Time from the request arriving to its response being handed to the server (for streams: the response head), by route pattern and status; _count is the number of requests',
    REQUEST_BUCKETS,
  )
  const gauge = (name: string, help: string, read: (c: LiveCounts) => number) =>
    new Gauge({
      name,
      help,
      registers: [registry],
      collect() {
        this.set(counts ? read(counts) : 0)
      },
    })
  gauge('sse_streams_open', 'Server-sent event streams open now (chat, imports, publishing, the documentation assistant)', (c) => c.sseStreams())
  gauge('websocket_connections_open', 'Agent WebSocket connections open now', (c) => c.webSockets())
  gauge('agent_tasks_running', 'Agent tasks running in this process now', (c) => c.agentTasks())
  gauge('imports_running', 'Repository imports running or queued in this process now', (c) => c.imports())
  const agentTasks = new Counter({
    name: 'agent_tasks_finished_total',
    help: 'Agent tasks that ended, by command and status (succeeded, failed, cancelled)',
    labelNames: ['command', 'status'] as const,
    registers: [registry],
  })
  const imports = new Counter({
    name: 'imports_finished_total',
    help: 'Repository imports that ended, by status (succeeded, failed)',
    labelNames: ['status'] as const,
    registers: [registry],
  })
  const refusals = new Counter({
    name: 'rate_limit_refusals_total',
    help: 'Requests and agent commands refused by a rate limit (429), by the policy that refused',
    labelNames: ['policy'] as const,
    registers: [registry],
  })
  const modelDuration = new Histogram({
    name: 'model_request_duration_seconds',
    help: 'Upstream model calls from request to the end of the answer, by operation, model and outcome (ok, error, cancelled)',
    labelNames: ['operation', 'model', 'outcome'] as const,
    buckets: MODEL_BUCKETS,
    registers: [registry],
  })
  const modelFirstToken = new Histogram({
    name: 'model_first_token_seconds',
    help: 'Upstream model streams from request to the first answer token, by model',
    labelNames: ['model'] as const,
    buckets: MODEL_BUCKETS,
    registers: [registry],
  })
  const modelTokens = new Counter({
    name: 'model_tokens_total',
    help: 'Tokens the model provider reported, by model and direction (input, output)',
    labelNames: ['model', 'direction'] as const,
    registers: [registry],
  })
  const modelLabel = boundedLabel(MAX_MODEL_LABELS)

  return {
    requests: {
      finished(request, route, status, durationMs) {
        requestDuration.observe(request.method, route || 'unmatched', status, durationMs / 1000)
      },
    },
    modelCalls: {
      started({ operation, model }) {
        const label = modelLabel(model)
        const startedAt = performance.now()
        return {
          firstToken() {
            modelFirstToken.observe({ model: label }, (performance.now() - startedAt) / 1000)
          },
          usage(input, output) {
            if (input > 0) modelTokens.inc({ model: label, direction: 'input' }, input)
            if (output > 0) modelTokens.inc({ model: label, direction: 'output' }, output)
          },
          ended(outcome) {
            modelDuration.observe({ operation, model: label, outcome }, (performance.now() - startedAt) / 1000)
          },
        }
      },
    },
    countRefusals(limiter) {
      const count = (decision: RateDecision) => {
        if (!decision.allowed) refusals.inc({ policy: decision.refusedBy ?? 'unknown' })
      }
      const decideNow = limiter.decideNow?.bind(limiter)
      return {
        // The limiter's own promise goes back to the caller; counting hangs off it, off the request's path.
        check(entries) {
          const decided = limiter.check(entries)
          decided.then(count, () => {})
          return decided
        },
        decideNow:
          decideNow &&
          ((entries) => {
            const decision = decideNow(entries)
            count(decision)
            return decision
          }),
        close: () => limiter.close(),
      }
    },
    agentTaskEnded(command, status) {
      agentTasks.inc({ command, status })
    },
    importEnded(status) {
      imports.inc({ status })
    },
    watch(live) {
      counts = live
    },
    async render() {
      return { body: `${await registry.metrics()}\n${requestDuration.exposition()}\n`, contentType: registry.contentType }
    },
  }
}
