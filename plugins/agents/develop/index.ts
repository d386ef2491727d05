/**
 * The `develop` and `continue` commands (develop.ts): the model's loop over the tools (develop-tools.ts, each tool's
 * work in the files beside it) in a task's workspace, then the checks, the commit and, when asked, the push. They
 * load with the first task that runs one (loaded-on-first-task.ts).
 */
export { continueCommand, developCommand } from './loaded-on-first-task.ts'
export type { DevelopDependencies, DevelopLimits } from './develop.ts'
export { plainSnippet } from './search.ts'
