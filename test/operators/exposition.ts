/**
 * Reading /metrics in tests. Two real parsers check the syntax: `promtool check metrics` (Prometheus' own parser
 * and linter, from Debian's prometheus package; used when installed) and parse-prometheus-text-format (always).
 * The latter flattens a histogram's labelled series into one, so the values the tests compare are read here,
 * sample by sample, after both have accepted the text.
 */
import { expect } from 'bun:test'
import parsePrometheusTextFormat from 'parse-prometheus-text-format'

export interface Sample {
  name: string
  labels: Record<string, string>
  value: number
}

const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+-?\d+)?$/
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g

export function samplesOf(text: string): Sample[] {
  const samples: Sample[] = []
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue
    const match = SAMPLE.exec(line)
    if (!match) throw new Error(`not a sample line: ${line}`)
    const labels = Object.fromEntries(
      [...(match[2] ?? '').matchAll(LABEL)].map((m) => [m[1]!, m[2]!.replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c))]),
    )
    samples.push({ name: match[1]!, labels, value: Number(match[3]) })
  }
  return samples
}

export const promtool = Bun.which('promtool')

/** Both parsers accept the text; every histogram's buckets only grow and end at its count. */
export function expectValidExposition(text: string) {
  expect(() => parsePrometheusTextFormat(text)).not.toThrow()
  if (promtool) {
    const check = Bun.spawnSync([promtool, 'check', 'metrics'], { stdin: new TextEncoder().encode(text) })
    expect(check.stdout.toString() + check.stderr.toString()).toBe('')
    expect(check.exitCode).toBe(0)
  }
  const samples = samplesOf(text)
  const series = new Map<string, Sample[]>()
  for (const s of samples.filter((s) => s.name.endsWith('_bucket'))) {
    const { le, ...rest } = s.labels
    const key = `${s.name.slice(0, -'_bucket'.length)}${JSON.stringify(rest)}`
    series.set(key, [...(series.get(key) ?? []), s])
  }
  for (const [key, buckets] of series) {
    const counts = buckets.map((b) => b.value)
    expect(counts).toEqual([...counts].sort((a, b) => a - b))
    expect(buckets.at(-1)!.labels.le).toBe('+Inf')
    const name = key.slice(0, key.indexOf('{'))
    const labels = JSON.parse(key.slice(key.indexOf('{')))
    const count = samples.find((s) => s.name === `${name}_count` && JSON.stringify(s.labels) === JSON.stringify(labels))
    expect(count?.value).toBe(counts.at(-1)!)
  }
}

/** The value of the one sample with this name and (at least) these labels; undefined when there is none. */
export function sampleValue(samples: Sample[], name: string, labels: Record<string, string> = {}): number | undefined {
  const found = samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))
  if (found.length > 1) throw new Error(`${found.length} samples of ${name} match ${JSON.stringify(labels)}`)
  return found[0]?.value
}
