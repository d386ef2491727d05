import { Elysia, t } from 'elysia'
import pkg from '../../package.json' with { type: 'json' }
import { AppError } from '../../src/errors.ts'
import type { Logger } from '../../src/log.ts'
import { problem } from '../../src/schemas.ts'
import { requestMeta } from '../../src/request-pipeline.ts'
import { sessionCookies, tokenPair } from '../auth/index.ts'
import { htmlPage, landing, setupBody, type Landing } from './schemas.ts'
import { LINKS, PAGE_CSP, SESSION_PAGE_CSP, SITE_NAME, landingPage, setupClosedPage, setupDonePage, setupFormPage } from './page.ts'
import { SETUP_LOG_MESSAGE, setupDone, type SetupService } from './service.ts'

export { createSetupService, type SetupService } from './service.ts'
export { setupSettings } from './settings.ts'

export interface SetupPluginOptions {
  setup: SetupService
  /** Shown on the setup page: how long a code works (SETUP_CODE_TTL_SECONDS). */
  codeTtlSeconds: number
  /** Public URL of the service (PUBLIC_BASE_URL), for the command-line examples on the pages. */
  publicBaseUrl: string
}

const FORM = /^application\/x-www-form-urlencoded\b/i

/** Whether the client would rather read HTML than JSON: it names text/html, and with no lower preference than JSON. */
export function prefersHtml(accept: string | null): boolean {
  const weight = (type: string) => {
    for (const part of (accept ?? '').split(',')) {
      const [name, ...params] = part.trim().toLowerCase().split(';')
      if (name?.trim() !== type) continue
      const q = params.map((p) => p.trim()).find((p) => p.startsWith('q='))
      return q ? Number(q.slice(2)) || 0 : 1
    }
    return -1
  }
  const html = weight('text/html')
  return html > 0 && html >= weight('application/json')
}

function html(body: string, status: number, csp = PAGE_CSP, extra: Record<string, string> = {}): Response {
  return new Response(body, {
    status,
    headers: {
      'content-type': 'text/html; charset=utf-8',
      'content-security-policy': csp,
      'cache-control': 'no-store',
      // Not no-referrer: under it a form post's Origin is `null`, and the setup form's Origin is what lets it set the
      // session cookie. same-origin still sends nothing to other sites.
      'referrer-policy': 'same-origin',
      ...extra,
    },
  })
}

/**
 * The front door: GET / (a landing page for browsers, links as JSON for `Accept: application/json`), and the
 * first run: GET /setup (the form), POST /setup (JSON answers the new owner's tokens; the page's form is
 * redirected to /setup/done), both 410 `setup_done` once a user exists.
 */
