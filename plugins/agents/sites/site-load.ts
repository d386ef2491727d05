/**
 * The page-load check of a generated site: every page is loaded by happy-dom inside the sandbox, with its scripts
 * on (the program is site-loader.ts). A script's uncaught error, or a request for a file the site lacks, is a
 * problem. The sandbox has no network, so on a page that also asked for addresses outside the site its errors may
 * come from what it could not fetch: they are warnings there, not problems.
 */
import type { Sandbox } from '../../../src/sandbox/index.ts'
import { REPORT_PREFIX, SITE_INPUT_FILE, type SiteLoadInput, type SiteLoadReport } from './site-files.ts'
import type { SiteFileBytes } from './site-check.ts'

export type PageLoadSandbox = Pick<Sandbox, 'run' | 'available' | 'limits'>

export interface PageLoadOutcome {
  /** Each `page: what`; any of them keeps the site from being published. */
  problems: string[]
  /** What could not be checked, and errors that may not be the site's fault. */
  warnings: string[]
}

const LOADER_FILE = 'site-loader.js'
// Left to the loader's start (Bun parsing a megabyte of happy-dom) out of the sandbox's time limit.
const START_MARGIN_MS = 2000
const MAX_TIME_MS = 30_000

let loaderBundle: Promise<string> | undefined
const siteLoader = () => (loaderBundle ??= import('./site-loader-bundle.ts').then((m) => m.SITE_LOADER_BUNDLE))

/** The site as the loader gets it: text files as they are, others (images, fonts) empty: nothing loaded reads them. */
function loaderInput(files: readonly SiteFileBytes[], budgetMs: number): SiteLoadInput {
  const decoder = new TextDecoder('utf-8', { fatal: true })
  const text: Record<string, string> = {}
  for (const file of files) {
    try {
      text[file.path] = decoder.decode(file.bytes)
    } catch {
      text[file.path] = ''
    }
  }
  return { pages: files.map((f) => f.path).filter((path) => /\.html?$/i.test(path)), files: text, budgetMs }
}

function parseReports(output: string): SiteLoadReport[] {
  const reports: SiteLoadReport[] = []
  for (const line of output.split('\n')) {
    if (!line.startsWith(REPORT_PREFIX)) continue
    try {
      reports.push(JSON.parse(line.slice(REPORT_PREFIX.length)) as SiteLoadReport)
    } catch {
      // A line cut at the output limit.
    }
  }
  return reports
}

/** Loads every page of the site in the sandbox and says what went wrong. */
export async function loadSitePages(sandbox: PageLoadSandbox, files: readonly SiteFileBytes[], signal?: AbortSignal): Promise<PageLoadOutcome> {
  const problems: string[] = []
  const warnings: string[] = []
  if (!sandbox.available) return { problems, warnings: ['The pages were not loaded: this machine has no sandbox, so their scripts were not run'] }
  const timeoutMs = Math.min(sandbox.limits.timeoutMs, MAX_TIME_MS)
  const input = loaderInput(files, Math.max(timeoutMs - START_MARGIN_MS, 1000))
  let result: Awaited<ReturnType<Sandbox['run']>>
  try {
    result = await sandbox.run({
      language: 'javascript',
      mode: 'run',
      entry: LOADER_FILE,
      files: { [LOADER_FILE]: await siteLoader(), [SITE_INPUT_FILE]: JSON.stringify(input) },
      timeoutMs,
      signal,
    })
  } catch (err) {
    return { problems, warnings: [`The pages were not loaded: ${err instanceof Error ? err.message : String(err)}`] }
  }

  let loading: string | undefined
  for (const report of parseReports(result.output)) {
    if ('loading' in report) loading = report.loading
    else if ('skipped' in report)
      warnings.push(`${report.skipped.length} pages were not loaded in the time the check has: ${report.skipped.slice(0, 5).join(', ')}`)
    else {
      loading = undefined
      const { page, errors, missing, external } = report
      for (const path of missing) problems.push(`${page}: a script asked for ${path}, which is not a file of the site`)
      if (external.length) {
        warnings.push(
          `${page}: asked for ${external.length} address${external.length === 1 ? '' : 'es'} outside the site (${external[0]}); the sandbox has no network`,
        )
        for (const error of errors) warnings.push(`${page}: script error, perhaps from what could not be fetched: ${error}`)
      } else for (const error of errors) problems.push(`${page}: script error: ${error}`)
    }
  }
  // A page that never hands control back (a loop in a script) holds the loader until the sandbox stops it.
  if (result.verdict === 'timeout' && loading)
    problems.push(`${loading}: the page did not finish loading in ${Math.round(timeoutMs / 1000)} s (a script that never returns?)`)
  else if (result.verdict !== 'passed') warnings.push(`The page loader stopped early (${result.verdict}): ${result.output.slice(-300).trim()}`)
  return { problems, warnings }
}
