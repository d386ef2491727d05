/**
 * Where a site goes: the repository, branch and custom domain, checked with GitHub's own naming rules
 * so nothing odd ever reaches a URL, a ref or the CNAME file. Pure.
 */
import { branchProblem } from '../../src/branch-names.ts'
import { AppError, type FieldProblem } from '../../src/errors.ts'

export interface PublishTarget {
  owner: string
  name: string
  branch: string
  /** Lower-cased host name, when the site has one. */
  customDomain?: string
}

// Logins: letters, digits and single inner hyphens, at most 39 characters.
const OWNER = /^[A-Za-z0-9](?:[A-Za-z0-9]|-(?=[A-Za-z0-9])){0,38}$/
const REPOSITORY = /^[A-Za-z0-9._-]{1,100}$/
const HOST_LABEL = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/

export function repositoryProblem(full: string): string | undefined {
  const parts = full.split('/')
  if (parts.length !== 2) return 'must be owner/name'
  const [owner, name] = parts as [string, string]
  if (!OWNER.test(owner)) return 'owner must be 1-39 letters, digits or single inner hyphens'
  if (!REPOSITORY.test(name)) return 'name must be 1-100 letters, digits, ., - or _'
  if (name === '.' || name === '..') return 'name must not be . or ..'
  if (name.toLowerCase().endsWith('.git')) return 'name must not end with .git'
  return undefined
}

/** The rules of `git check-ref-format` for a branch name, narrowed to printable ASCII. */
export function domainProblem(domain: string): string | undefined {
  if (domain.length > 253) return 'must be at most 253 characters'
  const labels = domain.toLowerCase().split('.')
  if (labels.length < 2) return 'must be a host name with at least one dot (docs.example.com)'
  if (!labels.every((label) => HOST_LABEL.test(label))) return 'must be a host name: labels of letters, digits and inner hyphens'
  if (/^\d+$/.test(labels.at(-1)!)) return 'must be a host name, not an address'
  return undefined
}

/** The target, or 422 `validation_failed` naming each bad field. */
export function parseTarget(input: { repository: string; branch?: string; customDomain?: string }, defaultBranch: string): PublishTarget {
  const problems: FieldProblem[] = []
  const repo = repositoryProblem(input.repository)
  if (repo) problems.push({ field: 'repository', message: repo })
  const branch = input.branch ?? defaultBranch
  const ref = branchProblem(branch)
  if (ref) problems.push({ field: 'branch', message: ref })
  const domain = input.customDomain === undefined ? undefined : domainProblem(input.customDomain)
  if (domain) problems.push({ field: 'customDomain', message: domain })
  if (problems.length > 0) throw new AppError('validation_failed', problems.map((p) => `${p.field}: ${p.message}`).join('; '), { errors: problems })
  const [owner, name] = input.repository.split('/') as [string, string]
  return { owner, name, branch, ...(input.customDomain ? { customDomain: input.customDomain.toLowerCase() } : {}) }
}

/**
 * Where GitHub Pages serves a branch-published site: the custom domain, the user or organisation
 * site (`<owner>.github.io` repositories) at the root, or a project site under /<name>/.
 */
export function publicUrl(target: PublishTarget): string {
  if (target.customDomain) return `https://${target.customDomain}/`
  const host = `${target.owner.toLowerCase()}.github.io`
  return target.name.toLowerCase() === host ? `https://${host}/` : `https://${host}/${target.name}/`
}
