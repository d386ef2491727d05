/**
 * POST /auth/password (change, signed in), POST /auth/password/reset (with a reset link's token),
 * POST /auth/password/forgot (a link through the reset webhook), and GET /reset-password, the page a link opens.
 */
import { Elysia, t } from 'elysia'
import type { AccessService } from '../../src/auth/access-service.ts'
import { RESET_PAGE_PATH, type PasswordResets } from '../../src/auth/password-reset.ts'
import { accessControl, type AccessControlOptions } from '../../src/auth/plugin.ts'
import { AppError } from '../../src/errors.ts'
import { problem } from '../../src/schemas.ts'
import { rateLimiting, type RateLimitingOptions } from '../../src/rate-limit/plugin.ts'
import { requestMeta } from '../../src/request-pipeline.ts'
import { htmlAnswer, resetDonePage, resetFormPage, resetMissingPage } from './reset-page.ts'
import { passwordChangeBody, passwordForgotBody, passwordResetBody } from './schemas.ts'

export interface PasswordRoutesOptions extends AccessControlOptions {
  access: AccessService
  resets: PasswordResets
  rateLimits: RateLimitingOptions
}

const FORM = /^application\/x-www-form-urlencoded\b/i
const done = t.Undefined({ description: 'Done' })

export function passwordRoutes(options: PasswordRoutesOptions) {
  const { access, resets } = options
  return new Elysia({ name: 'passwords', detail: { tags: ['auth'] } })
    .use(accessControl(options))
    .use(rateLimiting(options.rateLimits))
    .onTransform(({ set }) => {
      set.headers['cache-control'] = 'no-store'
    })
    .post(
      '/auth/password',
      async ({ body, principal, request, set }) => {
        await access.changePassword(principal, body.currentPassword, body.newPassword, requestMeta(request).clientIp)
        set.status = 204
      },
      {
        auth: 'any',
        session: true,
        rateLimit: 'default',
        body: passwordChangeBody,
        response: { 204: done, 401: problem, 403: problem, 409: problem, 422: problem, 429: problem },
        detail: {
          summary: "Change the caller's password; every other session of theirs ends",
          description:
            'Needs a signed-in access token (an API key is 403 session_required) and the current password: a wrong one is 403 wrong_password and counts toward ' +
            "the sign-in lock of the account and of the client address (429 account_locked). The caller's own session stays signed in; every other one ends " +
            '(its refresh token and access tokens are refused, its agent connections close). API keys keep working.',
        },
      },
    )
    .post(
      '/auth/password/reset',
      async ({ body, request, set }) => {
        if (!FORM.test(request.headers.get('content-type') ?? '')) {
          await resets.reset(body.token, body.newPassword)
          set.status = 204
          return
        }
        // The reset page's form: answered with a page, the form again with the reason when refused.
        try {
          await resets.reset(body.token, body.newPassword)
        } catch (err) {
          if (!(err instanceof AppError)) throw err
          return htmlAnswer(resetFormPage({ token: body.token, error: err.message }), err.status, err.options.headers) as unknown as undefined
        }
        return htmlAnswer(resetDonePage(), 200) as unknown as undefined
      },
      {
        parse: ['json', 'urlencoded'],
        rateLimit: { spend: 'default', by: 'address' },
        body: passwordResetBody,
        response: { 204: done, 403: problem, 422: problem, 429: problem },
        detail: {
          summary: 'Set a new password with the token of a reset link; every session of the user ends',
          description:
            'The token comes from a link made by `admin users reset-password` or sent through POST /auth/password/forgot. It works once, until it expires ' +
            '(PASSWORD_RESET_TTL_SECONDS) or the password changes; otherwise 403 invalid_reset_token. The reset page posts the same fields as a form and gets a page back.',
        },
      },
    )
    .post(
      '/auth/password/forgot',
      ({ body, set }) => {
        resets.requestLink(body.email)
        set.status = 202
      },
      {
        rateLimit: { spend: 'default', by: 'address' },
        body: passwordForgotBody,
        response: { 202: t.Undefined({ description: 'Accepted: a link is sent if the address has an account' }), 422: problem, 429: problem, 503: problem },
        detail: {
          summary: 'Send a password reset link for the account with this email, through the reset webhook',
          description:
            'Always 202, as quickly whether or not the address has an account, so it tells nothing about which addresses do; at most one link per account a minute. ' +
            '503 not_configured unless PASSWORD_RESET_WEBHOOK_URL is set: an operator makes links then (admin users reset-password).',
        },
      },
    )
    .get(RESET_PAGE_PATH, ({ query }) => (query.token ? htmlAnswer(resetFormPage({ token: query.token }), 200) : htmlAnswer(resetMissingPage(), 400)), {
      query: t.Object({ token: t.Optional(t.String({ maxLength: 2048 })) }),
      response: {
        200: t.String({ description: 'The form that sets a new password (text/html)' }),
        400: t.String({ description: 'The link has no token (text/html)' }),
      },
      detail: { summary: 'The page a password reset link opens', hide: true },
    })
}
