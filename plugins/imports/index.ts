import { Elysia } from 'elysia'
import type { AccessService } from '../../src/auth/access-service.ts'
import type { PlanDirectory } from '../../src/auth/plans.ts'
import { accessControl } from '../../src/auth/plugin.ts'
import { AppError } from '../../src/errors.ts'
import { problem } from '../../src/schemas.ts'
import { rateLimiting, type RateLimitingOptions } from '../../src/rate-limit/plugin.ts'
import { sseResponse, type SseEvent } from '../../src/sse.ts'
import type { ImportEvent, ImportService } from './import-service.ts'
import { importAccepted, importBody, importParams, importView, progressStreamDescription, type ImportView } from './schemas.ts'
export { importsSettings } from './settings.ts'

export { createImportService, type ImportEvent, type ImportService } from './import-service.ts'
export { normaliseDirectory } from './import-files.ts'
export type { ImportView } from './schemas.ts'

export interface ImportsPluginOptions {
  imports: ImportService
  access: AccessService
  plans: PlanDirectory
  rateLimits: RateLimitingOptions
  /** Comment heartbeat interval of the progress streams. Default 5000 ms. */
  heartbeatMs?: number
}

const streamDoc = {
  200: { description: progressStreamDescription, content: { 'text/event-stream': { schema: { type: 'string' } } } },
} as const

/** The quality a client gives a media type in Accept (`type/*` and `*\/*` count), 0 when it does not take it. */
function quality(accept: string, type: string): number {
  let best = 0
  for (const range of accept.toLowerCase().split(',')) {
    const [media = '', ...params] = range.split(';').map((part) => part.trim())
    const q = Number(params.find((p) => p.startsWith('q='))?.slice(2) ?? 1)
    const matches = media === type || media === '*/*' || (media.endsWith('/*') && type.startsWith(media.slice(0, -1)))
    // An exact match outranks a wildcard of the same quality.
    if (matches) best = Math.max(best, (Number.isFinite(q) ? q : 0) + (media === type ? 0.0001 : 0))
  }
  return best
}

/** Streams when the client prefers text/event-stream to JSON; no Accept, or `*\/*`, gets JSON. */
export function wantsEventStream(accept: string | null): boolean {
  if (!accept) return false
  const stream = quality(accept, 'text/event-stream')
  return stream > 0.0001 && stream > quality(accept, 'application/json')
}

async function* asSse(events: AsyncIterable<ImportEvent>): AsyncGenerator<SseEvent> {
  for await (const { id, event, data } of events) yield { id: String(id), event, data: JSON.stringify(data) }
}

function lastEventId(request: Request): number {
  const value = request.headers.get('last-event-id')?.trim()
  return value && /^\d{1,9}$/.test(value) ? Number(value) : 0
}

const notFound = () => new AppError('not_found', 'No such import in this organisation')

/**
 * POST /api/codehost/import starts an import and streams its progress (or answers 202 with where to follow it);
 * GET /api/codehost/imports/:id reads it, or follows it by SSE. Imports are per organisation: another
 * organisation's import is 404.
 */
export function importsPlugin(options: ImportsPluginOptions) {
  const { imports } = options
  const stream = async (orgId: string, importId: string, request: Request, headers: Record<string, string> = {}) => {
    const events = await imports.follow(orgId, importId, { after: lastEventId(request), signal: request.signal })
    if (!events) throw notFound()
    return sseResponse(asSse(events), { signal: request.signal, heartbeatMs: options.heartbeatMs, headers: { 'x-import-id': importId, ...headers } })
  }

  return new Elysia({ name: 'imports', detail: { tags: ['code hosting'] } })
    .use(accessControl(options))
    .use(rateLimiting(options.rateLimits))
    .post(
      '/api/codehost/import',
      async ({ body, principal, request, set, status }) => {
        const started = await imports.start({ orgId: principal.orgId, userId: principal.userId }, body)
        if (wantsEventStream(request.headers.get('accept'))) return stream(principal.orgId, started.id, request, { location: started.statusUrl })
        set.headers.location = started.statusUrl
        return status(202, { importId: started.id, status: started.status, statusUrl: started.statusUrl, repository: started.repository })
      },
      {
        body: importBody,
        auth: 'integrations:write',
        rateLimit: 'integrations',
        response: { 202: importAccepted, 400: problem, 401: problem, 403: problem, 409: problem, 422: problem, 429: problem, 503: problem },
        detail: {
          summary: 'Import a Git repository: clone (or fetch what changed), analyse and index it, with live progress',
          description:
            'With `Accept: text/event-stream` the answer is the progress stream; otherwise 202 with the import id and a statusUrl to read or follow. ' +
            'The URL is checked before any connection (400 repository_url_refused), and so is every redirect. The import goes on when the client disconnects. ' +
            'Private repositories on IMPORT_CODEHOST_URL use the token the user connected in integrations. 409 import_in_progress names the running import of the same repository. ' +
            'Failures later on (limits, access, timeout) end the stream with an `error` event and are kept with the import.',
          responses: streamDoc,
        },
      },
    )
    .get(
      '/api/codehost/imports/:id',
      async ({ params, principal, request }) => {
        // Elysia sends a Response as it is; the 200 schema describes the JSON answer.
        if (wantsEventStream(request.headers.get('accept'))) return (await stream(principal.orgId, params.id, request)) as unknown as ImportView
        const found = await imports.get(principal.orgId, params.id)
        if (!found) throw notFound()
        return found
      },
      {
        params: importParams,
        auth: 'integrations:read',
        rateLimit: 'default',
        response: { 200: importView, 401: problem, 403: problem, 404: problem, 429: problem },
        detail: {
          summary: 'Read an import, or follow its progress by SSE',
          description:
            'JSON: status (queued, cloning, analysing, indexing, succeeded, failed), live progress while active, the summary with the analysis once succeeded, or the error. ' +
            'With `Accept: text/event-stream`: every event from the first (or after `Last-Event-ID`), then live ones until `summary` or `error`.',
          responses: streamDoc,
        },
      },
    )
}
