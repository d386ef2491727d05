/**
 * The request and response examples of the documentation pages, and how a real answer is compared with
 * a documented one.
 *
 * Convention: a fenced block with the info string `http` whose first line is `METHOD /path` is a request
 * (headers, a blank line, then the body as sent). The next `http` block whose first line is
 * `HTTP/1.1 <status>` is its documented answer (headers, a blank line, then a JSON or `text/event-stream`
 * body). Every request has an answer, and no answer stands alone. `<name>` in a request is a value the
 * reader substitutes (`<token>`, `<chatId>`...).
 */

export interface FencedBlock {
  info: string
  text: string
  /** 1-based line of the opening fence. */
  line: number
}

/** Fenced code blocks (``` or ~~~, indented ones in lists included), their content dedented. */
export function fencedBlocks(markdown: string): FencedBlock[] {
  const lines = markdown.split(/\r?\n/)
  const blocks: FencedBlock[] = []
  for (let i = 0; i < lines.length; i++) {
    const open = /^(\s*)(`{3,}|~{3,})\s*([^\s`]*)/.exec(lines[i]!)
    if (!open) continue
    const [, indent = '', fence = '', info = ''] = open
    const body: string[] = []
    let j = i + 1
    for (; j < lines.length; j++) {
      const close = /^\s*(`{3,}|~{3,})\s*$/.exec(lines[j]!)
      if (close && close[1]![0] === fence[0] && close[1]!.length >= fence.length) break
      const line = lines[j]!
      body.push(line.startsWith(indent) ? line.slice(indent.length) : line.trimStart())
    }
    blocks.push({ info, text: body.join('\n'), line: i + 1 })
    i = j
  }
  return blocks
}

export interface HttpMessage {
  /** The request line or the status line. */
  start: string
  headers: [name: string, value: string][]
  body: string
}

/** A message as written in an `http` block: start line, header lines, a blank line, the body. */
export function parseHttpMessage(text: string): HttpMessage {
  const lines = text.split('\n')
  const blank = lines.findIndex((line, i) => i > 0 && line.trim() === '')
  const head = blank === -1 ? lines : lines.slice(0, blank)
  const headers = head.slice(1).map((line): [string, string] => {
    const at = line.indexOf(':')
    if (at <= 0) throw new Error(`not a header line: "${line}"`)
    return [line.slice(0, at).trim(), line.slice(at + 1).trim()]
  })
  return {
    start: head[0]!.trim(),
    headers,
    body:
      blank === -1
        ? ''
        : lines
            .slice(blank + 1)
            .join('\n')
            .trim(),
  }
}

export interface DocumentedRequest extends HttpMessage {
  method: string
  path: string
}

export interface DocumentedResponse extends HttpMessage {
  status: number
}

export interface Exchange {
  request: DocumentedRequest
  response: DocumentedResponse
  /** Line of the request block. */
  line: number
}

const REQUEST_LINE = /^(GET|HEAD|POST|PUT|PATCH|DELETE|OPTIONS) (\/\S*)(?: HTTP\/1\.1)?$/
const STATUS_LINE = /^HTTP\/1\.1 (\d{3})\b/

/** Every request example of a page with its documented answer; a malformed pair throws, naming its line. */
export function exchanges(markdown: string): Exchange[] {
  const found: Exchange[] = []
  let pending: { request: DocumentedRequest; line: number } | undefined
  for (const block of fencedBlocks(markdown)) {
    if (block.info !== 'http') continue
    const message = parseHttpMessage(block.text)
    const request = REQUEST_LINE.exec(message.start)
    const status = STATUS_LINE.exec(message.start)
    if (request) {
      if (pending) throw new Error(`the request at line ${pending.line} has no documented answer before the next request`)
      pending = { request: { ...message, method: request[1]!, path: request[2]! }, line: block.line }
    } else if (status) {
      if (!pending) throw new Error(`the answer at line ${block.line} follows no request`)
      found.push({ request: pending.request, response: { ...message, status: Number(status[1]) }, line: pending.line })
      pending = undefined
    } else {
      throw new Error(`the http block at line ${block.line} starts with neither a request line nor a status line: "${message.start}"`)
    }
  }
  if (pending) throw new Error(`the request at line ${pending.line} has no documented answer`)
  return found
}

export interface SseMessage {
  id?: string
  event: string
  data: string
}

/** Events of a `text/event-stream` text; comments, `retry:` and lines of `…` (elided events) are skipped. */
export function parseSse(text: string): SseMessage[] {
  const events: SseMessage[] = []
  for (const frame of text.split(/\r?\n\r?\n/)) {
    let id: string | undefined
    let event = 'message'
    const data: string[] = []
    for (const line of frame.split(/\r?\n/)) {
      if (line === '' || line.startsWith(':') || /^\s*(…|\.\.\.)\s*$/.test(line)) continue
      const at = line.indexOf(':')
      const field = at === -1 ? line : line.slice(0, at)
      const value = at === -1 ? '' : line.slice(at + 1).replace(/^ /, '')
      if (field === 'id') id = value
      else if (field === 'event') event = value
      else if (field === 'data') data.push(value)
    }
    if (data.length > 0) events.push({ ...(id === undefined ? {} : { id }), event, data: data.join('\n') })
  }
  return events
}

/** String members whose documented value is the value: codes, kinds and states, not ids or times. */
const EXACT_MEMBERS = new Set([
  'code',
  'type',
  'status',
  'tokenType',
  'provider',
  'mode',
  'decision',
  'method',
  'verdict',
  'stage',
  'revocation',
  'pages',
  'role',
  'source',
  'finishReason',
  'interval',
])

const kindOf = (value: unknown) => (value === null ? 'null' : Array.isArray(value) ? 'array' : typeof value)

/**
 * Where `real` does not have the documented shape: every documented member present with the same JSON
 * type, recursively; the documented value itself for the members in EXACT_MEMBERS; an array at least as
 * long as documented, compared element by element. Members the documentation leaves out are allowed.
 */
export function shapeProblems(documented: unknown, real: unknown, path = '$'): string[] {
  const expected = kindOf(documented)
  const actual = kindOf(real)
  if (expected !== actual) return [`${path}: documented ${expected}, answered ${actual} (${JSON.stringify(real)?.slice(0, 80)})`]
  if (Array.isArray(documented)) {
    const list = real as unknown[]
    if (list.length < documented.length) return [`${path}: documented ${documented.length} elements, answered ${list.length}`]
    return documented.flatMap((element, i) => shapeProblems(element, list[i], `${path}[${i}]`))
  }
  if (expected === 'object') {
    const object = real as Record<string, unknown>
    return Object.entries(documented as Record<string, unknown>).flatMap(([key, value]) => {
      const at = `${path}.${key}`
      if (!(key in object)) return [`${at}: documented but not answered`]
      if (typeof value === 'string' && EXACT_MEMBERS.has(key) && object[key] !== value)
        return [`${at}: documented "${value}", answered ${JSON.stringify(object[key])}`]
      return shapeProblems(value, object[key], at)
    })
  }
  return []
}

/** Headers whose documented value must be the answered one; the others need only be present. */
const EXACT_HEADERS = new Set(['content-type', 'cache-control', 'x-cache', 'x-vercel-ai-ui-message-stream', 'ratelimit-policy', 'www-authenticate', 'allow'])

const mediaType = (value: string) => value.split(';')[0]!.trim().toLowerCase()

export function headerProblems(documented: [string, string][], real: Headers): string[] {
  return documented.flatMap(([name, value]) => {
    const answered = real.get(name)
    if (answered === null) return [`header ${name}: documented but not answered`]
    const lower = name.toLowerCase()
    if (lower === 'content-type') return mediaType(value) === mediaType(answered) ? [] : [`header ${name}: documented ${value}, answered ${answered}`]
    if (EXACT_HEADERS.has(lower) && value !== answered) return [`header ${name}: documented ${value}, answered ${answered}`]
    return []
  })
}

const jsonOrUndefined = (text: string): unknown => {
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}

/** What an event is, for finding the real one a documented one stands for: its name and its chunk type. */
function eventKey(event: SseMessage): string {
  const data = event.data === '[DONE]' ? event.data : jsonOrUndefined(event.data)
  const type = typeof data === 'object' && data !== null && typeof (data as { type?: unknown }).type === 'string' ? (data as { type: string }).type : ''
  return `${event.event}|${data === '[DONE]' ? '[DONE]' : type}`
}

/** `gen_x:3` and `17` are different kinds of event id. */
const idKind = (id: string) => (/^\d+$/.test(id) ? 'sequence number' : /^[^:\s]+:\d+$/.test(id) ? '<generation>:<sequence>' : 'other')

/**
 * The documented events must appear in the real stream in the same order (others may come between),
 * each with the documented data shape and, when the documentation shows one, the same kind of id.
 */
export function sseProblems(documented: SseMessage[], real: SseMessage[]): string[] {
  const problems: string[] = []
  let from = 0
  for (const [n, doc] of documented.entries()) {
    const key = eventKey(doc)
    const docData = doc.data === '[DONE]' ? undefined : jsonOrUndefined(doc.data)
    const problemsWith = (event: SseMessage) => [
      ...(doc.id !== undefined && (event.id === undefined || idKind(doc.id) !== idKind(event.id))
        ? [`event ${n + 1} (${key}): documented id ${doc.id}, answered ${event.id ?? 'none'}`]
        : []),
      ...(docData === undefined ? [] : shapeProblems(docData, jsonOrUndefined(event.data), `event ${n + 1} (${key}) data`)),
    ]
    // Streams repeat chunk types (a plan re-sent as its steps progress): the first candidate that fits is the one meant.
    const candidates = real.flatMap((event, i) => (i >= from && eventKey(event) === key ? [{ i, problems: problemsWith(event) }] : []))
    if (candidates.length === 0) {
      problems.push(`event ${n + 1} (${key}): not answered after event ${from} of ${real.length} (${real.map(eventKey).join(', ')})`)
      continue
    }
    const match = candidates.find((c) => c.problems.length === 0) ?? candidates[0]!
    problems.push(...match.problems)
    from = match.i + 1
  }
  return problems
}
