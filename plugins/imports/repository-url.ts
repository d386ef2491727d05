/**
 * What a user names as a repository (an http(s) URL or an owner/name shorthand) and the address check every
 * URL of an import goes through before the service connects: the first one and each redirect hop.
 */
import { AppError } from '../../src/errors.ts'
import { guardUrl, type GuardOptions } from '../../src/http.ts'

export interface RepositoryLocation {
  /** Where to clone from, without a trailing slash. */
  cloneUrl: URL
  /** Identity of the repository within an organisation: scheme, host and path without `.git`. */
  key: string
  /** Display name, `owner/name` for the usual two-segment paths. */
  name: string
}

export interface UrlPolicy {
  /** `host` or `host:port` entries reachable on any address (IMPORT_ALLOW_HOSTS); plain http is allowed only for them. */
  allowHosts: readonly string[]
  /** Name resolution; default the system resolver. */
  lookup?: GuardOptions['lookup']
}

const SEGMENT = /^[A-Za-z0-9_.-]+$/

export const refused = (message: string, field = 'repository') => new AppError('repository_url_refused', message, { errors: [{ field, message }] })

function isSegment(value: string): boolean {
  return SEGMENT.test(value) && value !== '.' && value !== '..'
}

/** Reads the `repository` field: `owner/name` (on the code-hosting provider) or a URL. Nothing is resolved yet. */
export function locateRepository(input: string, codehostUrl: string): RepositoryLocation {
  const trimmed = input.trim()
  const parts = trimmed.split('/')
  if (parts.length === 2 && parts.every(isSegment) && !trimmed.includes(':')) {
    const [owner, name] = parts as [string, string]
    return fromUrl(new URL(`${codehostUrl}/${owner}/${name.replace(/\.git$/, '')}.git`))
  }
  let url: URL
  try {
    url = new URL(trimmed)
  } catch {
    throw refused('repository must be an https URL or an owner/name shorthand')
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw refused(`repository URL must use https, not ${url.protocol.replace(/:$/, '')}`)
  if (url.username || url.password) throw refused('repository URL must not contain a username or password; connect the provider instead')
  if (url.search || url.hash) throw refused('repository URL must not have a query or fragment')
  return fromUrl(url)
}

function fromUrl(url: URL): RepositoryLocation {
  const path = url.pathname.replace(/\/+$/, '')
  const segments = path.split('/').filter(Boolean)
  if (segments.length === 0) throw refused('repository URL must name a repository path')
  const cloneUrl = new URL(url.origin + path)
  const bare = path.replace(/\.git$/, '')
  const name = segments
    .slice(-2)
    .map((segment) => decodeURIComponent(segment).replace(/\.git$/, ''))
    .join('/')
  return { cloneUrl, key: `${url.protocol}//${url.host}${bare}`, name }
}

export function isAllowlisted(url: URL, policy: UrlPolicy): boolean {
  return policy.allowHosts.includes(url.host) || policy.allowHosts.includes(url.hostname)
}

/**
 * Refuses a URL that is not http(s), carries credentials, is plain http to a host outside the allowlist, or
 * resolves to a loopback, private, link-local, unspecified, reserved or metadata address (every spelling).
 * Answers the address the name resolved to, which the caller connects to.
 */
export async function guardRepositoryUrl(url: URL, policy: UrlPolicy, label = 'repository URL'): Promise<{ url: URL; address: string }> {
  let guarded: { url: URL; address: string }
  try {
    guarded = await guardUrl(url, { allowHosts: [...policy.allowHosts], lookup: policy.lookup, label })
  } catch (error) {
    if (error instanceof AppError && error.code === 'bad_request') throw refused(error.message)
    throw error
  }
  if (guarded.url.protocol === 'http:' && !isAllowlisted(guarded.url, policy))
    throw refused(`${label} must use https (plain http is allowed only for hosts in IMPORT_ALLOW_HOSTS)`)
  return guarded
}
