import { AppError } from './errors.ts'

const JSON_TYPE = /^application\/(?:[\w.+-]+\+)?json\b/i

export function isJsonContentType(contentType: string | null | undefined): boolean {
  return !!contentType && JSON_TYPE.test(contentType)
}

const FORM_TYPE = /^application\/x-www-form-urlencoded\b/i

export function isFormContentType(contentType: string | null | undefined): boolean {
  return !!contentType && FORM_TYPE.test(contentType)
}

/** An HTML form's fields as an object of strings (a repeated field keeps its last value). */
export function parseFormBody(text: string): Record<string, string> {
  return Object.fromEntries(new URLSearchParams(text))
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

/** Deepest nesting of arrays and objects a JSON body may have; no request of the API needs more than a few levels. */
export const MAX_JSON_DEPTH = 64

const OPEN_BRACE = 123
const OPEN_BRACKET = 91
const CLOSE_BRACE = 125
const CLOSE_BRACKET = 93
const QUOTE = 34
const BACKSLASH = 92

/** The deepest nesting in a JSON text, counted without parsing it (brackets inside strings do not count). */
export function jsonDepth(text: string, stopAbove = Infinity): number {
  let depth = 0
  let deepest = 0
  let inString = false
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (inString) {
      if (c === BACKSLASH) i++
      else if (c === QUOTE) inString = false
    } else if (c === QUOTE) inString = true
    else if (c === OPEN_BRACE || c === OPEN_BRACKET) {
      if (++depth > deepest && (deepest = depth) > stopAbove) return deepest
    } else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) depth--
  }
  return deepest
}

/**
 * Parses JSON, answering 400 with the position of the first syntax error. Bodies nested deeper than
 * MAX_JSON_DEPTH are refused before parsing: deep values overflow the stack of whatever walks them later.
 */
export function parseJsonBody(text: string): unknown {
  if (text.trim() === '')
    throw new AppError('invalid_json', 'Request body is empty; a JSON document was expected', { errors: [{ field: 'body', message: 'empty body' }] })
  if (jsonDepth(text, MAX_JSON_DEPTH) > MAX_JSON_DEPTH)
    throw new AppError('nesting_too_deep', `Request body is nested deeper than ${MAX_JSON_DEPTH} levels of arrays and objects`, {
      errors: [{ field: 'body', message: `nested deeper than ${MAX_JSON_DEPTH} levels` }],
      extensions: { maxDepth: MAX_JSON_DEPTH },
    })
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch (err) {
    throw new AppError('invalid_json', `Request body is not valid JSON: ${(err as Error).message}`, {
      errors: [{ field: 'body', message: (err as Error).message }],
    })
  }
  // A key that can only arrive written out or escaped; bodies without one are left as parsed.
  if (text.includes('String"') || text.includes('valueOf"') || text.includes('\\u')) keepConvertibleToText(value)
  return value
}

const asText = () => '[object Object]'

/**
 * JSON may set an object's own `toString` or `valueOf` to data, and then `${object}` throws a TypeError
 * (Elysia's validation message does exactly that for a wrong-typed field). A symbol-keyed, non-enumerable
 * Symbol.toPrimitive keeps such objects convertible to text without changing what they serialise to.
 */
function keepConvertibleToText(root: unknown): void {
  const pending: unknown[] = [root]
  while (pending.length > 0) {
    const value = pending.pop()
    if (value === null || typeof value !== 'object') continue
    if (Array.isArray(value)) {
      for (const item of value) pending.push(item)
      continue
    }
    if (Object.hasOwn(value, 'toString') || Object.hasOwn(value, 'valueOf')) Object.defineProperty(value, Symbol.toPrimitive, { value: asText })
    for (const key in value) pending.push((value as Record<string, unknown>)[key])
  }
}

const MULTIPART_TYPE = /^multipart\/form-data\b/i

export function isMultipartContentType(contentType: string | null | undefined): boolean {
  return !!contentType && MULTIPART_TYPE.test(contentType)
}

/** Marks the parser a route declares to take multipart/form-data (see `multipartBody`). */
export const TAKES_MULTIPART = Symbol('takes multipart/form-data')

/**
 * A route's parser for multipart/form-data bodies of at most `limitBytes`, counted as they arrive, so an
 * oversized upload is refused (413, `tooLarge(limitBytes)`, or `refuse` when given) without being read whole; a
 * file part over `maxFileBytes` is refused the same way (before the schema's own size check). Fields become
 * an object; a repeated field becomes an array, which the route's schema then refuses. Declared as the
 * route's `parse`; the request pipeline leaves multipart bodies of such routes to it, after the route's guards.
 */
export function multipartBody(limitBytes: number, refuse: (limitBytes: number) => AppError = tooLarge, maxFileBytes = limitBytes) {
  const parse = async ({ request }: { request: Request }): Promise<Record<string, unknown> | undefined> => {
    // The header itself: Elysia's `contentType` may lack the boundary parameter.
    const contentType = request.headers.get('content-type')
    if (!isMultipartContentType(contentType)) return undefined
    const declared = request.headers.get('content-length')
    if (declared !== null && Number(declared) > limitBytes) throw refuse(limitBytes)
    let total = 0
    const counted = request.body?.pipeThrough(
      new TransformStream<Uint8Array, Uint8Array>({
        transform(chunk, controller) {
          total += chunk.byteLength
          if (total > limitBytes) controller.error(refuse(limitBytes))
          else controller.enqueue(chunk)
        },
      }),
    )
    // Entries are strings or Files; typed loosely, as the DOM and undici FormData types disagree.
    let form: { entries(): Iterable<[string, unknown]> }
    try {
      form = await new Response(counted ?? '', { headers: { 'content-type': contentType! } }).formData()
    } catch (err) {
      if (total > limitBytes) throw refuse(limitBytes)
      throw new AppError('bad_request', 'The multipart/form-data body could not be read', {
        errors: [{ field: 'body', message: (err as Error).message }],
        cause: err,
      })
    }
    const fields: Record<string, unknown> = {}
    for (const [name, value] of form.entries()) {
      if (value instanceof Blob && value.size > maxFileBytes) throw refuse(limitBytes)
      const previous = fields[name]
      fields[name] = previous === undefined ? value : Array.isArray(previous) ? [...previous, value] : [previous, value]
    }
    return fields
  }
  return Object.assign(parse, { [TAKES_MULTIPART]: true as const })
}
