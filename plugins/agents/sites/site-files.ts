/**
 * How the addresses of a generated site name its files, as a static host serves them, shared by the static check
 * and the page loader that runs in the sandbox so both agree on what a link reaches; and what the page-load
 * check and the loader tell each other.
 */

/** The origin the page loader gives the site; `.invalid` never resolves, so no request can leave by mistake. */
export const SITE_ORIGIN = 'http://site.invalid'

/**
 * The files a site path (no leading slash, already normalised) may name, in the order a static host tries
 * them: the root and `dir/` are their index.html; `page` is page, page.html or page/index.html.
 */
export function candidateFiles(path: string): string[] {
  const base = path.replace(/\/+$/, '')
  if (base === '' || base === '.') return ['index.html']
  if (path.endsWith('/')) return [`${base}/index.html`]
  return [base, `${base}.html`, `${base}/index.html`]
}

/** The file the page loader reads its input from, beside it in the sandbox. */
export const SITE_INPUT_FILE = 'site.json'

/** What the page loader is given: the site's files (binary ones empty: the loader never reads images or fonts) and the pages to load. */
export interface SiteLoadInput {
  pages: string[]
  files: Record<string, string>
  /** Loading stops starting pages after this long, so the run ends before the sandbox's time limit. */
  budgetMs: number
}

/** Prefix of the loader's report lines, so Bun's own output around them is told apart. */
export const REPORT_PREFIX = 'site-load '

/** A report line: a page about to load, or what it did. */
export type SiteLoadReport =
  | { loading: string }
  | {
      page: string
      /** Uncaught errors and unhandled rejections of its scripts. */
      errors: string[]
      /** Site paths (as requested, without the leading slash) its scripts asked for that name no file. */
      missing: string[]
      /** Addresses outside the site it asked for (the sandbox has no network: they failed). */
      external: string[]
    }
  | { skipped: string[] }
