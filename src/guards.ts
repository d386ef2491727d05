/**
 * Guards before the body: a request is authenticated, then authorised, then parsed and validated.
 *
 * Elysia parses the body and validates params, query and body before any route hook runs, so a guard in
 * `resolve` or `beforeHandle` alone would let an anonymous caller learn a route's schema from its 400, 415
 * and 422 answers. A guard macro wraps its hook with `guard()` and lists it twice: as `transform` (which
 * runs before validation) and at its own place (`resolve` or `beforeHandle`); the request pipeline also runs
 * the routes' guard hooks at the parse stage, before the body is read. The hook runs once per request; later
 * calls return its first result.
 */

const GUARD = Symbol('guard')
const RESULTS = Symbol('guardResults')

type Hook = (context: any) => unknown
type GuardHook = ((context: any) => Promise<void>) & { [GUARD]: true }
type WithResults = Request & { [RESULTS]?: Map<Hook, unknown> }

/**
 * A guard hook that runs once per request however often it is called; `early` is the same check for the
 * transform stage (it returns nothing, so nothing is merged into the context there).
 */
export function guard<F extends (context: any) => Promise<unknown>>(hook: F): F & { early: (context: any) => Promise<void> } {
  // async, so Elysia awaits it at every place it is listed.
  const guarded = (async (context: { request: Request }) => {
    const request = context.request as WithResults
    const results = (request[RESULTS] ??= new Map())
    let result = results.get(guarded)
    if (result === undefined) {
      result = hook(context)
      results.set(guarded, result)
    }
    return result
  }) as unknown as F & { early: GuardHook }
  const early = (async (context: { request: Request }) => {
    await guarded(context)
  }) as GuardHook
  early[GUARD] = true
  guarded.early = early
  return guarded
}

interface RouteHooks {
  method: string
  path: string
  hooks: { transform?: unknown }
}

/** The guard hooks of every route, in their declared order, looked up by method and route pattern. */
export class RouteGuards {
  private byRoute = new Map<string, GuardHook[]>()

  load(routes: readonly RouteHooks[]): void {
    this.byRoute.clear()
    for (const route of routes) {
      const listed = route.hooks.transform
      const hooks = (Array.isArray(listed) ? listed : listed ? [listed] : [])
        .map((h: Hook | { fn: Hook }) => (typeof h === 'function' ? h : h.fn))
        .filter((h): h is GuardHook => typeof h === 'function' && GUARD in h)
      if (hooks.length > 0) this.byRoute.set(`${route.method} ${route.path}`, hooks)
    }
  }

  /** Runs the route's guards; synchronous (undefined) for routes that have none. */
  run(context: { request: Request; route: string }): Promise<void> | undefined {
    const method = context.request.method
    const hooks = this.byRoute.get(`${method} ${context.route}`) ?? (method === 'HEAD' ? this.byRoute.get(`GET ${context.route}`) : undefined)
    if (!hooks) return undefined
    return runInOrder(hooks, context)
  }
}

async function runInOrder(hooks: GuardHook[], context: unknown): Promise<void> {
  for (const hook of hooks) await hook(context)
}
