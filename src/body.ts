import { AppError } from './errors.ts'

const JSON_TYPE = /^application\/(?:[\w.+-]+\+)?json\b/i

export function isJsonContentType(contentType: string | null | undefined): boolean {
  return !!contentType && JSON_TYPE.test(contentType)
}

/**
 * Reads a body as UTF-8 text, refusing more than `limit` bytes even when the client
 * sent no Content-Length (chunked uploads are counted as they arrive).
 */
export async function readBodyText(request: Request, limit: number): Promise<string> {
  const declared = request.headers.get('content-length')
  if (declared !== null && Number(declared) > limit) throw tooLarge(limit)
  if (!request.body) return ''
  const reader = request.body.getReader()
  const chunks: Uint8Array[] = []
  let total = 0
  for (;;) {
    const { done, value } = await reader.read()
    if (done) break
    total += value.byteLength
    if (total > limit) {
      await reader.cancel().catch(() => {})
      throw tooLarge(limit)
    }
    chunks.push(value)
  }
  return new TextDecoder('utf-8', { fatal: true }).decode(Buffer.concat(chunks))
}

export function tooLarge(limit: number): AppError {
  return new AppError('payload_too_large', `Request body exceeds the limit of ${limit} bytes`, {
    extensions: { limitBytes: limit },
  })
}

/** Parses JSON, answering 400 with the position of the first syntax error. */
export function parseJsonBody(text: string): unknown {
  if (text.trim() === '') throw new AppError('invalid_json', 'Request body is empty; a JSON document was expected', { errors: [{ field: 'body', message: 'empty body' }] })
  try {
    return JSON.parse(text)
  } catch (err) {
    throw new AppError('invalid_json', `Request body is not valid JSON: ${(err as Error).message}`, {
      errors: [{ field: 'body', message: (err as Error).message }],
    })
  }
}
