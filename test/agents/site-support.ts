/** Sites for the build_site checks: a realistic valid one read from fixtures/site, and small ones written inline. */
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import type { SiteFileBytes } from '../../plugins/agents/sites/site-check.ts'

const FIXTURE = join(import.meta.dir, 'fixtures', 'site')

/** A bakery's four pages with style sheets, scripts (a module fetching JSON), an SVG logo and binary images, fonts and video. */
export function bakerySite(): SiteFileBytes[] {
  return readdirSync(FIXTURE, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => {
      const full = join(entry.parentPath, entry.name)
      return { path: full.slice(FIXTURE.length + 1), bytes: new Uint8Array(readFileSync(full)) }
    })
    .sort((a, b) => a.path.localeCompare(b.path))
}

export const siteOf = (files: Record<string, string>): SiteFileBytes[] =>
  Object.entries(files).map(([path, content]) => ({ path, bytes: new TextEncoder().encode(content) }))

/** A page with a doctype and a title around `body`, so only what `body` gets wrong is reported. */
export const page = (body: string) => `<!doctype html>\n<title>Page</title>\n${body}`
