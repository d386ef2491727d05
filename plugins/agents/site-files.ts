/** How the addresses of a generated site name its files, as a static host serves them. */

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
