/** Host paths, compared as strings: neither is resolved here. */

/** Whether `path` is `dir` or lies under it. */
export function isWithin(path: string, dir: string): boolean {
  const base = dir.replace(/\/+$/, '')
  return path === base || path.startsWith(`${base}/`)
}
