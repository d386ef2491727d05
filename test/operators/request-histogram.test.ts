/** The hand-kept request histogram: Prometheus' bucket semantics (le: less than or equal) and escaping. */
import { expect, test } from 'bun:test'
import { RequestHistogram } from '../../src/observability/request-histogram.ts'
import { expectValidExposition, samplesOf, sampleValue } from './exposition.ts'

test('a value on a bound counts in that bucket, buckets are cumulative, and +Inf and _count hold every observation', () => {
  const histogram = new RequestHistogram('latency_seconds', 'Latency', [0.1, 1])
  for (const seconds of [0.05, 0.1, 0.5, 1, 7]) histogram.observe('GET', '/a', 200, seconds)
  const text = histogram.exposition()
  expectValidExposition(`${text}\n`)
  const samples = samplesOf(text)
  const labels = { method: 'GET', route: '/a', status: '200' }
  expect(sampleValue(samples, 'latency_seconds_bucket', { ...labels, le: '0.1' })).toBe(2)
  expect(sampleValue(samples, 'latency_seconds_bucket', { ...labels, le: '1' })).toBe(4)
  expect(sampleValue(samples, 'latency_seconds_bucket', { ...labels, le: '+Inf' })).toBe(5)
  expect(sampleValue(samples, 'latency_seconds_count', labels)).toBe(5)
  expect(sampleValue(samples, 'latency_seconds_sum', labels)).toBeCloseTo(8.65)
})

test('series are kept apart by method, route and status; unknown methods share one `other` series; label values are escaped', () => {
  const histogram = new RequestHistogram('latency_seconds', 'Latency', [1])
  histogram.observe('GET', '/a', 200, 0.5)
  histogram.observe('POST', '/a', 200, 0.5)
  histogram.observe('GET', '/a', 404, 0.5)
  histogram.observe('PROPFIND', '/a', 405, 0.5)
  histogram.observe('BREW', '/a', 405, 0.5)
  histogram.observe('GET', '/odd"\\path', 200, 0.5)
  const text = histogram.exposition()
  expectValidExposition(`${text}\n`)
  const counts = samplesOf(text).filter((s) => s.name === 'latency_seconds_count')
  expect(counts.map((s) => `${s.labels.method} ${s.labels.route} ${s.labels.status} ${s.value}`).sort()).toEqual(
    ['GET /a 200 1', 'GET /a 404 1', 'GET /odd"\\path 200 1', 'POST /a 200 1', 'other /a 405 2'].sort(),
  )
  expect(text).toContain('route="/odd\\"\\\\path"')
})
