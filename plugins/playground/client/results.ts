/**
 * An agent task's result as the panel shows it: the outcome that labels it, then what each command's output holds
 * (docs/agents.mdx). Diffs, code and command output are text in a `<pre>`; summaries and explanations are Markdown,
 * sanitised (./markdown.ts); a link is made only for a web address.
 */
import { el, externalLink, shortJson } from './dom.ts'
import { markdown } from './markdown.ts'

// biome-ignore lint/suspicious/noExplicitAny: a task's output, shown field by field as far as it has them
type Output = any

export type Outcome = 'succeeded' | 'failed' | 'stopped'

/** Outcome labels: a task that ended with a result can still have failed its checks or been stopped by a budget. */
export const OUTCOME_LABEL: Record<Outcome, string> = { succeeded: 'Succeeded', failed: 'Failed', stopped: 'Stopped' }

type Check = { command?: string; verdict?: string; passed?: boolean; exitCode?: number | null; output?: string }

/**
 * What a result says happened: a debug fix that did not pass, a check that failed or a refused push is a failure;
 * a develop or build_site loop that ran out of a budget or got stuck (`stopped`, `finished: false`) is stopped;
 * anything else succeeded.
 */
export function outcomeOf(output: Output): Outcome {
  if (!output || typeof output !== 'object') return 'succeeded'
  // A debug task's checks are every attempt, failed ones included: whether its last fix passed is the outcome.
  if (typeof output.passed === 'boolean') return output.passed ? 'succeeded' : 'failed'
  const checks = Array.isArray(output.checks) ? (output.checks as Check[]) : []
  if (checks.some((c) => c.passed === false || (c.passed === undefined && c.verdict !== undefined && c.verdict !== 'passed'))) return 'failed'
  if (output.pushRefused) return 'failed'
  if (output.stopped || output.finished === false) return 'stopped'
  return 'succeeded'
}

const fact = (label: string, value: Node | string) => el('div', { class: 'fact' }, el('dt', {}, label), el('dd', {}, value))
const present = (nodes: (HTMLElement | false | undefined | null | '')[]) => nodes.filter((node): node is HTMLElement => Boolean(node))

function checkList(checks: Check[]): HTMLElement | false {
  if (checks.length === 0) return false
  return el(
    'ul',
    { class: 'checks' },
    ...checks.map((c) =>
      el(
        'li',
        { 'data-verdict': String(c.verdict ?? (c.passed ? 'passed' : 'failed')) },
        el('code', {}, String(c.command ?? '')),
        ': ',
        el('strong', {}, String(c.verdict ?? (c.passed ? 'passed' : 'failed'))),
        typeof c.exitCode === 'number' && ` (exit ${c.exitCode})`,
        c.output && el('details', {}, el('summary', {}, 'Output'), el('pre', {}, String(c.output))),
      ),
    ),
  )
}

/** A debug task's output: whether the fix passed, each check, the fixed program and the explanation. */
function debugResult(output: Output): HTMLElement[] {
  const checks = (output.checks ?? []) as { step: number; attempt: number; verdict: string }[]
  return present([
    el('p', { 'data-passed': String(output.passed) }, el('strong', {}, output.passed ? 'The fix passed its checks' : 'No fix passed its checks')),
    checks.length > 0 &&
      el(
        'ul',
        { class: 'checks' },
        ...checks.map((c) => el('li', { 'data-verdict': String(c.verdict) }, `Step ${c.step}, attempt ${c.attempt}: `, el('strong', {}, String(c.verdict)))),
      ),
    output.fix && el('pre', { class: 'fix' }, String(output.fix.code ?? '')),
    el('details', { open: '' }, el('summary', {}, 'Explanation'), markdown(String(output.explanation ?? ''), { class: 'text' })),
  ])
}

/** A develop (or continue) task's output: summary, branch, pull request, checks, changed files and the diff. */
function developResult(output: Output): HTMLElement[] {
  const files = (output.files ?? []) as { path: string; status: string }[]
  const pullRequest = output.pullRequest as { number?: number; url?: string; draft?: boolean } | undefined
  const facts = present([
    output.stopped && fact('Stopped', `a budget ran out or the loop was stuck (${output.stopped})`),
    output.branch && fact('Branch', el('code', { class: 'branch' }, String(output.branch))),
    output.commit && fact('Commit', el('code', {}, String(output.commit))),
    output.pushed?.repository && fact('Pushed to', `${output.pushed.repository} (${output.pushed.branch})`),
    pullRequest?.url &&
      fact('Pull request', externalLink(String(pullRequest.url), `#${pullRequest.number ?? ''}${pullRequest.draft ? ' (draft)' : ''} ${pullRequest.url}`)),
    output.pushRefused && fact('Not pushed', String(output.pushRefused.message ?? output.pushRefused.code)),
  ])
  return present([
    markdown(String(output.summary ?? ''), { class: 'summary' }),
    facts.length > 0 && el('dl', { class: 'facts' }, ...facts),
    checkList((output.checks ?? []) as Check[]),
    files.length > 0 && el('ul', { class: 'files' }, ...files.map((f) => el('li', { 'data-status': f.status }, `${f.status}: `, el('code', {}, f.path)))),
    typeof output.diff === 'string' && el('details', { open: '' }, el('summary', {}, 'Diff'), el('pre', { class: 'diff' }, output.diff || '(no changes)')),
  ])
}

/** A build_site task's output: summary, the published site's address, where it was pushed, and its files. */
function siteResult(output: Output): HTMLElement[] {
  const files = (output.files ?? []) as (string | { path: string })[]
  const facts = present([
    output.stopped && fact('Stopped', `a budget ran out or the loop was stuck (${output.stopped})`),
    output.url && fact('Site', externalLink(String(output.url), String(output.url))),
    output.repository && fact('Repository', `${output.repository}${output.branch ? ` (${output.branch})` : ''}`),
    output.commit && fact('Commit', el('code', {}, String(output.commit))),
  ])
  return present([
    markdown(String(output.summary ?? ''), { class: 'summary' }),
    facts.length > 0 && el('dl', { class: 'facts' }, ...facts),
    files.length > 0 && el('ul', { class: 'files' }, ...files.map((f) => el('li', {}, el('code', {}, typeof f === 'string' ? f : f.path)))),
  ])
}

/** The result of a task of this command, as elements. */
export function taskResult(command: string, output: Output): HTMLElement[] {
  if (!output || typeof output !== 'object') return [el('pre', {}, shortJson(output, 4000))]
  if (command === 'debug' && 'passed' in output) return debugResult(output)
  if (command === 'build_site') return siteResult(output)
  if ('diff' in output || 'checks' in output || 'summary' in output) return developResult(output)
  return [el('pre', {}, shortJson(output, 4000))]
}
