/**
 * The landing page and the setup pages: plain HTML in the documentation site's look, one hashed stylesheet,
 * and no script except the hashed session check of the page after setup. Forms post to this origin only.
 */

export const SITE_NAME = 'Real-time AI development platform'

/** Where the pages send people; the playground is another plugin's page. */
export const LINKS = {
  docs: '/docs',
  explorer: '/swagger',
  openapi: '/swagger/json',
  playground: '/playground',
  health: '/health',
  login: '/auth/login',
  setup: '/setup',
  setupDone: '/setup/done',
} as const

const STYLE = `
:root { color-scheme: light dark; --fg: #0f172a; --muted: #64748b; --bg: #ffffff; --panel: #f8fafc; --border: #e2e8f0; --accent: #2563eb; --code: #f1f5f9; --danger: #dc2626; }
@media (prefers-color-scheme: dark) { :root { --fg: #e2e8f0; --muted: #94a3b8; --bg: #0b1120; --panel: #111827; --border: #1e293b; --accent: #60a5fa; --code: #1e293b; --danger: #f87171; } }
* { box-sizing: border-box; }
body { margin: 0; font: 16px/1.65 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--fg); background: var(--bg); }
a { color: var(--accent); text-decoration: none; } a:hover { text-decoration: underline; }
.topbar { display: flex; align-items: center; gap: 1.25rem; padding: .75rem 1.5rem; border-bottom: 1px solid var(--border); }
.topbar .site { font-weight: 650; color: var(--fg); margin-right: auto; }
.topbar nav { display: flex; gap: 1rem; font-size: .92rem; }
main { max-width: 46rem; margin: 0 auto; padding: 2rem 1.5rem 4rem; }
.eyebrow { margin: 0; color: var(--accent); font-size: .85rem; font-weight: 600; }
h1 { margin: .2rem 0 .4rem; font-size: 2rem; line-height: 1.2; }
h2 { margin-top: 2rem; font-size: 1.3rem; }
.description { margin: 0 0 1.5rem; color: var(--muted); font-size: 1.1rem; }
code { font: .88em ui-monospace, SFMono-Regular, Menlo, monospace; background: var(--code); padding: .1em .35em; border-radius: .3em; }
pre { background: var(--code); padding: 1rem; border-radius: .6rem; overflow: auto; } pre code { padding: 0; background: none; }
.callout { border: 1px solid var(--border); border-left: 4px solid var(--accent); border-radius: .6rem; padding: .75rem 1rem; margin: 1rem 0; background: var(--panel); }
.links { list-style: none; padding: 0; display: grid; grid-template-columns: repeat(auto-fill, minmax(13rem, 1fr)); gap: .75rem; }
.links a { display: block; height: 100%; padding: .75rem 1rem; border: 1px solid var(--border); border-radius: .6rem; color: var(--fg); }
.links a:hover { border-color: var(--accent); text-decoration: none; }
.links strong { display: block; color: var(--accent); } .links span { font-size: .88rem; color: var(--muted); }
form { display: grid; gap: .9rem; max-width: 28rem; margin: 1.25rem 0; }
label { display: grid; gap: .3rem; font-weight: 550; font-size: .92rem; }
label small { font-weight: 400; color: var(--muted); }
input { padding: .5rem .65rem; border: 1px solid var(--border); border-radius: .5rem; background: var(--panel); color: var(--fg); font: inherit; }
input:focus { outline: 2px solid var(--accent); outline-offset: 1px; }
button { justify-self: start; padding: .5rem 1.1rem; border: 0; border-radius: .5rem; background: var(--accent); color: #fff; font: inherit; font-weight: 600; cursor: pointer; }
.error { color: var(--danger); font-weight: 550; }
[data-state="signed-in"] { color: var(--accent); font-weight: 550; } [data-state="failed"] { color: var(--danger); }
footer { margin-top: 3rem; color: var(--muted); font-size: .85rem; }
`

/**
 * The page after setup: the setup form signed this browser in with a session cookie (HttpOnly: this script cannot
 * read it), and the page asks the service who the session belongs to, so the playground opens without a password.
 * The refresh holds the lock the playground's tabs share, so the two never present one refresh token at once.
 * Hidden without script; the rest of the page needs none.
 */
