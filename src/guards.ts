/**
 * Guards before the body: a request is authenticated, then authorised, then parsed and validated.
 *
 * Elysia parses the body and validates params, query and body before any route hook runs, so a guard in
 * `resolve` or `beforeHandle` alone would let an anonymous caller learn a route's schema from its 400, 415
 * and 422 answers. A guard macro wraps its hook with `guard()` and lists it twice: as `transform` (which
 * runs before validation, via `.early`) and at its own place (`resolve` or `beforeHandle`); the request
 * pipeline also runs the routes' guard hooks at the parse stage, before the body is read. The hook runs once
 * per request; later calls return its first result.
 */

const GUARD = Symbol('guard')
const HELD = Symbol('heldRefusal')
const RESULTS = Symbol('guardResults')
let guardCount = 0

// biome-ignore lint/suspicious/noExplicitAny: a guard is listed on routes whose Elysia contexts differ; it reads only request and set
type GuardHook = ((context: any) => Promise<unknown>) & { [GUARD]: true }
/** What a guard may read: the request, and `set` for the headers it adds (RateLimit). */
export interface GuardContext {
  request: Request
  set: { headers: Record<string, unknown> }
}
type GuardedRequest = Request & { [HELD]?: Error; [RESULTS]?: unknown[] }

/** Marks a guard that ran and answered nothing, so it is not run again. */
const NOTHING = Symbol('nothing')

/**
 * A guard hook that runs once per request however often it is called. `early` is the same function typed for
 * the transform stage: Elysia merges what it resolves into the context there, which the later call repeats.
 * A hook that can decide without waiting (a token verified before, an in-process limiter) answers directly
 * rather than with a promise, and every later call then hands back that answer without one.
 */
// biome-ignore lint/suspicious/noExplicitAny: a guard is listed on routes whose Elysia contexts differ; it reads only request and set
export function guard<F extends (context: any) => unknown>(hook: F): Guarded<F> {
  // async, so Elysia awaits it at every place it is listed. The context is destructured, never passed whole:
  // Elysia reads hooks' source to learn what a route uses, and a whole context would make it parse cookies,
  // query and headers on every request.
  // Each guard keeps its result in one array on the request, at an index of its own: one property per request.
  const slot = guardCount++
  const guarded = (async ({ request, set }: GuardContext) => {
    const results = ((request as GuardedRequest)[RESULTS] ??= [])
    let result = results[slot]
    if (result === undefined) {
      try {
        result = hook({ request, set })
      } catch (err) {
        result = Promise.reject(err)
      }
      const held = (request as GuardedRequest)[HELD]
      if (held)
        result = Promise.resolve(result).then(() => {
          throw held
        })
      results[slot] = result === undefined ? NOTHING : result
    }
    return result === NOTHING ? undefined : result
  }) as unknown as GuardHook & Guarded<F>
  guarded[GUARD] = true
  // biome-ignore lint/suspicious/noExplicitAny: a guard is listed on routes whose Elysia contexts differ; it reads only request and set
  guarded.early = guarded as unknown as (context: any) => Promise<void>
  return guarded
}

/** What `guard` makes of a hook: always a promise of its answer, for Elysia to await. */
// biome-ignore lint/suspicious/noExplicitAny: a guard is listed on routes whose Elysia contexts differ; it reads only request and set
type Guarded<F extends (context: any) => unknown> = ((context: Parameters<F>[0]) => Promise<Awaited<ReturnType<F>>>) & {
  // biome-ignore lint/suspicious/noExplicitAny: a guard is listed on routes whose Elysia contexts differ; it reads only request and set
  early: (context: any) => Promise<void>
}

/**
 * Holds a refusal of the request itself (an oversized head) until the route's guards have passed, so a
 * guarded route still answers an anonymous caller 401 first.
 */
export function holdUntilGuarded(request: Request, refusal: Error): void {
  ;(request as GuardedRequest)[HELD] = refusal
}

interface RouteHooks {
  method: string
  path: string
  hooks: { transform?: unknown }
}

/** The guard hooks of every route, in their declared order, looked up by method and route pattern. */
export class RouteGuards {
  private byRoute = new Map<string, GuardHook[]>()
  private patterns: { method: string; regex: RegExp }[] = []

  load(routes: readonly RouteHooks[]): void {
    this.byRoute.clear()
    this.patterns = []
    for (const route of routes) {
      const listed = route.hooks.transform
      const hooks = (Array.isArray(listed) ? listed : listed ? [listed] : [])
        .map((h: GuardHook | { fn: GuardHook }) => (typeof h === 'function' ? h : h.fn))
        .filter((h): h is GuardHook => typeof h === 'function' && GUARD in h)
      if (hooks.length === 0) continue
      this.byRoute.set(`${route.method} ${route.path}`, hooks)
      this.patterns.push({ method: route.method, regex: routePattern(route.path) })
    }
  }

  /** Runs the guards of `route`; synchronous (undefined) for routes that have none. */
  run(route: string, context: GuardContext): Promise<void> | undefined {
    const method = context.request.method
    const hooks = this.byRoute.get(`${method} ${route}`) ?? (method === 'HEAD' ? this.byRoute.get(`GET ${route}`) : undefined)
    if (!hooks) return undefined
    return runInOrder(hooks, context)
  }

  /** Whether a request to this method and path may reach a guarded route (before routing; used rarely). */
  mayBeGuarded(method: string, pathname: string): boolean {
    const wanted = method === 'HEAD' ? 'GET' : method
    return this.patterns.some((p) => p.method === wanted && p.regex.test(pathname))
  }
}

/** A route path (`/api/chat/:id/stream`, `/docs/*`) as a regular expression over request paths. */
export function routePattern(path: string): RegExp {
  return new RegExp(
    `^${path
      .replace(/[.+?^${}()|[\]\\]/g, '\\$&')
      .replace(/:[^/]+/g, '[^/]+')
      .replace(/\*/g, '.*')}/?$`,
  )
}

async function runInOrder(hooks: GuardHook[], context: GuardContext): Promise<void> {
  for (const hook of hooks) await hook(context)
}
