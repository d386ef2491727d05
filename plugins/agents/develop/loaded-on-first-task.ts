/**
 * The `develop` and `continue` commands as the agents hold them from start-up: their step counts at once, the loop
 * itself (develop.ts, its tools and the files beside them) loaded by the first task that runs one of them.
 */
import { lazily } from '../../../src/lazy.ts'
import { loopStepsAhead, type CommandContext, type CommandHandler, type TaskContext } from '../tasks/index.ts'
import type { DevelopDependencies } from './develop.ts'

const loop = lazily(() => import('./develop.ts'))

/** The steps a develop loop expects before it has a pace of its own: opening the workspace, the loop, the checks, then `stepsAfter`. */
export function developSteps(maxSteps: number, stepsAfter = 0): number {
  return 1 + loopStepsAhead(0, maxSteps) + 1 + stepsAfter
}

function builtOnFirstRun<Context extends TaskContext>(
  steps: number,
  build: (loaded: typeof import('./develop.ts')) => CommandHandler<Context>,
): CommandHandler<Context> {
  let handler: CommandHandler<Context> | undefined
  return {
    steps,
    async run(context) {
      handler ??= build(loop.loaded ?? (await loop()))
      return handler.run(context)
    },
  }
}

export function developCommand(deps: DevelopDependencies): CommandHandler<TaskContext> {
  return builtOnFirstRun(developSteps(deps.limits.maxSteps, deps.stepsAfter), (loaded) => loaded.developCommand(deps))
}

export function continueCommand(deps: DevelopDependencies): CommandHandler<CommandContext> {
  return builtOnFirstRun(developSteps(deps.limits.maxSteps), (loaded) => loaded.continueCommand(deps))
}
