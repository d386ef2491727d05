import { Elysia } from 'elysia'
import type { AccessService } from '../../src/auth/access-service.ts'
import type { PlanDirectory } from '../../src/auth/plans.ts'
import { accessControl } from '../../src/auth/plugin.ts'
import { AppError, problemBody } from '../../src/errors.ts'
import type { Logger } from '../../src/log.ts'
import { problem } from '../../src/schemas.ts'
import { rateLimiting, type RateLimitingOptions } from '../../src/rate-limit/plugin.ts'
import { requestMeta } from '../../src/request-pipeline.ts'
import { sseResponse, type SseEvent } from '../../src/sse.ts'
import { publishAnswer, publishBody, streamDescription, type PublishAnswer } from './schemas.ts'
import type { PublishJob, Publisher } from './service.ts'
export { publishSettings } from './settings.ts'

export { createPublisher, type ChangeProposal, type FileChange, type ProposedChange, type Publisher, type PublishJob } from './service.ts'
export type { PublishAnswer } from './schemas.ts'

export interface PublishPluginOptions {
  publisher: Publisher
  access: AccessService
  plans: PlanDirectory
  rateLimits: RateLimitingOptions
  logger: Logger
  /** Comment heartbeat interval of the progress stream. Default 5000 ms. */
  heartbeatMs?: number
}

const wantsEventStream = (request: Request) => request.headers.get('accept')?.includes('text/event-stream') ?? false

/**
 * The job's progress as SSE events, then its outcome. The publish goes on if the client leaves:
 * stopping between the push and enabling Pages would leave the site half set up.
 */
async function* progressEvents(job: PublishJob, requestId: string, logger: Logger): AsyncGenerator<SseEvent> {
  const queue: SseEvent[] = []
  let finished = false
  let wake: (() => void) | undefined
  const push = (event: SseEvent) => {
    queue.push(event)
    wake?.()
  }
  void job
    .run((progress) => push({ event: 'progress', data: JSON.stringify(progress) }))
    .then(
      (answer) => push({ event: 'published', data: JSON.stringify(answer) }),
      (error) => {
        let failure = error instanceof AppError ? error : undefined
        if (!failure) {
          logger.error('publish failed', { requestId, err: error })
          failure = new AppError('internal_error', 'An unexpected error occurred; quote the request id when reporting it')
        }
        push({ event: 'error', data: JSON.stringify(problemBody(failure, requestId)) })
      },
    )
    .finally(() => {
      finished = true
      wake?.()
    })
  for (;;) {
    const next = queue.shift()
    if (next) yield next
    else if (finished) return
    else await new Promise<void>((resolve) => (wake = resolve))
  }
}

/** POST /api/publish-codehost-pages: a generated site to GitHub Pages, as one commit on the branch. */
export function publishPlugin(options: PublishPluginOptions) {
  const { publisher, logger } = options
  const answered = async (job: Promise<PublishJob>): Promise<PublishAnswer> => (await job).run()
  const streamed = async (job: Promise<PublishJob>, request: Request): Promise<Response> =>
    sseResponse(progressEvents(await job, requestMeta(request).id, logger), { heartbeatMs: options.heartbeatMs })
  return new Elysia({ name: 'publish', detail: { tags: ['publishing'] } })
    .use(accessControl(options))
    .use(rateLimiting(options.rateLimits))
    .post(
      '/api/publish-codehost-pages',
      // Everything that can be checked without GitHub fails in `prepare`, as a plain problem answer, stream asked or not.
      ({ body, principal, request }) => {
        const job = publisher.prepare(principal, body)
        return wantsEventStream(request) ? streamed(job, request) : answered(job)
      },
      {
        body: publishBody,
        auth: 'integrations:write',
        rateLimit: 'integrations',
        response: {
          200: publishAnswer,
          401: problem,
          403: problem,
          404: problem,
          409: problem,
          413: problem,
          422: problem,
          429: problem,
          502: problem,
          503: problem,
          504: problem,
        },
        detail: {
          summary: 'Publish a site to GitHub Pages: one commit on the branch, pushed with the connected GitHub account, Pages enabled for it',
          description:
            'Needs a GitHub connection (409 codehost_not_connected otherwise). The files replace the branch content entirely; .nojekyll is added, and CNAME when customDomain is set. ' +
            'Checked before anything is sent: paths (422 invalid_site), PUBLISH_MAX_FILES and PUBLISH_MAX_SITE_BYTES (413 site_too_large), index.html unless requireIndex is false. ' +
            'Publishing the content the branch already holds makes no commit (unchanged: true). A branch that moved meanwhile or a refused push is 409 push_rejected; a token without the right is 403 codehost_forbidden. ' +
            streamDescription,
        },
      },
    )
}