const SESSION_CHECK = `
const result = document.getElementById('session-check');
result.hidden = false;
const refresh = () => fetch('/auth/refresh', { method: 'POST', headers: { 'x-session': 'cookie' } });
(navigator.locks ? navigator.locks.request('playground-session', refresh) : refresh())
  .then(async (response) => {
    const answer = await response.json();
    if (!response.ok) throw new Error(answer.detail || 'the service answered ' + response.status);
    result.textContent = 'This browser is signed in as ' + answer.user.email + ', ' + answer.user.role + ' of organisation ' + answer.user.organizationId + ': the playground opens signed in, with no password to type again.';
    result.dataset.state = 'signed-in';
  })
  .catch((error) => {
    result.textContent = 'This browser is not signed in (' + error.message + '): sign in on the playground with the email and password you chose.';
    result.dataset.state = 'failed';
  });
`

const sha256 = (text: string) => `'sha256-${new Bun.CryptoHasher('sha256').update(text).digest('base64')}'`

const policy = (extra: string[]) =>
  ["default-src 'none'", `style-src ${sha256(STYLE)}`, ...extra, "form-action 'self'", "base-uri 'none'", "frame-ancestors 'none'"].join('; ')

/** Pages without script: only the stylesheet, and forms that post to this origin. */
export const PAGE_CSP = policy([])
/** The page after setup: its session check also runs, and calls this origin. */
export const SESSION_PAGE_CSP = policy([`script-src ${sha256(SESSION_CHECK)}`, "connect-src 'self'"])

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`)
}

function document(title: string, main: string, script?: string): string {
  const nav = [
    [LINKS.docs, 'Docs'],
    [LINKS.explorer, 'API explorer'],
    [LINKS.playground, 'Playground'],
  ]
    .map(([href, text]) => `<a href="${href}">${text}</a>`)
    .join('')
  return (
    `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">` +
    `<title>${escapeHtml(title)} · ${SITE_NAME}</title><style>${STYLE}</style></head><body>` +
    `<header class="topbar"><a class="site" href="/">${SITE_NAME}</a><nav aria-label="Site">${nav}</nav></header>` +
    `<main>${main}</main>${script ? `<script>${script}</script>` : ''}</body></html>`
  )
}

const minutes = (seconds: number) => (seconds % 60 === 0 ? `${seconds / 60} minutes` : `${seconds} seconds`)

/** GET / in a browser: what the service is and where to go, with the way to the setup while it is open. */
export function landingPage(input: { setupOpen: boolean; version: string }): string {
  const card = (href: string, title: string, text: string) => `<li><a href="${href}"><strong>${title}</strong><span>${text}</span></a></li>`
  const cards = [
    input.setupOpen ? card(LINKS.setup, 'Set up', 'Create the first owner with the one-time code from the log') : '',
    card(LINKS.docs, 'Documentation', 'Quick start, chat, agents, integrations, configuration'),
    card(LINKS.explorer, 'API explorer', 'Every route, tried from the browser'),
    card(LINKS.playground, 'Playground', 'Sign in and try chat, enhanced chat and agents'),
    card(LINKS.openapi, 'OpenAPI document', 'The contract, for client generators'),
    card(LINKS.health, 'Health', 'Liveness; /ready for readiness'),
  ].join('')
  const next = input.setupOpen
    ? `<div class="callout"><strong>First run.</strong> No user exists yet. Open <a href="${LINKS.setup}">${LINKS.setup}</a> and enter the one-time setup code the service printed in its log (the warn line <code>first run</code>, field <code>setupCode</code>) to create the first owner.</div>`
    : `<div class="callout">Sign in with <code>POST ${LINKS.login}</code> (email and password) and send the access token as <code>Authorization: Bearer &lt;token&gt;</code>, or sign in on the <a href="${LINKS.playground}">playground</a>.</div>`
  return document(
    'Home',
    `<p class="eyebrow">Backend service</p><h1>${SITE_NAME}</h1>` +
      `<p class="description">Streaming LLM chat over server-sent events, an enhanced chat that plans and checks its own code, agents over a WebSocket, integrations, repository import and search, billing and publishing.</p>` +
      next +
      `<ul class="links">${cards}</ul><footer>Version ${escapeHtml(input.version)} · JSON clients get the same links from <code>GET /</code> with <code>Accept: application/json</code>.</footer>`,
  )
}

