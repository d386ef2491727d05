/**
 * A tool result as the model and the UI receive it. Whatever the server answered is data: text content is kept as
 * text (never interpreted, never rendered), other content (images, audio, blobs) is summarised in a line, the
 * whole is capped at MCP_TOOLS_RESULT_MAX_BYTES of UTF-8 with a marker saying how much was left out, and the model
 * reads it as a JSON value labelled untrusted.
 */

/** What a UI shows and the model reads (as JSON) for one call. */
export interface ToolOutput extends Record<string, unknown> {
  server: string
  tool: string
  /** Always true: the content comes from an external server and carries no authority. */
  untrusted: true
  isError: boolean
  content: string
  /** Set when the content was cut to the cap. */
  truncated?: { shownBytes: number; totalBytes: number }
}

type ContentItem = Record<string, unknown>

const size = (base64: unknown) => (typeof base64 === 'string' ? Math.floor((base64.length * 3) / 4) : 0)
const str = (value: unknown) => (typeof value === 'string' ? value : '')

/** One content item as a line of text. */
function describe(item: ContentItem): string {
  switch (item.type) {
    case 'text':
      return str(item.text)
    case 'image':
    case 'audio':
      return `[${item.type} content: ${str(item.mimeType) || 'unknown type'}, ${size(item.data)} bytes, not shown]`
    case 'resource_link':
      return `[resource link: ${str(item.uri)}${item.name ? ` (${str(item.name)})` : ''}]`
    case 'resource': {
      const resource = (item.resource ?? {}) as ContentItem
      if (typeof resource.text === 'string') return `[resource ${str(resource.uri)}]\n${resource.text}`
      return `[resource ${str(resource.uri)}: ${str(resource.mimeType) || 'binary'}, ${size(resource.blob)} bytes, not shown]`
    }
    default:
      return `[${typeof item.type === 'string' ? item.type.slice(0, 40) : 'unknown'} content, not shown]`
  }
}

/** The result's content as one text: its items joined, or its structured content when it has no items. */
export function resultText(result: { content?: unknown; structuredContent?: unknown }): string {
  const items = Array.isArray(result.content) ? (result.content as ContentItem[]) : []
  if (items.length === 0 && result.structuredContent !== undefined) return JSON.stringify(result.structuredContent)
  return items.map((item) => (item && typeof item === 'object' ? describe(item) : '')).join('\n\n')
}

/** Cuts `text` to at most `maxBytes` of UTF-8 (at a character boundary), with a marker when anything was cut. */
export function capText(text: string, maxBytes: number): { text: string; truncated?: { shownBytes: number; totalBytes: number } } {
  const bytes = Buffer.from(text, 'utf8')
  if (bytes.length <= maxBytes) return { text }
  let end = maxBytes
  // Back to the start of a UTF-8 sequence, so no character is split.
  while (end > 0 && (bytes[end]! & 0xc0) === 0x80) end--
  const shown = bytes.subarray(0, end).toString('utf8')
  const marker = `\n\n[truncated by the service: ${end} of ${bytes.length} bytes shown; the rest of this tool result was left out]`
  return { text: shown + marker, truncated: { shownBytes: end, totalBytes: bytes.length } }
}

export function toolOutput(
  source: { server: string; tool: string },
  result: { content?: unknown; structuredContent?: unknown; isError?: unknown },
  maxBytes: number,
): ToolOutput {
  const { text, truncated } = capText(resultText(result), maxBytes)
  return { ...source, untrusted: true, isError: result.isError === true, content: text, ...(truncated ? { truncated } : {}) }
}
