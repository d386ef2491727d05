/**
 * What an uploaded file is, decided from its bytes: the type a client declares is only a hint for text, never
 * trusted for anything a browser or a model would treat differently. Pure functions, no I/O.
 */

/** Raster images the models read, by their magic bytes. SVG is not among them: it is a document that runs script. */
const IMAGE_SIGNATURES: { mediaType: string; test: (b: Uint8Array) => boolean }[] = [
  { mediaType: 'image/png', test: (b) => startsWith(b, [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]) },
  { mediaType: 'image/jpeg', test: (b) => startsWith(b, [0xff, 0xd8, 0xff]) },
  { mediaType: 'image/gif', test: (b) => startsWith(b, [0x47, 0x49, 0x46, 0x38]) && (b[4] === 0x37 || b[4] === 0x39) && b[5] === 0x61 },
  { mediaType: 'image/webp', test: (b) => startsWith(b, [0x52, 0x49, 0x46, 0x46]) && startsWith(b.subarray(8), [0x57, 0x45, 0x42, 0x50]) },
]

const PDF_SIGNATURE = [0x25, 0x50, 0x44, 0x46, 0x2d] // %PDF-

/** Declared types kept as they are for text content; any other text is stored as text/plain. */
const TEXT_TYPES = new Set([
  'text/plain',
  'text/markdown',
  'text/csv',
  'text/tab-separated-values',
  'text/css',
  'text/javascript',
  'text/x-python',
  'text/x-c',
  'text/x-c++',
  'text/x-java',
  'text/x-go',
  'text/x-rust',
  'text/x-sh',
  'text/x-yaml',
  'text/yaml',
  'application/json',
  'application/x-ndjson',
  'application/javascript',
  'application/typescript',
  'application/x-typescript',
  'application/x-sh',
  'application/x-yaml',
  'application/yaml',
  'application/toml',
  'application/sql',
  'application/x-sql',
])

/** Text types by file name extension, for clients (and multipart parsers) that declare none or a generic one. */
const TEXT_BY_EXTENSION: Record<string, string> = {
  txt: 'text/plain',
  md: 'text/markdown',
  markdown: 'text/markdown',
  csv: 'text/csv',
  tsv: 'text/tab-separated-values',
  css: 'text/css',
  js: 'text/javascript',
  mjs: 'text/javascript',
  cjs: 'text/javascript',
  ts: 'application/typescript',
  tsx: 'application/typescript',
  jsx: 'text/javascript',
  py: 'text/x-python',
  c: 'text/x-c',
  h: 'text/x-c',
  cpp: 'text/x-c++',
  hpp: 'text/x-c++',
  java: 'text/x-java',
  go: 'text/x-go',
  rs: 'text/x-rust',
  sh: 'text/x-sh',
  yaml: 'text/yaml',
  yml: 'text/yaml',
  toml: 'application/toml',
  json: 'application/json',
  ndjson: 'application/x-ndjson',
  sql: 'application/sql',
}

export type FileKind = 'image' | 'pdf' | 'text'

export interface Sniffed {
  kind: FileKind
  mediaType: string
}

/** Every media type an upload may be stored as, for the docs and the 415 answer. */
export const ACCEPTED_TYPES = ['image/png', 'image/jpeg', 'image/gif', 'image/webp', 'application/pdf', ...TEXT_TYPES] as const

function startsWith(bytes: Uint8Array, prefix: readonly number[]): boolean {
  return bytes.length >= prefix.length && prefix.every((b, i) => bytes[i] === b)
}

/** UTF-8 without NUL or other C0 controls besides tab, line feed, form feed and carriage return (a BOM is fine). */
export function isText(bytes: Uint8Array): boolean {
  let text: string
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes)
  } catch {
    return false
  }
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (c < 0x20 && c !== 0x09 && c !== 0x0a && c !== 0x0c && c !== 0x0d) return false
    if (c === 0x7f) return false
  }
  return true
}

const baseType = (declared: string | undefined) => (declared ?? '').split(';')[0]!.trim().toLowerCase()

/**
 * The stored type of `bytes`, or undefined when the service does not take it. Images and PDFs are known by their
 * signature whatever was declared; content declared as an image or a PDF without that signature is refused
 * (an HTML page sent as image/png); text keeps a declared text type from the list, else the one its file name's
 * extension names, else text/plain (HTML and XML are refused: never stored under a type a browser renders).
 */
export function sniff(bytes: Uint8Array, declared?: string, fileName?: string): Sniffed | undefined {
  const image = IMAGE_SIGNATURES.find((s) => s.test(bytes))
  if (image) return { kind: 'image', mediaType: image.mediaType }
  if (startsWith(bytes, PDF_SIGNATURE)) return { kind: 'pdf', mediaType: 'application/pdf' }
  const type = baseType(declared)
  if (type.startsWith('image/') || type === 'application/pdf') return undefined
  if (bytes.length === 0 || !isText(bytes)) return undefined
  if (type.startsWith('text/html') || type.includes('xml')) return undefined
  const extension = /\.([A-Za-z0-9]+)$/.exec(fileName ?? '')?.[1]?.toLowerCase()
  const byName = extension === undefined ? undefined : TEXT_BY_EXTENSION[extension]
  return { kind: 'text', mediaType: TEXT_TYPES.has(type) && type !== 'text/plain' ? type : (byName ?? 'text/plain') }
}

/**
 * A file name safe to store and show: the last path segment only, control and bidirectional-override characters
 * removed, at most 255 characters; `file` when nothing is left. It is never used as a path.
 */
export function cleanFileName(name: string | undefined): string {
  const lastSegment = (name ?? '').split(/[\\/]/).pop() ?? ''
  const cleaned = lastSegment
    // biome-ignore lint/suspicious/noControlCharactersInRegex: controls are what this removes
    .replace(/[\u0000-\u001f\u007f-\u009f\u200e\u200f\u202a-\u202e\u2066-\u2069]/g, '')
    .trim()
    .replace(/^\.+$/, '')
  return cleaned.slice(0, 255) || 'file'
}

/**
 * A Content-Disposition header that offers the file as a download: an ASCII fallback with quotes, backslashes
 * and non-ASCII replaced, and the full name in RFC 5987 `filename*`.
 */
export function attachmentDisposition(name: string): string {
  const fallback = name.replace(/[^\x20-\x7e]/g, '_').replace(/["\\%;]/g, '_')
  // encodeURIComponent leaves ' ( ) * as they are; RFC 5987 wants them encoded too.
  const encoded = encodeURIComponent(name).replace(/['()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)
  return `attachment; filename="${fallback}"; filename*=UTF-8''${encoded}`
}
