/**
 * The page loader, run inside the sandbox (bundled with happy-dom by site-loader-build.ts): it loads each page of
 * a generated site in a headless DOM with its scripts on, serves the page's requests from the site's own files,
 * and prints one `site-load {...}` line per page with the scripts' uncaught errors, the files they asked for that
 * the site lacks, and the addresses outside the site they tried (which fail: the sandbox has no network).
 * Running untrusted scripts in happy-dom is safe only because the sandbox around this process is the isolation.
 */
import { readFileSync } from 'node:fs'
import { join, posix } from 'node:path'
import { Window, type BrowserWindow } from 'happy-dom'
import { candidateFiles, REPORT_PREFIX, SITE_INPUT_FILE, SITE_ORIGIN, type SiteLoadInput, type SiteLoadReport } from './site-files.ts'

// A page is done when nothing is pending; timers and animation loops never are, so also shortly after its load
// event, and at the latest after PAGE_MS.
const SETTLE_AFTER_LOAD_MS = 300
const PAGE_MS = 3000
const CLOSE_MS = 500
const MAX_LISTED = 10

const CONTENT_TYPES: Record<string, string> = {
  '.html': 'text/html',
  '.htm': 'text/html',
  '.js': 'text/javascript',
  '.mjs': 'text/javascript',
  '.css': 'text/css',
  '.json': 'application/json',
  '.svg': 'image/svg+xml',
}

const input = JSON.parse(readFileSync(join(import.meta.dir, SITE_INPUT_FILE), 'utf8')) as SiteLoadInput

const report = (line: SiteLoadReport) => process.stdout.write(`${REPORT_PREFIX}${JSON.stringify(line)}\n`)
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

const describe = (error: unknown) => {
  if (error && typeof error === 'object' && 'message' in error) {
    const name = 'name' in error && typeof error.name === 'string' ? `${error.name}: ` : ''
    return `${name}${String(error.message)}`
  }
  return String(error)
}

/** The site file an address names, as a static host would serve it. */
function siteFile(url: URL): string | undefined {
  let path: string
  try {
    path = posix.normalize(decodeURIComponent(url.pathname)).replace(/^\/+/, '')
  } catch {
    return undefined
  }
  return candidateFiles(path).find((candidate) => Object.hasOwn(input.files, candidate))
}

interface PageRun {
  errors: string[]
  missing: string[]
  external: string[]
}

let current: PageRun | undefined
const noteError = (run: PageRun | undefined, message: string) => {
  if (run && run.errors.length < MAX_LISTED) run.errors.push(message.slice(0, 500))
}
// Pages load one at a time, so what escapes happy-dom (a rejected promise nobody handled) is the current page's.
process.on('unhandledRejection', (reason) => noteError(current, `Uncaught (in promise) ${describe(reason)}`))
process.on('uncaughtException', (error) => noteError(current, describe(error)))

/** The site file a request is for, null for an address outside the site, undefined for a missing file. */
function route(run: PageRun, address: string): string | null | undefined {
  const url = new URL(address)
  if (url.origin !== SITE_ORIGIN) {
    if (run.external.length < MAX_LISTED && !run.external.includes(url.href)) run.external.push(url.href)
    return null
  }
  const file = siteFile(url)
  const path = url.pathname.slice(1)
  if (file === undefined && run.missing.length < MAX_LISTED && !run.missing.includes(path)) run.missing.push(path)
  return file
}

const contentType = (file: string) => CONTENT_TYPES[posix.extname(file).toLowerCase()] ?? 'application/octet-stream'

async function loadPage(page: string): Promise<PageRun> {
  const run: PageRun = { errors: [], missing: [], external: [] }
  current = run
  const networkError = (window: BrowserWindow) => new window.TypeError('Failed to fetch')
  const window = new Window({
    url: `${SITE_ORIGIN}/${encodeURI(page)}`,
    settings: {
      enableJavaScriptEvaluation: true,
      suppressInsecureJavaScriptEnvironmentWarning: true,
      fetch: {
        interceptor: {
          async beforeAsyncRequest({ request, window }) {
            const file = route(run, request.url)
            if (file === null) throw networkError(window)
            if (file === undefined) return new window.Response('', { status: 404, statusText: 'Not Found' })
            return new window.Response(input.files[file]!, { status: 200, headers: { 'content-type': contentType(file) } })
          },
          beforeSyncRequest({ request, window }) {
            const file = route(run, request.url)
            if (file === null) throw networkError(window)
            const found = file !== undefined
            return {
              status: found ? 200 : 404,
              statusText: found ? 'OK' : 'Not Found',
              ok: found,
              url: request.url,
              redirected: false,
              headers: new window.Headers(found ? { 'content-type': contentType(file) } : {}),
              body: Buffer.from(found ? input.files[file]! : ''),
            }
          },
        },
      },
    },
  })
  window.addEventListener('error', (event) => {
    const { error, message } = event as unknown as { error?: unknown; message?: string }
    noteError(run, error ? describe(error) : (message ?? 'error'))
  })
  // happy-dom fires no DOMContentLoaded; a browser fires it before load, once deferred and module scripts have run.
  const loaded = new Promise<void>((resolve) =>
    window.addEventListener('load', () => {
      window.document.dispatchEvent(new window.Event('DOMContentLoaded', { bubbles: true }))
      resolve()
    }),
  )
  window.document.write(input.files[page] ?? '')
  await Promise.race([window.happyDOM.waitUntilComplete(), loaded.then(() => sleep(SETTLE_AFTER_LOAD_MS)), sleep(PAGE_MS)])
  await Promise.race([window.happyDOM.abort().then(() => window.happyDOM.close()), sleep(CLOSE_MS)])
  current = undefined
  return run
}

const deadline = Date.now() + input.budgetMs
const skipped: string[] = []
for (const page of input.pages) {
  if (Date.now() > deadline) {
    skipped.push(page)
    continue
  }
  report({ loading: page })
  report({ page, ...(await loadPage(page)) })
}
if (skipped.length) report({ skipped })
process.exit(0)