export function setupPlugin(options: SetupPluginOptions) {
  const { setup, codeTtlSeconds } = options
  const baseUrl = options.publicBaseUrl.replace(/\/+$/, '')
  const cookies = sessionCookies(baseUrl)
  return new Elysia({ name: 'setup', seed: baseUrl, detail: { tags: ['setup'] } })
    .get(
      '/',
      async ({ request, set }) => {
        const open = await setup.isOpen()
        // The answer changes when setup closes, and with Accept.
        const headers = { 'cache-control': 'no-cache', vary: 'accept' }
        // The page is a Response, outside the schema (which Elysia's types cannot say inside one Promise).
        if (prefersHtml(request.headers.get('accept')))
          return html(landingPage({ setupOpen: open, version: pkg.version }), 200, PAGE_CSP, headers) as unknown as Landing
        Object.assign(set.headers, headers)
        const { setupDone: _done, setup: setupLink, ...links } = LINKS
        const answer: Landing = { name: SITE_NAME, version: pkg.version, setup: { open }, links: open ? { ...links, setup: setupLink } : links }
        return answer
      },
      {
        response: { 200: landing },
        detail: {
          summary: 'Where to go: the documentation, the explorer, the playground, and /setup while no user exists',
          description: 'JSON by default; an HTML landing page when Accept prefers text/html (browsers).',
          responses: {
            200: { description: 'The links as JSON, or the landing page as HTML', content: { 'text/html': { schema: { type: 'string' } } } },
          },
        },
      },
    )
    .get(
      '/setup',
      async ({ request }) => {
        if (await setup.isOpen()) return html(setupFormPage({ codeTtlSeconds, baseUrl }), 200)
        if (prefersHtml(request.headers.get('accept'))) return html(setupClosedPage(baseUrl), 410)
        throw setupDone()
      },
      {
        response: { 200: htmlPage('The form that creates the first owner'), 410: problem },
        detail: { summary: 'The first-run page: create the first owner with the one-time code from the start-up log', hide: true },
      },
    )
    .post(
      '/setup',
      async ({ body, request, set, redirect }) => {
        const clientIp = requestMeta(request).clientIp
        const fromForm = FORM.test(request.headers.get('content-type') ?? '')
        if (!fromForm) {
          const { tokens } = await setup.complete(body, clientIp, { signIn: true })
          set.status = 201
          set.headers['cache-control'] = 'no-store'
          return tokens!
        }
        // The setup page's own form signs this browser in with the session cookie, so the password is typed once.
        const fromOwnPage = cookies.fromOwnPage(request)
        let session: string | undefined
        try {
          const { tokens } = await setup.complete(body, clientIp, { signIn: fromOwnPage })
          if (tokens) session = cookies.split(tokens).setCookie
        } catch (err) {
          if (!(err instanceof AppError)) throw err
          const headers = err.options.headers ?? {}
          if (err.code === 'setup_done') return html(setupClosedPage(baseUrl), err.status, PAGE_CSP, headers)
          const page = setupFormPage({ codeTtlSeconds, baseUrl, error: err.message, email: body.email, organizationName: body.organizationName })
          return html(page, err.status, PAGE_CSP, headers)
        }
        if (session === undefined) return redirect(LINKS.setupDone, 303)
        return new Response(null, { status: 303, headers: { location: LINKS.setupDone, 'set-cookie': session, 'cache-control': 'no-store' } })
      },
      {
        parse: ['json', 'urlencoded'],
        body: setupBody,
        response: {
          201: tokenPair,
          303: t.Void({
            description:
              'Form posts: to /setup/done, which says what to do next (Location header); a post from the setup page itself (its Origin) also sets the session cookie (Set-Cookie)',
          }),
          400: problem,
          403: problem,
          409: problem,
          410: problem,
          413: problem,
          415: problem,
          422: problem,
          429: problem,
        },
        detail: {
          summary: 'Create the first owner with the one-time setup code; JSON answers its tokens',
          description:
            `Open only while no user exists. The code is in the start-up log line "${SETUP_LOG_MESSAGE}". ` +
            "A wrong, used or expired code is 403 invalid_setup_code and counts toward the client address's lock (429 account_locked); " +
            'once a user exists the route answers 410 setup_done. The setup page posts the same fields as a form and is redirected (303).',
        },
      },
    )
    .get(
      '/setup/done',
      async ({ redirect }) => {
        if (await setup.isOpen()) return redirect(LINKS.setup, 303)
        return html(setupDonePage(baseUrl), 200, SESSION_PAGE_CSP)
      },
      {
        response: {
          200: htmlPage('What to do after setup, and whom this browser is signed in as'),
          303: t.Void({ description: 'Setup is still open: to /setup' }),
        },
        detail: { summary: 'The page after setup', hide: true },
      },
    )
}

/** Where the start-up log sends the operator: PUBLIC_BASE_URL, with the real port when it names port 0. */
export function setupUrl(publicBaseUrl: string, listeningPort: number): string {
  const url = new URL(publicBaseUrl)
  if (url.port === '0') url.port = String(listeningPort)
  return `${url.origin}${url.pathname.replace(/\/+$/, '')}${LINKS.setup}`
}

/** At start-up, while no user exists: stores a new one-time code and logs it once, at warn level, with the URL. */
export async function announceSetupCode(setup: SetupService, logger: Logger, url: string): Promise<void> {
  const created = await setup.createCode()
  if (!created) return
  logger.warn(SETUP_LOG_MESSAGE, { setupUrl: url, setupCode: created.code, expiresAt: new Date(created.expiresAt).toISOString() })
}
