/**
 * The `build_site` command: the develop loop builds a static site in a new, empty workspace; the site is then
 * checked (the HTML parses, every local link and asset resolves, the pages load with their scripts in the
 * sandbox) and published with the publish service. The answer's URL is the one the Pages API reports.
 */
import { AppError } from '../../../src/errors.ts'
import type { Caller } from '../../../src/auth/caller.ts'
import type { PublishAnswer, PublishJob } from '../../publish/index.ts'
import { developCommand, type DevelopDependencies } from '../develop/index.ts'
import type { BuildSiteParams } from '../schemas.ts'
import { TaskError, type CommandHandler, type TaskContext } from '../tasks/index.ts'

// parse5 loads with the first site checked, not at start-up.
const siteCheck = lazily(() => import('./site-check.ts'))
import { lazily } from '../../../src/lazy.ts'
import { loadSitePages, type PageLoadSandbox } from './site-load.ts'

export interface BuildSiteDependencies extends Omit<DevelopDependencies, 'systemPrompt' | 'sandbox' | 'publisher'> {
  /** Runs the loop's commands, and loads the site's pages; without a sandbox the pages are not loaded (a warning). */
  sandbox: DevelopDependencies['sandbox'] & PageLoadSandbox
  publisher?: { prepare(caller: Caller, body: PublishRequest): Promise<PublishJob> }
}

/** What build_site asks the publish service for. */
export interface PublishRequest {
  repository: string
  branch?: string
  customDomain?: string
  files: { path: string; content: string; encoding: 'base64' }[]
  message?: string
}

const SITE_PROMPT = [
  'You are a web developer building a static website in an empty workspace through tools. Write plain HTML, CSS and, only if needed, JavaScript files.',
  'The root page is index.html; start every page with <!doctype html>. Use relative links between pages and to assets, and make sure every file you link to exists. Close every element you open.',
  'Each page is then loaded with its scripts in a headless browser: a script that throws, or asks for a file the site lacks, keeps the site from being published.',
  'No build step and no network: the files you write are published as they are. When done, call finish with a short summary.',
].join('\n')

const asAppError = (err: unknown) => (err instanceof AppError ? new TaskError(err.code, err.message) : err)

export function buildSiteCommand(deps: BuildSiteDependencies): CommandHandler<TaskContext> {
  // The loop's ETA counts the two steps that follow it: checking the site and publishing it. Nothing is pushed.
  const develop = developCommand({ ...deps, publisher: undefined, systemPrompt: SITE_PROMPT, stepsAfter: 2 })
  return {
    steps: develop.steps,
    async run(context) {
      const params = context.params as BuildSiteParams
      if (!deps.publisher) throw new TaskError('not_configured', 'Publishing is not available in this deployment')
      // The loop's steps are as many as it took: ours follow its last.
      let last = 0
      const step: typeof context.step = (index, label, steps) => {
        last = index
        context.step(index, label, steps)
      }
      const built = (await develop.run({ ...context, step, params: { instruction: params.instruction } })) as {
        summary: string | null
        finished: boolean
        stopped?: string
      }
      context.step(last + 1, 'Checking the site', last + 3)
      const files = []
      for (const entry of await deps.workspaces.list(context.taskId))
        if (entry.type === 'file') files.push({ path: entry.path, bytes: await deps.workspaces.read(context.taskId, entry.path) })
      const problems = (await siteCheck()).checkSite(files)
      // Loading pages that do not parse or link right would only repeat those problems.
      if (!problems.length) {
        const loaded = await loadSitePages(deps.sandbox, files, context.signal)
        for (const warning of loaded.warnings.slice(0, 20)) context.log(warning, 'warn')
        problems.push(...loaded.problems)
      }
      for (const problem of problems.slice(0, 20)) context.log(problem, 'warn')
      if (problems.length)
        throw new TaskError(
          'invalid_site',
          `The site is not published: ${problems.length} problem${problems.length === 1 ? '' : 's'} (${problems.slice(0, 5).join('; ')})`,
        )
      context.step(last + 2, `Publishing to ${params.repository}`, last + 3)
      let answer: PublishAnswer
      try {
        const job = await deps.publisher.prepare(context.caller, {
          repository: params.repository,
          ...(params.branch ? { branch: params.branch } : {}),
          ...(params.customDomain ? { customDomain: params.customDomain } : {}),
          files: files.map((f) => ({ path: f.path, content: Buffer.from(f.bytes).toString('base64'), encoding: 'base64' as const })),
          message: params.instruction.split('\n')[0]!.trim().slice(0, 72) || 'Publish site',
        })
        answer = await job.run((progress) => context.log(`publish: ${progress.stage}`))
      } catch (err) {
        throw asAppError(err)
      }
      context.log(`Published at ${answer.url}`)
      return {
        summary: built.summary,
        finished: built.finished,
        ...(built.stopped ? { stopped: built.stopped } : {}),
        url: answer.url,
        repository: answer.repository,
        branch: answer.branch,
        commit: answer.commit,
        pages: answer.pages,
        files: files.map((f) => f.path),
      }
    },
  }
}
