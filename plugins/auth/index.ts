import { Elysia, t } from 'elysia'
import type { AccessService } from '../../src/auth/access-service.ts'
import type { PlanDirectory } from '../../src/auth/plans.ts'
import { accessControl } from '../../src/auth/plugin.ts'
import { AppError } from '../../src/errors.ts'
import { problem } from '../../src/schemas.ts'
import { rateLimiting, type RateLimitingOptions } from '../../src/rate-limit/plugin.ts'
import { requestMeta } from '../../src/request-pipeline.ts'
import { loginBody, me, refreshBody, registerBody, sessionTokens, tokenPair } from './schemas.ts'
import { SESSION_COOKIE_DOC, sessionCookies, sessionHandlers } from './session-cookie.ts'

export { tokenPair } from './schemas.ts'
export { sessionCookies, type SessionCookies } from './session-cookie.ts'

export interface AuthPluginOptions {
  access: AccessService
  plans: PlanDirectory
  rateLimits: RateLimitingOptions
  /** Enables POST /auth/register. Default false. */
  allowRegistration: boolean
  /** PUBLIC_BASE_URL: the origin whose pages may use the session cookie; the cookie is Secure when it is https. */
  publicBaseUrl: string
}

/** Sign-in, token refresh and rotation, sign-out, registration and the caller's identity. */
export function authPlugin(options: AuthPluginOptions) {
  const { access, plans } = options
  const session = sessionHandlers(access, sessionCookies(options.publicBaseUrl))
  return (
    new Elysia({ name: 'auth', prefix: '/auth', detail: { tags: ['auth'] } })
      .use(accessControl({ access, plans }))
      .use(rateLimiting(options.rateLimits))
      // Answers here carry tokens or who a token speaks for: no cache, shared or private, may keep them.
      .onTransform(({ set }) => {
        set.headers['cache-control'] = 'no-store'
      })
      .post('/login', ({ body, request, set }) => session.login(request, set, { ...body, clientIp: requestMeta(request).clientIp }), {
        body: loginBody,
        response: { 200: sessionTokens, 401: problem, 403: problem, 429: problem },
        detail: { summary: 'Exchange email and password for an access token and a refresh token', ...SESSION_COOKIE_DOC.login },
      })
      .post('/refresh', ({ body, request, set }) => session.refresh(request, set, body?.refreshToken), {
        body: refreshBody,
        response: { 200: sessionTokens, 401: problem, 403: problem },
        detail: { summary: 'Rotate a refresh token: the old one stops working, reusing it revokes the session', ...SESSION_COOKIE_DOC.refresh },
      })
      .post('/logout', ({ body, request, set }) => session.logout(request, set, body?.refreshToken), {
        body: refreshBody,
        response: { 204: t.Undefined({ description: 'Signed out' }), 403: problem },
        detail: { summary: 'Revoke the refresh token and every token rotated from it', ...SESSION_COOKIE_DOC.logout },
      })
      .post(
        '/register',
        async ({ body, set }) => {
          if (!options.allowRegistration) throw new AppError('registration_disabled', 'Registration is disabled on this service (ALLOW_REGISTRATION)')
          const pair = await access.register(body.email, body.password, body.organizationName)
          set.status = 201
          return pair
        },
        {
          body: registerBody,
          response: { 201: tokenPair, 403: problem, 409: problem },
          detail: { summary: 'Create a user who owns a new organisation on the default plan' },
        },
      )
      .get(
        '/me',
        async ({ principal }) => ({
          userId: principal.userId,
          organizationId: principal.orgId,
          role: principal.role,
          scopes: [...principal.scopes],
          // Nearly always cached: read without waiting on a lookup.
          plan: plans.cachedPlanOf(principal.orgId) ?? (await plans.planOf(principal.orgId)),
          source: principal.source,
        }),
        {
          auth: 'any',
          rateLimit: 'default',
          response: { 200: me, 401: problem, 429: problem },
          detail: { summary: 'Who the bearer token speaks for' },
        },
      )
  )
}