/** GET /setup while setup is open, and the same form again with what went wrong. */
export function setupFormPage(input: { codeTtlSeconds: number; baseUrl: string; error?: string; email?: string; organizationName?: string }): string {
  const value = (text: string | undefined) => (text ? ` value="${escapeHtml(text)}"` : '')
  return document(
    'Set up',
    `<p class="eyebrow">First run</p><h1>Create the first owner</h1>` +
      `<p class="description">This service has no user yet. The owner you create here can sign in, invite others and manage billing.</p>` +
      `<p>Enter the one-time setup code from the service's log: the warn line <code>first run</code>, field <code>setupCode</code>. ` +
      `A code works once, for ${minutes(input.codeTtlSeconds)} after the start that logged it (<code>SETUP_CODE_TTL_SECONDS</code>); every restart logs a new one while no user exists.</p>` +
      (input.error ? `<p class="error" role="alert">${escapeHtml(input.error)}</p>` : '') +
      `<form method="post" action="${LINKS.setup}">` +
      `<label>Setup code<input name="code" required maxlength="64" autocomplete="off" autocapitalize="characters" spellcheck="false" placeholder="XXXX-XXXX-XXXX-XXXX"></label>` +
      `<label>Email<input name="email" type="email" required maxlength="254" autocomplete="username" pattern="[^@\\s]+@[^@\\s]+\\.[^@\\s]+"${value(input.email)}></label>` +
      `<label>Password <small>at least 12 characters</small><input name="password" type="password" required minlength="12" maxlength="1024" autocomplete="new-password"></label>` +
      `<label>Organisation<input name="organizationName" required maxlength="200" autocomplete="organization"${value(input.organizationName)}></label>` +
      `<button type="submit">Create the owner</button></form>` +
      `<h2>Without a browser</h2><p>The same with JSON answers the owner's tokens (<code>201</code>):</p>` +
      `<pre><code>curl -X POST ${escapeHtml(input.baseUrl)}${LINKS.setup} -H 'content-type: application/json' \\\n  -d '{"code": "XXXX-XXXX-XXXX-XXXX", "email": "owner@example.com", "password": "a-long-enough-password", "organizationName": "Example Labs"}'</code></pre>` +
      `<p>Or skip this page: <code>ADMIN_EMAIL</code> and <code>ADMIN_PASSWORD</code> create the first owner at start-up. See <a href="/docs/authentication#the-first-owner">the first owner</a>.</p>`,
  )
}

const nextSteps = (baseUrl: string) =>
  `<h2>Next</h2><ul>` +
  `<li>Try chat, enhanced chat and agents on the <a href="${LINKS.playground}">playground</a> (a model provider must be configured: <code>OPENAI_API_KEY</code> or <code>OPENAI_BASE_URL</code>).</li>` +
  `<li>Sign in from a front end or a script with <code>POST ${LINKS.login}</code>; see <a href="/docs/authentication">Authentication</a>:` +
  `<pre><code>curl -X POST ${escapeHtml(baseUrl)}${LINKS.login} -H 'content-type: application/json' \\\n  -d '{"email": "owner@example.com", "password": "…"}'</code></pre></li>` +
  `<li>Add people to your organisation: <code>npm run admin -- users create --email dev@example.com --password '…' --role member --org &lt;organisation id&gt;</code>.</li>` +
  `<li>Configure the optional parts (model provider, payments, OAuth apps, search): <a href="/docs/configuration">Configuration</a>.</li>` +
  `</ul>`

/** Where the setup form leads: what to do next, and whether this browser is signed in. */
export function setupDonePage(baseUrl: string): string {
  return document(
    'Setup complete',
    `<p class="eyebrow">First run</p><h1>The first owner is created</h1>` +
      `<p class="description">Setup is closed: the setup codes are deleted and <code>${LINKS.setup}</code> answers 410 from now on. Elsewhere, sign in with the email and password you chose.</p>` +
      `<p id="session-check" role="status" hidden>Checking this browser's session…</p>` +
      nextSteps(baseUrl),
    SESSION_CHECK,
  )
}

/** GET /setup once a user exists (410). */
export function setupClosedPage(baseUrl: string): string {
  return document(
    'Setup complete',
    `<p class="eyebrow">First run</p><h1>Setup is complete</h1>` +
      `<p class="description">The first owner exists, so <code>${LINKS.setup}</code> is closed. Sign in with your email and password; an operator adds users with <code>npm run admin</code>.</p>` +
      nextSteps(baseUrl),
  )
}
