/**
 * Files' face: POST /api/files stores an upload in the organisation (multipart/form-data, one `file` part), GET
 * reads its metadata and its bytes (always as a download, never rendered), DELETE removes it. Chat messages name
 * files by id; the chat service resolves them through `FilesService.resolveAttachments`.
 */
import { Elysia, t } from 'elysia'
import type { AccessService } from '../../src/auth/access-service.ts'
import type { PlanDirectory } from '../../src/auth/plans.ts'
import { accessControl } from '../../src/auth/plugin.ts'
import { multipartBody } from '../../src/body.ts'
import { rateLimiting, type RateLimitingOptions } from '../../src/rate-limit/plugin.ts'
import { problem } from '../../src/schemas.ts'
import { deleteAnswer, fileInfo, fileParams, uploadBody } from './schemas.ts'
import { tooLargeFile, type FilesService } from './service.ts'
import type { FilesSettings } from './settings.ts'
import { attachmentDisposition } from './sniff.ts'

export { createFilesService, referencedFileId, type FileInfo, type FilesService } from './service.ts'
export { filesSettings, type FilesSettings } from './settings.ts'

export interface FilesPluginOptions {
  files: FilesService
  settings: Pick<FilesSettings, 'maxBytes'>
  access: AccessService
  plans: PlanDirectory
  rateLimits: RateLimitingOptions
}

/** Room for the multipart boundaries and part headers around the file itself. */
const MULTIPART_OVERHEAD_BYTES = 64 * 1024

export function filesPlugin(options: FilesPluginOptions) {
  const { files, settings } = options
  if (!(settings.maxBytes > 0)) throw new Error('filesPlugin: settings.maxBytes must be positive')
  const errors = { 401: problem, 403: problem, 429: problem }

  return new Elysia({ name: 'files', seed: settings.maxBytes, detail: { tags: ['files'] } })
    .use(accessControl(options))
    .use(rateLimiting(options.rateLimits))
    .post(
      '/api/files',
      async ({ body, principal, set }) => {
        set.status = 201
        return files.upload(principal, body.file)
      },
      {
        // Read with a cap a little above FILES_MAX_BYTES: a larger body is refused as it arrives.
        parse: multipartBody(settings.maxBytes + MULTIPART_OVERHEAD_BYTES, () => tooLargeFile(settings.maxBytes), settings.maxBytes),
        body: uploadBody(settings.maxBytes),
        type: 'multipart/form-data',
        auth: 'chat:write',
        rateLimit: 'default',
        response: { 201: fileInfo, ...errors, 409: problem, 413: problem, 415: problem, 422: problem },
        detail: {
          summary: "Upload a file to the organisation's files, to attach to chat messages",
          description:
            'multipart/form-data with exactly one part named `file`. Refused: over FILES_MAX_BYTES (413 file_too_large), bytes of a type not accepted (415 unsupported_file_type), past FILES_ORG_QUOTA_BYTES (409 quota_exceeded).',
        },
      },
    )
    .get('/api/files/:id', async ({ params, principal }) => files.file(principal, params.id), {
      params: fileParams,
      auth: 'chat:write',
      rateLimit: 'default',
      response: { 200: fileInfo, ...errors, 404: problem },
      detail: { summary: "A file's metadata; 404 for a file of another organisation" },
    })
    .get(
      '/api/files/:id/content',
      async ({ params, principal }) => {
        const { file, bytes } = await files.content(principal, params.id)
        // Offered as a download, typed as stored (never a type a browser renders as a page), and sandboxed should it be opened.
        return new Response(bytes, {
          headers: {
            'content-type': file.mediaType.startsWith('text/') ? `${file.mediaType}; charset=utf-8` : file.mediaType,
            'content-length': String(bytes.byteLength),
            'content-disposition': attachmentDisposition(file.name),
            'x-content-type-options': 'nosniff',
            'content-security-policy': "default-src 'none'; sandbox",
            'cache-control': 'private, no-store',
          },
        })
      },
      {
        params: fileParams,
        auth: 'chat:write',
        rateLimit: 'default',
        response: { 200: t.Any({ description: 'The bytes, as a download (Content-Disposition: attachment)' }), ...errors, 404: problem },
        detail: { summary: "A file's bytes, as a download" },
      },
    )
    .delete('/api/files/:id', async ({ params, principal }) => files.remove(principal, params.id), {
      params: fileParams,
      auth: 'chat:write',
      rateLimit: 'default',
      response: { 200: deleteAnswer, ...errors, 404: problem },
      detail: { summary: 'Delete a file (its uploader, or an owner or admin); chats that named it read a note in its place' },
    })
}
