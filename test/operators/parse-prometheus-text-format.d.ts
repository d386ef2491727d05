// The package ships no types; only its default export is used (it throws on a line it cannot parse).
declare module 'parse-prometheus-text-format' {
  export default function parsePrometheusTextFormat(text: string): { name: string; help: string; type: string; metrics: unknown[] }[]
}
