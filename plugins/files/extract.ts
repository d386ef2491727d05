/**
 * What a chat model reads of an attached file that is not an image: the text of a text file, or the text of a
 * PDF's pages, cut at a number of characters with a marker saying so. unpdf (PDF.js built for servers) reads
 * the PDF: pdf-lib writes PDFs but does not extract text.
 */
import type { StoredFile } from './store.ts'

/** Cuts `text` at `maxChars`, saying how much was left out. */
export function capText(text: string, maxChars: number): string {
  if (text.length <= maxChars) return text
  return `${text.slice(0, maxChars)}\n[… ${text.length - maxChars} more characters not shown]`
}

/** The text of a PDF's pages in order, read page by page until `maxChars` are had. Script in the PDF is never run. */
export async function pdfText(bytes: Uint8Array, maxChars: number): Promise<string> {
  const { getDocumentProxy } = await import('unpdf')
  // PDF.js detaches the buffer it is given: a copy keeps the caller's bytes. This build has no eval path at all
  // (PostScript functions are interpreted), and XFA forms, which would run their own script, stay off.
  const pdf = await getDocumentProxy(bytes.slice(), { enableXfa: false })
  try {
    const pages: string[] = []
    let length = 0
    for (let page = 1; page <= pdf.numPages && length <= maxChars; page++) {
      const content = await (await pdf.getPage(page)).getTextContent()
      const text = content.items.map((item) => ('str' in item ? item.str + (item.hasEOL ? '\n' : '') : '')).join('')
      pages.push(text)
      length += text.length + 1
    }
    const text = pages
      .join('\n')
      .replace(/[^\S\n]+/g, ' ')
      .replace(/\n{3,}/g, '\n\n')
      .trim()
    const unread = pdf.numPages - pages.length
    return capText(text, maxChars) + (unread > 0 ? `\n[… ${unread} more pages not read]` : '')
  } finally {
    // As unpdf does: destroying the loading task frees the document and its worker state.
    await pdf.loadingTask.destroy()
  }
}

/** A file's text as one text part of a user message, with its name and type so the model knows what it reads. */
export function asAttachmentText(file: Pick<StoredFile, 'name' | 'mediaType'>, text: string): string {
  return `\n\n<attachment name=${JSON.stringify(file.name)} type=${JSON.stringify(file.mediaType)}>\n${text}\n</attachment>\n\n`
}
