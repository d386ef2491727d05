/**
 * The agent commands. `debug` runs the enhanced chat's plan-check-repair loop on the given code, with code
 * from an imported repository found by search as context; `analyze` summarises an import with the model;
 * `index` rebuilds an import's search index; `status` reports tasks; `develop` and `continue` (develop/) and
 * `build_site` (sites/) change code in a workspace.
 */
import { AppError } from '../../src/errors.ts'
import { streamModelText } from '../../src/llm/model-call.ts'
import type { Models } from '../../src/llm/models.ts'
import { newMessageId } from '../../src/llm/ui-messages.ts'
import { StreamError } from '../../src/llm/provider.ts'
import type { UsageMeter } from '../../src/usage/meter.ts'
import type { ImportService, ImportView } from '../imports/index.ts'
import { answerEnhancedTurn, extractCode, type CodeChecker, type EnhancedOptions, type TurnObserver } from '../enhanced-chat/index.ts'
import type { CodeIndex } from '../code-search/index.ts'
import type { DebugParams } from './schemas.ts'
import { continueCommand, developCommand, plainSnippet, type DevelopDependencies, type DevelopLimits } from './develop/index.ts'
import { buildSiteCommand, type BuildSiteDependencies } from './sites/index.ts'
import type { Workspaces } from './workspaces/index.ts'
import { TaskError, type CommandContext, type CommandHandler, type CommandHandlers } from './tasks/index.ts'

export interface CommandDependencies {
  /** The model provider `debug` and `analyze` ask; they fail with `not_configured` without one. */
  models: Models
  /** Counts the tokens the commands spend. */
  meter?: Pick<UsageMeter, 'record'>
  imports: Pick<ImportService, 'get' | 'reindex' | 'readFiles'>
  codeIndex: Pick<CodeIndex, 'search'>
  /** Limits of the debug loop (the enhanced chat's settings). */
  debugLimits: Omit<EnhancedOptions, 'tests'>
  /** Task workspaces, for `develop`. */
  workspaces: Workspaces
  /** Checks `debug`'s code, runs `develop`'s commands in a workspace, and loads `build_site`'s pages. */
  sandbox: CodeChecker & BuildSiteDependencies['sandbox']
  /** Budgets of the `develop` loop. */
  developLimits: DevelopLimits
  /** Pushes `develop`'s change and opens its pull request; publishes `build_site`'s site. */
  publisher?: NonNullable<DevelopDependencies['publisher']> & NonNullable<BuildSiteDependencies['publisher']>
  /** Tools of the organisation's MCP servers, offered to `develop` and `continue` beside their own. */
  extraTools?: DevelopDependencies['extraTools']
}

/** The caller's succeeded import; the task fails with `not_found` or `import_not_ready` otherwise. */
async function succeededImport(imports: CommandDependencies['imports'], context: CommandContext, importId: string): Promise<ImportView> {
  const view = await imports.get(context.caller.orgId, importId)
  if (!view) throw new TaskError('not_found', `params.importId: no import ${importId} in your organisation`)
  if (view.status !== 'succeeded' || !view.summary) throw new TaskError('import_not_ready', `Import ${importId} is ${view.status}; it must have succeeded`)
  return view
}

/** The model provider, the default model and the meter, or the task fails with `not_configured`. */
function modelServices(deps: CommandDependencies) {
  try {
    return { provider: deps.models.provider(), model: deps.models.model, meter: deps.meter }
  } catch (err) {
    if (err instanceof AppError) throw new TaskError(err.code, err.message)
    throw err
  }
}

const fence = (language: string, text: string) => `\`\`\`${language}\n${text.replaceAll('```', '`\u200b``')}\n\`\`\``

