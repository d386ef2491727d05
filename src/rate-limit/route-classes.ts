/** Route classes a route names in `{ rateLimit: ... }` and RATE_LIMIT_FAIL_CLOSED lists; `default` is the burst ceiling alone. */
export const ROUTE_CLASSES = ['chat', 'integrations', 'search', 'assistant', 'default'] as const

export type RouteClass = (typeof ROUTE_CLASSES)[number]
