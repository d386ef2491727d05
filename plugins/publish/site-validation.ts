/**
 * Checks a site before anything leaves the service: every path relative and inside the site, the
 * size and file-count limits, index.html at the root. Every problem is reported at once. Pure.
 */
import { AppError, type FieldProblem } from '../../src/errors.ts'

export interface InlineFile {
  path: string
  content: string
  /** How `content` is written: `utf-8` text (the default) or `base64` for binary files. */
  encoding?: 'utf-8' | 'base64'
}

/** A file whose bytes are already at hand, such as one read from an import. */
export interface ReadFile {
  path: string
  bytes: Uint8Array
}

export interface SiteFile {
  path: string
  bytes: Uint8Array
}

export interface SiteLimits {
  /** Most files a site may have (the .nojekyll and CNAME the service adds are not counted). */
  maxFiles: number
  /** Largest total of the files' decoded bytes. */
  maxBytes: number
}

export interface SiteOptions {
  /** Refuse a site without a root index.html. Default true. */
  requireIndex?: boolean
  /** Written as CNAME when set. */
  customDomain?: string
  /** How a file is named in problems. Default `files.<index>` (the inline form of the request). */
  fieldOf?: (index: number, path: string) => string
  /** The field named when the site as a whole is wrong (no index.html). Default `files`. */
  siteField?: string
}

/** Longest path accepted, in UTF-8 bytes (what file systems serving the site accept). */
export const MAX_PATH_BYTES = 1024

// Strict base64: the alphabet, padding only at the end, whole quads.
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/
// C0 controls, DEL: invisible in listings and refused or mangled by hosting.
// biome-ignore lint/suspicious/noControlCharactersInRegex: controls are what this matches
const CONTROL = /[\u0000-\u001f\u007f]/
const WINDOWS_DRIVE = /^[A-Za-z]:/

/** Why `path` cannot be a file of the site, or undefined when it can. */
export function pathProblem(path: string): string | undefined {
  if (path === '') return 'must not be empty'
  if (path.includes('\0')) return 'must not contain NUL'
  if (CONTROL.test(path)) return 'must not contain control characters'
  if (path.includes('\\')) return 'must use / as separator, not backslashes'
  if (path.startsWith('/') || WINDOWS_DRIVE.test(path)) return 'must be relative to the site root, not absolute'
  if (Buffer.byteLength(path) > MAX_PATH_BYTES) return `must be at most ${MAX_PATH_BYTES} bytes`
  const segments = path.split('/')
  if (segments.some((s) => s === '')) return 'must not have empty segments (a trailing or doubled /)'
  if (segments.some((s) => s === '..')) return 'must stay inside the site (no ..)'
  if (segments.some((s) => s === '.')) return 'must not have . segments'
  // Git refuses .git in any case, and so do the hosts serving the site.
  if (segments.some((s) => s.toLowerCase() === '.git')) return 'must not contain a .git segment'
  return undefined
}

function decode(file: InlineFile | ReadFile): Uint8Array | undefined {
  if ('bytes' in file) return file.bytes
  if (file.encoding === 'base64') return BASE64.test(file.content) ? Buffer.from(file.content, 'base64') : undefined
  return Buffer.from(file.content, 'utf8')
}

/**
 * The files to commit, the service's own `.nojekyll` (GitHub Pages then serves files as they are,
 * `_`-prefixed ones included) and CNAME added. Throws `invalid_site` (422) listing every bad file,
 * or `site_too_large` (413).
 */
export function buildSite(files: readonly (InlineFile | ReadFile)[], limits: SiteLimits, options: SiteOptions = {}): SiteFile[] {
  if (files.length > limits.maxFiles)
    throw new AppError('site_too_large', `The site has ${files.length} files; at most ${limits.maxFiles} can be published`, {
      extensions: { fileCount: files.length, maxFiles: limits.maxFiles },
    })
  const fieldOf = options.fieldOf ?? ((i: number) => `files.${i}`)
  const problems: FieldProblem[] = []
  const site: SiteFile[] = []
  const seen = new Map<string, number>()
  let totalBytes = 0
  for (const [i, file] of files.entries()) {
    const problem = pathProblem(file.path)
    if (problem) {
      problems.push({ field: `${fieldOf(i, file.path)}.path`, message: `"${printable(file.path)}" ${problem}` })
      continue
    }
    if (file.path === 'CNAME') {
      problems.push({ field: `${fieldOf(i, file.path)}.path`, message: 'CNAME is written from customDomain; set that instead' })
      continue
    }
    const earlier = seen.get(file.path)
    if (earlier !== undefined) {
      problems.push({ field: `${fieldOf(i, file.path)}.path`, message: `"${file.path}" is also ${fieldOf(earlier, file.path)}.path` })
      continue
    }
    seen.set(file.path, i)
    const bytes = decode(file)
    if (!bytes) {
      problems.push({ field: `${fieldOf(i, file.path)}.content`, message: 'is not valid base64 (encoding is base64)' })
      continue
    }
    totalBytes += bytes.byteLength
    site.push({ path: file.path, bytes })
  }
  // A path cannot be both a file and a directory of the tree.
  for (const path of seen.keys()) {
    for (let at = path.indexOf('/'); at > 0; at = path.indexOf('/', at + 1)) {
      const directory = path.slice(0, at)
      const clash = seen.get(directory)
      if (clash !== undefined)
        problems.push({ field: `${fieldOf(clash, directory)}.path`, message: `"${directory}" is a file but also a directory of "${path}"` })
    }
  }
  if (options.requireIndex !== false && !seen.has('index.html'))
    problems.push({ field: options.siteField ?? 'files', message: 'the site has no index.html at its root (send requireIndex: false to publish it anyway)' })
  if (problems.length > 0)
    throw new AppError(
      'invalid_site',
      `The site cannot be published: ${problems[0]!.field} ${problems[0]!.message}${problems.length > 1 ? ` (and ${problems.length - 1} more)` : ''}`,
      {
        errors: problems,
      },
    )
  if (totalBytes > limits.maxBytes)
    throw new AppError('site_too_large', `The site holds ${totalBytes} bytes; at most ${limits.maxBytes} can be published`, {
      extensions: { totalBytes, maxBytes: limits.maxBytes },
    })
  if (!seen.has('.nojekyll')) site.push({ path: '.nojekyll', bytes: new Uint8Array() })
  if (options.customDomain) site.push({ path: 'CNAME', bytes: Buffer.from(`${options.customDomain}\n`) })
  return site
}

/** The path as it can be shown in a message: control characters escaped. */
function printable(path: string): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: controls are what this escapes
  return path.replace(/[\u0000-\u001f\u007f]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`)
}
