import { expect, test } from 'bun:test'
import { attachmentDisposition, cleanFileName, sniff } from '../../plugins/files/sniff.ts'
import { HTML, PNG } from './support.ts'

const text = (s: string) => new TextEncoder().encode(s)

test('images and PDFs are known by their signature, whatever was declared', () => {
  expect(sniff(PNG, 'text/html')).toEqual({ kind: 'image', mediaType: 'image/png' })
  expect(sniff(new Uint8Array([0xff, 0xd8, 0xff, 0xe0, 0, 0]), undefined)?.mediaType).toBe('image/jpeg')
  expect(sniff(text('GIF89a....'), 'text/plain')?.mediaType).toBe('image/gif')
  expect(sniff(text('RIFF\0\0\0\0WEBPVP8 '), '')?.mediaType).toBe('image/webp')
  expect(sniff(text('%PDF-1.7\n'), 'text/plain')).toEqual({ kind: 'pdf', mediaType: 'application/pdf' })
})

test('content declared as an image or a PDF without its signature is refused', () => {
  for (const declared of ['image/png', 'image/svg+xml', 'application/pdf']) expect(sniff(HTML, declared)).toBeUndefined()
})

test('text keeps a listed text type; HTML, XML and binary are refused; anything else is text/plain', () => {
  expect(sniff(text('{"a":1}'), 'application/json')?.mediaType).toBe('application/json')
  expect(sniff(text('print(1)'), 'text/x-python; charset=utf-8')?.mediaType).toBe('text/x-python')
  expect(sniff(text('hello'), 'application/octet-stream')?.mediaType).toBe('text/plain')
  expect(sniff(text('x = 1'), '', 'script.py')?.mediaType).toBe('text/x-python')
  expect(sniff(text('x = 1'), 'text/plain', 'notes.md')?.mediaType).toBe('text/markdown')
  expect(sniff(HTML, 'text/html')).toBeUndefined()
  expect(sniff(text('<a/>'), 'application/xml')).toBeUndefined()
  expect(sniff(new Uint8Array([0x68, 0, 0x69]), 'text/plain')).toBeUndefined()
  expect(sniff(new Uint8Array([0xc3, 0x28]), 'text/plain')).toBeUndefined()
  expect(sniff(new Uint8Array(), 'text/plain')).toBeUndefined()
})

test('a file name keeps its last segment without control or direction-override characters', () => {
  expect(cleanFileName('../../etc/passwd')).toBe('passwd')
  expect(cleanFileName('C:\\Users\\me\\notes.txt')).toBe('notes.txt')
  expect(cleanFileName('re\u0000port\r\n.pdf')).toBe('report.pdf')
  expect(cleanFileName('invoice\u202Efdp.exe')).toBe('invoicefdp.exe')
  expect(cleanFileName('..')).toBe('file')
  expect(cleanFileName(undefined)).toBe('file')
  expect(cleanFileName('a'.repeat(400))).toHaveLength(255)
})

test('Content-Disposition offers a download with an ASCII fallback and the full name in filename*', () => {
  expect(attachmentDisposition('résumé "final".pdf')).toBe(
    `attachment; filename="r_sum_ _final_.pdf"; filename*=UTF-8''${encodeURIComponent('résumé "final".pdf')}`,
  )
})