export function debugCommand(deps: CommandDependencies): CommandHandler {
  return {
    steps: 4,
    async run(context) {
      const params = context.params as DebugParams
      const services = modelServices(deps)
      context.step(0, 'Gathering context')
      let related = ''
      if (params.importId) {
        const view = await succeededImport(deps.imports, context, params.importId)
        const query = (params.error ?? params.code ?? '').slice(0, 500)
        // The related code helps, the debugging does not depend on it: an index still loading (or failing) leaves it out.
        const hits = query.trim()
          ? await deps.codeIndex
              .search({ orgId: context.caller.orgId }, { query, repositoryIds: [view.repository.id], limit: 5, expand: false })
              .catch((err: unknown) => {
                context.log(`Could not search ${view.repository.name} (${(err as Error).message}); going on without related code`)
                return []
              })
          : []
        context.log(`Found ${hits.length} related snippet${hits.length === 1 ? '' : 's'} in ${view.repository.name}`)
        // Plain source: what the model copies into a fix must match the file.
        related = hits.map((hit) => `${hit.path}:${hit.startLine}-${hit.endLine}\n${fence('', plainSnippet(hit.snippet))}`).join('\n\n')
      }
      const language = params.language ?? 'typescript'
      const request = [
        'Debug this program: find the fault, say in one or two sentences what it is, and give the complete fixed program.',
        params.question && `What it should do: ${params.question}`,
        params.error && `The error seen:\n${fence('', params.error)}`,
        params.code && `The code:\n${fence(language === 'typescript' ? 'ts' : language === 'python' ? 'py' : 'js', params.code)}`,
        related && `Related code from the repository:\n${related}`,
      ]
        .filter(Boolean)
        .join('\n\n')

      let planned = 0
      const checks: { step: number; attempt: number; verdict: string; passed: boolean }[] = []
      const progress: TurnObserver = {
        planned(steps) {
          planned = steps.length
          context.step(1, `Planned ${planned} step${planned === 1 ? '' : 's'}`, planned + 3)
        },
        stepStarted(index, title) {
          context.step(2 + index, `Step ${index + 1}: ${title}`)
        },
        checked({ step, attempt, maxAttempts, verdict, passed }) {
          checks.push({ step: step + 1, attempt, verdict, passed })
          context.log(`Step ${step + 1}, attempt ${attempt} of ${maxAttempts}: ${verdict}`, passed ? 'info' : 'warn')
        },
      }
      context.step(1, 'Planning')
      const turn = {
        messageId: newMessageId(),
        orgId: context.caller.orgId,
        userId: context.caller.userId,
        history: [{ id: newMessageId(), role: 'user' as const, parts: [{ type: 'text', text: request }] }],
      }
      const limits = { ...deps.debugLimits, tests: params.tests }
      const { text } = await answerEnhancedTurn(services, deps.sandbox, limits, turn, context.signal, progress).catch((err: unknown) => {
        // A cancelled or timed-out task ends as its abort says, whatever the turn made of it.
        context.signal.throwIfAborted()
        throw err instanceof StreamError ? new TaskError(err.code, err.message) : err
      })
      context.signal.throwIfAborted()
      context.step(planned + 2, 'Summarising')
      const fix = lastCodeBlock(text)
      return {
        passed: checks.length > 0 && checks[checks.length - 1]!.passed,
        fix: fix ?? null,
        explanation: text.trim(),
        checks,
      }
    },
  }
}

/** The last fenced code block of a text: the latest version of the program the model gave. */
function lastCodeBlock(text: string): { language: string; code: string } | undefined {
  const blocks = text.split(/(?=```)/)
  for (let i = blocks.length - 1; i >= 0; i--) {
    const found = extractCode(blocks.slice(i).join(''))
    if (found) return found
  }
  return undefined
}

export function analyzeCommand(deps: CommandDependencies): CommandHandler {
  return {
    steps: 3,
    async run(context) {
      const services = modelServices(deps)
      context.step(0, 'Reading the import')
      const view = await succeededImport(deps.imports, context, String(context.params.importId))
      const { analysis } = view.summary!
      context.log(`${view.repository.name} at ${view.commit}: ${analysis.files} files, ${analysis.languages.length} languages`)
      context.step(1, 'Summarising with the model')
      const summary = await streamModelText(
        {
          provider: services.provider,
          meter: services.meter,
          caller: context.caller,
          model: services.model,
          emit: () => {},
          signal: context.signal,
          nextPartId: (kind) => `${kind}-${context.taskId}`,
        },
        [
          { role: 'system', content: 'You summarise software repositories for engineers who have not seen them. Be concrete and brief.' },
          {
            role: 'user',
            content:
              `Summarise the repository ${view.repository.name} in one paragraph (what it is, how it is built, how it is tested), ` +
              `then list up to five notable points. Its analysis:\n${fence('json', JSON.stringify(analysis, null, 2))}`,
          },
        ],
        { silent: true },
      )
      context.step(2, 'Done')
      return { repository: view.repository, commit: view.commit, summary: summary.trim(), analysis }
    },
  }
}

export function indexCommand(deps: CommandDependencies): CommandHandler {
  return {
    steps: 2,
    async run(context) {
      context.step(0, 'Reading files')
      let announced = false
      const outcome = await deps.imports
        .reindex(context.caller.orgId, String(context.params.importId), {
          signal: context.signal,
          onProgress: ({ stage, files }) => {
            if (stage !== 'indexing' || announced) return
            announced = true
            context.step(1, `Indexing ${files} files`)
          },
        })
        .catch((err: unknown) => {
          if (err instanceof AppError) throw new TaskError(err.code, err.message)
          throw err
        })
      if (!outcome) throw new TaskError('not_found', `params.importId: no import ${String(context.params.importId)} in your organisation`)
      context.log(`Indexed ${outcome.files} files as ${outcome.chunks} chunks at ${outcome.commit}`)
      return outcome
    },
  }
}

export const statusCommand: CommandHandler = {
  steps: 1,
  async run(context) {
    context.step(0, 'Reading tasks')
    const taskId = context.params.taskId
    if (typeof taskId === 'string') return { task: await context.tasks.ownTask(context.caller, taskId) }
    return { tasks: (await context.tasks.recent(context.caller)).filter((task) => task.taskId !== context.taskId) }
  },
}

export function createCommands(deps: CommandDependencies): CommandHandlers {
  return {
    debug: debugCommand(deps),
    analyze: analyzeCommand(deps),
    index: indexCommand(deps),
    status: statusCommand,
    develop: developCommand({ ...deps, limits: deps.developLimits }),
    build_site: buildSiteCommand({ ...deps, limits: deps.developLimits }),
    continue: continueCommand({ ...deps, limits: deps.developLimits }),
  }
}
