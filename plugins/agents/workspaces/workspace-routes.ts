/**
 * GET /api/agents/tasks/:taskId/files, /file?path= and /diff: a development task's workspace, read while the
 * task runs and until AGENT_TASK_RETENTION_SECONDS after it ends. Only the task's owner reads it (scope
 * agents:run); another user's task, an unknown one and a removed workspace are all 404.
 */
import { Elysia, t } from 'elysia'
import type { AccessService } from '../../../src/auth/access-service.ts'
import type { PlanDirectory } from '../../../src/auth/plans.ts'
import { accessControl } from '../../../src/auth/plugin.ts'
import { AppError } from '../../../src/errors.ts'
import { integer, problem } from '../../../src/schemas.ts'
import { rateLimiting, type RateLimitingOptions } from '../../../src/rate-limit/plugin.ts'
import { TaskError, type AgentService } from '../tasks/index.ts'
import type { Workspaces } from './workspaces.ts'

export interface WorkspaceRoutesOptions {
  agents: Pick<AgentService, 'ownTask'>
  workspaces: Workspaces
  access: AccessService
  plans: PlanDirectory
  rateLimits: RateLimitingOptions
}

const taskParams = t.Object({ taskId: t.String({ minLength: 1, maxLength: 64 }) })
const fileQuery = t.Object({ path: t.String({ minLength: 1, maxLength: 4096, description: 'Path relative to the workspace root, for example src/index.ts' }) })
const entry = t.Object({ path: t.String(), type: t.Union([t.Literal('file'), t.Literal('symlink')]), bytes: integer({ minimum: 0 }) })
const leftOutEntry = t.Object({
  path: t.String(),
  reason: t.Union([
    t.Literal('nested repository'),
    t.Literal('hard link'),
    t.Literal('not a regular file'),
    t.Literal('outside the workspace'),
    t.Literal('unreadable'),
    t.Literal('ignored'),
  ]),
})
const change = t.Object({ path: t.String(), status: t.Union([t.Literal('added'), t.Literal('modified'), t.Literal('deleted')]) })

/** A workspace failure as the HTTP error it is. */
function asHttpError(err: unknown): unknown {
  if (!(err instanceof TaskError)) return err
  if (err.code === 'workspace_path_refused') return new AppError('bad_request', err.message)
  if (err.code === 'file_not_found' || err.code === 'workspace_not_found' || err.code === 'task_not_found') return new AppError('not_found', err.message)
  // Over its limits, or not text: the workspace's state, not the request, is why.
  return new AppError('conflict', err.message)
}

/** `work`'s value, its workspace failures turned into HTTP errors. */
async function answering<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work()
  } catch (err) {
    throw asHttpError(err)
  }
}

export function workspaceRoutes(options: WorkspaceRoutesOptions) {
  const { agents, workspaces } = options
  const owned = async (principal: { userId: string; orgId: string }, taskId: string) => {
    await answering(async () => {
      await agents.ownTask(principal, taskId)
      workspaces.get(taskId)
    })
  }
  return new Elysia({ name: 'agent-workspaces', detail: { tags: ['agents'] } })
    .use(accessControl(options))
    .use(rateLimiting(options.rateLimits))
    .get(
      '/api/agents/tasks/:taskId/files',
      async ({ params, principal }) => {
        await owned(principal, params.taskId)
        return { files: await answering(() => workspaces.list(params.taskId)) }
      },
      {
        params: taskParams,
        auth: 'agents:run',
        rateLimit: 'default',
        response: { 200: t.Object({ files: t.Array(entry) }), 401: problem, 403: problem, 404: problem, 429: problem },
        detail: {
          summary: "List a development task's workspace files",
          description: 'Every file and symbolic link of the workspace, with its size, sorted by path.',
        },
      },
    )
    .get(
      '/api/agents/tasks/:taskId/file',
      async ({ params, query, principal, set }) => {
        await owned(principal, params.taskId)
        const bytes = await answering(() => workspaces.read(params.taskId, query.path))
        set.headers['content-type'] = bytes.includes(0) ? 'application/octet-stream' : 'text/plain; charset=utf-8'
        set.headers['x-content-type-options'] = 'nosniff'
        return new Response(bytes)
      },
      {
        params: taskParams,
        query: fileQuery,
        auth: 'agents:run',
        rateLimit: 'default',
        response: {
          200: t.String({ description: 'The bytes of the file: text/plain when it holds no NUL byte, application/octet-stream otherwise' }),
          400: problem,
          401: problem,
          403: problem,
          404: problem,
          409: problem,
          429: problem,
        },
        detail: {
          summary: "Read one file of a development task's workspace",
          description: 'The file as it is now. A path with `..`, or through a symbolic link, is refused (400): links are listed but never followed.',
        },
      },
    )
    .get(
      '/api/agents/tasks/:taskId/diff',
      async ({ params, principal }) => {
        await owned(principal, params.taskId)
        const { diff, files, leftOut } = await answering(() => workspaces.diff(params.taskId))
        return { diff, files, leftOut }
      },
      {
        params: taskParams,
        auth: 'agents:run',
        rateLimit: 'default',
        response: {
          200: t.Object({
            diff: t.String({ description: 'Unified diff (git format) against the base commit' }),
            files: t.Array(change),
            leftOut: t.Array(leftOutEntry, { description: 'What the workspace holds that the diff does not carry, and why (at most 50)' }),
          }),
          401: problem,
          403: problem,
          404: problem,
          409: problem,
          429: problem,
        },
        detail: {
          summary: "The diff of a development task's workspace against its base",
          description:
            'The unified diff of every change so far, and the paths added, modified or deleted. Never carried: nested `.git` entries, files with other hard links, ' +
            'FIFOs, sockets and devices, and files the repository ignores (its `.gitignore`, and build output and caches by convention) unless the base holds them; ' +
            '`leftOut` names them. 409 when the workspace is over its limits.',
        },
      },
    )
}
