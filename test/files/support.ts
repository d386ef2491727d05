/** Shared set-up of the files suites: bytes of each kind, and uploads as a browser sends them. */
import { PDFDocument, StandardFonts } from 'pdf-lib'
import { TINY_PNG_B64 } from '../fakes/openai.ts'

export const PNG = Buffer.from(TINY_PNG_B64, 'base64')
export const HTML = new TextEncoder().encode('<!doctype html><html><body><script>alert(document.cookie)</script></body></html>')

/** A one-page PDF whose text is `text`. */
export async function pdfWith(text: string): Promise<Uint8Array> {
  const doc = await PDFDocument.create()
  const page = doc.addPage([400, 200])
  page.drawText(text, { x: 20, y: 100, size: 14, font: await doc.embedFont(StandardFonts.Helvetica) })
  return doc.save()
}

/** POST /api/files with a real multipart body: each entry one `file` part (or another field name). */
export function upload(
  baseUrl: string,
  headers: Record<string, string>,
  parts: { name?: string; bytes: Uint8Array | string; filename?: string; type?: string }[],
): Promise<Response> {
  const form = new FormData()
  for (const part of parts) {
    const blob = new Blob([part.bytes], part.type === undefined ? {} : { type: part.type })
    form.append(part.name ?? 'file', blob, part.filename ?? 'upload.bin')
  }
  return fetch(`${baseUrl}/api/files`, { method: 'POST', headers, body: form })
}
