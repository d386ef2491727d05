/** Branch names the service gives Git or a code host: a safe subset of what git-check-ref-format allows. */

/** Why `branch` is not a branch name the service takes, or undefined when it is. */
export function branchProblem(branch: string): string | undefined {
  if (!/^[A-Za-z0-9._/-]{1,200}$/.test(branch)) return 'must be 1-200 letters, digits, ., -, _ or /'
  if (branch.startsWith('/') || branch.endsWith('/') || branch.includes('//')) return 'must not start or end with / or hold //'
  if (branch.includes('..')) return 'must not contain ..'
  if (branch.endsWith('.') || branch.split('/').some((part) => part.startsWith('.') || part.endsWith('.lock')))
    return 'has a part starting with . or ending with .lock or .'
  if (branch.startsWith('-')) return 'must not start with -'
  return undefined
}
