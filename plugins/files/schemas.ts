import { t } from 'elysia'
import { integer } from '../../src/schemas.ts'

/** The body of POST /api/files: exactly one `file` part. Its size and type are checked by the service (413, 415). */
export const uploadBody = (maxBytes: number) =>
  t.Object(
    {
      file: t.File({
        maxSize: maxBytes,
        description:
          'The file: a PNG, JPEG, GIF or WebP image, a PDF, or UTF-8 text (plain, Markdown, CSV, JSON, code). Its type is read from its bytes; the declared type only names a kind of text',
      }),
    },
    { additionalProperties: false },
  )

export const fileInfo = t.Object({
  id: t.String({ description: 'Attach it to a chat message as { type: "file", url: "file:<id>" }' }),
  name: t.String({ description: 'The uploaded name, its last path segment without control characters' }),
  mediaType: t.String({ description: 'The type read from the bytes' }),
  size: integer({ description: 'Bytes' }),
  createdAt: integer({ description: 'Milliseconds since the epoch' }),
})

export const fileParams = t.Object({ id: t.String({ minLength: 1, maxLength: 64, pattern: '^[A-Za-z0-9_-]+$' }) })

export const deleteAnswer = t.Object({ id: t.String(), deleted: t.Boolean() })
