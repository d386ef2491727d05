/**
 * The guard for a route open to anonymous callers: the service's `auth` macro requires a token; this one accepts
 * requests without one and still refuses a bad one. Such a route spends its budget with
 * `rateLimit: { spend, by: 'caller' }`: by user when signed in, by client address otherwise.
 */
import { Elysia } from 'elysia'
import type { AccessService, Principal } from '../../src/auth/access-service.ts'
import { authenticateRequest, openApiExtension } from '../../src/auth/plugin.ts'
import { guard } from '../../src/guards.ts'

/** The caller, or undefined without an Authorization header; any Authorization header must hold a valid token. */
export async function optionalCaller(access: AccessService, request: Request): Promise<Principal | undefined> {
  return request.headers.has('authorization') ? authenticateRequest(access, request) : undefined
}

/** `{ optionalAuth: true }` resolves `caller`: a Principal, or undefined without a token (a bad token is 401). */
export function callerGuards({ access }: { access: AccessService }) {
  return new Elysia({ name: 'mcp-caller-guards' }).macro({
    optionalAuth: (enabled: true) => {
      const identify = guard(async ({ request }: { request: Request }) => ({ caller: await optionalCaller(access, request) }))
      return {
        detail: openApiExtension({
          security: enabled ? [{}, { bearer: [] }] : [],
          description: 'A bearer token is optional; when one is given it must be valid.',
        }),
        transform: identify.early,
        resolve: identify,
      }
    },
  })
}
