/**
 * What a client's UI message stream reader understands, as it says in the `X-UI-Stream-Features` request header:
 * a comma-separated list, case-insensitive, for example `X-UI-Stream-Features: reset-step`. The one feature asked
 * about is `reset-step`: the `ai` package reads it from major version 7 on, while versions 5 and 6 refuse the chunk
 * and end the turn with an error, so an unsure draft is withdrawn only for a client that says it can read it.
 */
export const STREAM_FEATURES_HEADER = 'x-ui-stream-features'

/** The features named in the header; empty without it. */
export function streamFeatures(headers: Headers | undefined): ReadonlySet<string> {
  const value = headers?.get(STREAM_FEATURES_HEADER)
  if (!value) return new Set()
  return new Set(
    value
      .split(',')
      .map((feature) => feature.trim().toLowerCase())
      .filter(Boolean),
  )
}

/** What becomes of an unsure draft: the request's own choice, else `replace` when the client reads `reset-step`, else `keep`. */
export function unsureDraftFor(requested: 'replace' | 'keep' | undefined, headers: Headers | undefined): 'replace' | 'keep' {
  return requested ?? (streamFeatures(headers).has('reset-step') ? 'replace' : 'keep')
}
