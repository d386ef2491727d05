/**
 * The page a password reset link opens: GET /reset-password?token=... answers a form (no script, one hashed
 * stylesheet, a form that posts to this origin only) that posts the token and the new password to
 * POST /auth/password/reset, which answers the form with the page after the reset. The token is in the URL, so
 * every page here is sent with `Referrer-Policy: no-referrer` and never cached.
 */

const STYLE = `
:root { color-scheme: light dark; --fg: #0f172a; --muted: #64748b; --bg: #ffffff; --panel: #f8fafc; --border: #e2e8f0; --accent: #2563eb; --danger: #dc2626; }
@media (prefers-color-scheme: dark) { :root { --fg: #e2e8f0; --muted: #94a3b8; --bg: #0b1120; --panel: #111827; --border: #1e293b; --accent: #60a5fa; --danger: #f87171; } }
body { margin: 0; font: 16px/1.65 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--fg); background: var(--bg); }
main { max-width: 32rem; margin: 0 auto; padding: 3rem 1.5rem; }
a { color: var(--accent); }
form { display: grid; gap: .9rem; margin: 1.25rem 0; }
label { display: grid; gap: .3rem; font-weight: 550; font-size: .92rem; } label small { font-weight: 400; color: var(--muted); }
input { padding: .5rem .65rem; border: 1px solid var(--border); border-radius: .5rem; background: var(--panel); color: var(--fg); font: inherit; }
button { justify-self: start; padding: .5rem 1.1rem; border: 0; border-radius: .5rem; background: var(--accent); color: #fff; font: inherit; font-weight: 600; cursor: pointer; }
.error { color: var(--danger); font-weight: 550; }
`

const styleHash = `'sha256-${new Bun.CryptoHasher('sha256').update(STYLE).digest('base64')}'`

/** No script at all: the stylesheet, and forms that post to this origin. */
export const RESET_PAGE_CSP = ["default-src 'none'", `style-src ${styleHash}`, "form-action 'self'", "base-uri 'none'", "frame-ancestors 'none'"].join('; ')

const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`)

function page(title: string, main: string): string {
  return (
    `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">` +
    `<title>${escapeHtml(title)}</title><style>${STYLE}</style></head><body><main>${main}</main></body></html>`
  )
}

export function resetFormPage(input: { token: string; error?: string }): string {
  return page(
    'Choose a new password',
    '<h1>Choose a new password</h1>' +
      (input.error ? `<p class="error" role="alert">${escapeHtml(input.error)}</p>` : '') +
      '<form method="post" action="/auth/password/reset">' +
      `<input type="hidden" name="token" value="${escapeHtml(input.token)}">` +
      '<label>New password <small>at least 12 characters</small><input name="newPassword" type="password" minlength="12" maxlength="1024" autocomplete="new-password" required></label>' +
      '<button type="submit">Set the password</button></form>' +
      '<p>Setting it signs this account out everywhere; sign in again with the new password.</p>',
  )
}

export function resetDonePage(): string {
  return page(
    'Password changed',
    '<h1>Password changed</h1><p>Every session of this account has ended. Sign in with the new password (<code>POST /auth/login</code>, or the <a href="/playground">playground</a>).</p>',
  )
}

export function resetMissingPage(): string {
  return page('No reset link', '<h1>No reset link</h1><p class="error">This page needs the link from the reset email or from the operator, with its token.</p>')
}

export function htmlAnswer(body: string, status: number, headers: Record<string, string> = {}): Response {
  return new Response(body, {
    status,
    headers: {
      'content-type': 'text/html; charset=utf-8',
      'content-security-policy': RESET_PAGE_CSP,
      'cache-control': 'no-store',
      'referrer-policy': 'no-referrer',
      ...headers,
    },
  })
}
