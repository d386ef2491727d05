import { Lexer, type Token, type Tokens } from 'marked'
import { PDFDocument, type PDFFont, type PDFPage, rgb, StandardFonts, type RGB } from 'pdf-lib'
import { decodeEntities, printable, wrapCode, wrapRuns, type Line, type Run } from './pdf-text.ts'

/**
 * A documentation page as a PDF, drawn from its Markdown with the standard PDF fonts: headings,
 * paragraphs with bold, italic and inline code, lists, code blocks wrapped to the page, tables, quotes,
 * and links as their text followed by the URL. pdf-lib carries the standard fonts' metrics in its code
 * and reads no file at run time, so the compiled executable can draw PDFs.
 */

export interface PdfSource {
  /** The page as `/docs/<path>.md` serves it (title heading, description quote, body). */
  readonly markdown: string
  readonly title: string
  /** The page's absolute URL, printed in every footer. */
  readonly url: string
  /** Base that makes the page's relative links absolute (`/docs/errors` -> `<base>/docs/errors`). */
  readonly baseUrl: string
  readonly siteName: string
}

type Style = 'regular' | 'bold' | 'italic' | 'boldItalic' | 'code' | 'link' | 'url'

// A4 in points; a margin of about 2 cm.
const PAGE_WIDTH = 595.28
const PAGE_HEIGHT = 841.89
const MARGIN = { top: 56, bottom: 64, left: 56, right: 56 }
const BODY_SIZE = 10.5
const TABLE_SIZE = 9
const CODE_SIZE = 8.5
const HEADING_SIZES: Record<number, number> = { 1: 20, 2: 15, 3: 12.5 }

const INK = rgb(0.11, 0.13, 0.16)
const MUTED = rgb(0.39, 0.44, 0.5)
const LINK = rgb(0.1, 0.36, 0.8)
const RULE = rgb(0.82, 0.85, 0.89)
const SHADE = rgb(0.95, 0.96, 0.97)

interface Box {
  readonly x: number
  readonly width: number
  /** Quoted text is drawn in grey. */
  readonly muted?: boolean
}

const COMPONENT_BLOCK = /^<([A-Z][\w.]*)([^>]*)>([\s\S]*)<\/\1>\s*$/
const COMPONENT_TAG = /^<\/?[A-Z][\w.]*(?:\s[^>]*)?\/?>\s*$/
const TITLE_ATTRIBUTE = /\btitle\s*=\s*(?:"([^"]*)"|'([^']*)')/

class PdfWriter {
  private page!: PDFPage
  private y = 0
  private readonly encodable: ReadonlySet<number>

  constructor(
    private readonly doc: PDFDocument,
    private readonly fonts: Record<'regular' | 'bold' | 'italic' | 'boldItalic' | 'code', PDFFont>,
    private readonly source: PdfSource,
  ) {
    this.encodable = new Set(fonts.regular.getCharacterSet())
    this.newPage()
  }

  private newPage() {
    this.page = this.doc.addPage([PAGE_WIDTH, PAGE_HEIGHT])
    this.y = PAGE_HEIGHT - MARGIN.top
  }

  private get atTop() {
    return this.y >= PAGE_HEIGHT - MARGIN.top
  }

  /** Starts a new page unless `height` fits above the bottom margin (or the page is still empty). */
  private ensure(height: number) {
    if (this.y - height < MARGIN.bottom && !this.atTop) this.newPage()
  }

  private gap(points: number) {
    if (!this.atTop) this.y -= points
  }

  private font(style: Style): PDFFont {
    return style === 'link' || style === 'url' ? this.fonts.regular : this.fonts[style]
  }

  text(value: string): string {
    return printable(value, this.encodable)
  }

  private measure = (size: number) => (text: string, style: Style) => this.font(style).widthOfTextAtSize(text, size)

  private drawLine(line: Line<Style>, x: number, size: number, muted = false, shift = 0) {
    let at = x + shift
    const baseline = this.y - size
    for (const run of line.runs) {
      const font = this.font(run.style)
      const width = font.widthOfTextAtSize(run.text, size)
      if (run.style === 'code') this.page.drawRectangle({ x: at - 1, y: baseline - size * 0.25, width: width + 2, height: size * 1.15, color: SHADE })
      const color: RGB = run.style === 'link' ? LINK : run.style === 'url' || muted ? MUTED : INK
      this.page.drawText(run.text, { x: at, y: baseline, size, font, color })
      at += width
    }
  }

  /** Runs wrapped to the box and drawn line by line, breaking pages between lines. */
  private paragraph(runs: Run<Style>[], box: Box, size = BODY_SIZE) {
    const lineHeight = size * 1.4
    for (const line of wrapRuns(runs, box.width, this.measure(size))) {
      this.ensure(lineHeight)
      this.drawLine(line, box.x, size, box.muted)
      this.y -= lineHeight
    }
  }

  /** Inline Markdown as runs of text in their styles; links are followed by their URL. */
  private runs(tokens: readonly Token[] | undefined, style: Style = 'regular'): Run<Style>[] {
    const out: Run<Style>[] = []
    const add = (text: string, as: Style) => {
      const value = this.text(text)
      if (value !== '') out.push({ text: value, style: as })
    }
    for (const token of tokens ?? []) {
      switch (token.type) {
        case 'text':
          if ('tokens' in token && token.tokens?.length) out.push(...this.runs(token.tokens, style))
          else add(decodeEntities(token.text), style)
          break
        case 'escape':
          add(token.text, style)
          break
        case 'strong':
          out.push(...this.runs(token.tokens, style === 'italic' || style === 'boldItalic' ? 'boldItalic' : 'bold'))
          break
        case 'em':
          out.push(...this.runs(token.tokens, style === 'bold' || style === 'boldItalic' ? 'boldItalic' : 'italic'))
          break
        case 'del':
          out.push(...this.runs(token.tokens, style))
          break
        case 'codespan':
          add(token.text, 'code')
          break
        case 'br':
          if (out.length > 0) out[out.length - 1] = { ...out[out.length - 1]!, break: true }
          break
        case 'link': {
          const link = token as Tokens.Link
          const inner = this.runs(link.tokens, style === 'regular' ? 'link' : style)
          out.push(...inner)
          const url = this.absolute(link.href)
          const shown = inner.map((r) => r.text).join('')
          if (url && url !== shown) add(` (${url})`, 'url')
          break
        }
        case 'image': {
          const image = token as Tokens.Image
          add(`[image: ${image.text || 'untitled'}]`, 'italic')
          const url = this.absolute(image.href)
          if (url) add(` (${url})`, 'url')
          break
        }
        case 'html':
          // Tags are markup (<Tooltip>, <br>, <kbd>); the text between them comes as text tokens.
          if (!/^<[^>]*>$/.test(token.text.trim())) add(token.text, style)
          break
        case 'checkbox':
          add((token as Tokens.Checkbox).checked ? '[x] ' : '[ ] ', style)
          break
        default:
          if ('text' in token && typeof token.text === 'string') add(decodeEntities(token.text), style)
      }
    }
    return out
  }

  /** A link target as printed: absolute, or nothing for a fragment on the same page. */
  private absolute(href: string): string | undefined {
    const trimmed = href.trim()
    if (trimmed === '' || trimmed.startsWith('#')) return undefined
    if (trimmed.startsWith('/')) return this.source.baseUrl.replace(/\/+$/, '') + trimmed
    return trimmed
  }

  blocks(tokens: readonly Token[], box: Box) {
    for (const token of tokens) this.block(token, box)
  }

  private block(token: Token, box: Box) {
    switch (token.type) {
      case 'space':
      case 'def':
      case 'checkbox':
        // A task item's box is drawn as its marker.
        return
      case 'heading': {
        const heading = token as Tokens.Heading
        const size = HEADING_SIZES[heading.depth] ?? 11
        const bold = (style: Style): Style => (style === 'code' ? 'code' : style === 'italic' ? 'boldItalic' : 'bold')
        const runs = this.runs(heading.tokens).map((run) => ({ ...run, style: bold(run.style) }))
        this.gap(heading.depth <= 2 ? 14 : 10)
        // A heading stays with the first lines under it.
        this.ensure(size * 1.3 + BODY_SIZE * 1.4 * 2)
        this.paragraph(runs, { ...box, muted: false }, size)
        this.gap(4)
        return
      }
      case 'paragraph':
        // MDX import/export statements are build instructions, not content.
        if (/^(import|export)\s/.test(token.raw)) return
        this.paragraph(this.runs((token as Tokens.Paragraph).tokens), box)
        this.gap(6)
        return
      case 'text':
        this.paragraph(this.runs('tokens' in token && token.tokens ? token.tokens : [{ type: 'text', raw: token.text, text: token.text } as Token]), box)
        return
      case 'list':
        this.list(token as Tokens.List, box)
        this.gap(4)
        return
      case 'code':
        this.code((token as Tokens.Code).text, box)
        this.gap(8)
        return
      case 'blockquote':
        this.quote(token as Tokens.Blockquote, box)
        return
      case 'table':
        this.table(token as Tokens.Table, box)
        this.gap(8)
        return
      case 'hr':
        this.ensure(12)
        this.y -= 6
        this.page.drawLine({ start: { x: box.x, y: this.y }, end: { x: box.x + box.width, y: this.y }, thickness: 0.6, color: RULE })
        this.y -= 6
        return
      case 'html':
        this.html(token.text, box)
        return
      default:
        if ('text' in token && typeof token.text === 'string') {
          this.paragraph([{ text: this.text(decodeEntities(token.text)), style: 'regular' }], box)
          this.gap(6)
        }
    }
  }

  /** MDX components (`<Note title="…">…</Note>`) as their title and content, indented; other HTML as code. */
  private html(text: string, box: Box) {
    const component = COMPONENT_BLOCK.exec(text.trim())
    if (component) {
      const title = TITLE_ATTRIBUTE.exec(component[2]!)
      const inner = { x: box.x + 10, width: box.width - 10, muted: box.muted }
      if (title) this.paragraph([{ text: this.text(title[1] ?? title[2] ?? ''), style: 'bold' }], inner)
      const body = component[3]!.replace(/^\n+/, '')
      const indent = Math.min(
        ...body
          .split('\n')
          .filter((l) => l.trim() !== '')
          .map((l) => /^[ \t]*/.exec(l)![0].length),
        1000,
      )
      const dedented = body
        .split('\n')
        .map((line) => line.slice(indent === 1000 ? 0 : indent))
        .join('\n')
      this.sideBar(() => this.blocks(new Lexer({ gfm: true }).lex(dedented), inner), box.x + 3)
      this.gap(6)
      return
    }
    // A lone opening or closing component tag: its content is lexed as the Markdown around it.
    if (COMPONENT_TAG.test(text.trim())) return
    this.code(text.trimEnd(), box)
    this.gap(8)
  }

  /** Draws `render`'s output with a thin bar at `x` beside it, on every page it spans. */
  private sideBar(render: () => void, x: number) {
    const pages = () => this.doc.getPageCount()
    const startPage = pages() - 1
    const startY = this.y
    render()
    const endPage = pages() - 1
    for (let index = startPage; index <= endPage; index++) {
      const page = this.doc.getPage(index)
      const top = index === startPage ? startY : PAGE_HEIGHT - MARGIN.top
      const bottom = index === endPage ? this.y + 4 : MARGIN.bottom
      if (top > bottom) page.drawLine({ start: { x, y: top }, end: { x, y: bottom }, thickness: 2, color: RULE })
    }
  }

  private quote(token: Tokens.Blockquote, box: Box) {
    this.sideBar(() => this.blocks(token.tokens, { x: box.x + 12, width: box.width - 12, muted: true }), box.x + 3)
    this.gap(6)
  }

  private list(token: Tokens.List, box: Box) {
    const start = typeof token.start === 'number' ? token.start : 1
    const indent = token.ordered || token.items.some((item) => item.task) ? 22 : 14
    token.items.forEach((item, i) => {
      const lineHeight = BODY_SIZE * 1.4
      this.ensure(lineHeight)
      const marker = item.task ? (item.checked ? '[x]' : '[ ]') : token.ordered ? `${start + i}.` : '•'
      this.page.drawText(marker, { x: box.x + 2, y: this.y - BODY_SIZE, size: BODY_SIZE, font: this.fonts.regular, color: box.muted ? MUTED : INK })
      this.blocks(item.tokens, { x: box.x + indent, width: box.width - indent, muted: box.muted })
      if (item.loose) this.gap(3)
    })
  }

  private code(text: string, box: Box) {
    const pad = 6
    const lineHeight = CODE_SIZE * 1.35
    const charWidth = this.fonts.code.widthOfTextAtSize('M', CODE_SIZE)
    const columns = Math.max(8, Math.floor((box.width - 2 * pad) / charWidth))
    const lines = wrapCode(
      text
        .split('\n')
        .map((line) => this.text(line))
        .join('\n'),
      columns,
    )
    this.ensure(lineHeight + pad)
    this.page.drawRectangle({ x: box.x, y: this.y - pad, width: box.width, height: pad, color: SHADE })
    this.y -= pad
    for (const line of lines) {
      this.ensure(lineHeight)
      this.page.drawRectangle({ x: box.x, y: this.y - lineHeight, width: box.width, height: lineHeight, color: SHADE })
      this.page.drawText(line, { x: box.x + pad, y: this.y - CODE_SIZE, size: CODE_SIZE, font: this.fonts.code, color: INK })
      this.y -= lineHeight
    }
    this.page.drawRectangle({ x: box.x, y: this.y - pad, width: box.width, height: pad, color: SHADE })
    this.y -= pad
  }

  /**
   * Columns share the width by what their cells need (a short column keeps its natural width, the rest
   * share what is left); cells wrap inside their column; rows break between pages, the header repeated.
   */
  private table(token: Tokens.Table, box: Box) {
    const pad = 4
    const lineHeight = TABLE_SIZE * 1.35
    const measure = this.measure(TABLE_SIZE)
    const header = token.header.map((cell) => this.runs(cell.tokens).map((run) => ({ ...run, style: (run.style === 'code' ? 'code' : 'bold') as Style })))
    const rows = token.rows.map((row) => row.map((cell) => this.runs(cell.tokens)))
    const columns = token.header.length
    const natural = Array.from({ length: columns }, (_, c) =>
      Math.max(...[header, ...rows].map((row) => (row[c] ?? []).reduce((sum, run) => sum + measure(run.text, run.style), 0) + 2 * pad), 2 * pad + 10),
    )
    const widths = new Array<number>(columns).fill(0)
    let remaining = box.width
    const order = natural.map((width, c) => ({ width, c })).sort((a, b) => a.width - b.width)
    order.forEach(({ width, c }, i) => {
      widths[c] = Math.min(width, remaining / (columns - i))
      remaining -= widths[c]!
    })
    const layout = (cells: Run<Style>[][]) => cells.map((runs, c) => wrapRuns(runs, Math.max(widths[c]! - 2 * pad, 4), measure))
    const headerLines = layout(header)
    const drawRow = (cellLines: Line<Style>[][], shaded: boolean) => {
      const height = Math.max(...cellLines.map((lines) => lines.length)) * lineHeight + 2 * pad
      this.ensure(height)
      const top = this.y
      let x = box.x
      cellLines.forEach((lines, c) => {
        const width = widths[c]!
        this.page.drawRectangle({ x, y: top - height, width, height, color: shaded ? SHADE : undefined, borderColor: RULE, borderWidth: 0.5 })
        const align = token.align[c]
        lines.forEach((line, l) => {
          this.y = top - pad - l * lineHeight
          const shift = align === 'right' ? width - 2 * pad - line.width : align === 'center' ? (width - 2 * pad - line.width) / 2 : 0
          this.drawLine(line, x + pad, TABLE_SIZE, box.muted, Math.max(0, shift))
        })
        x += width
      })
      this.y = top - height
    }
    this.ensure(2 * (lineHeight + 2 * pad))
    drawRow(headerLines, true)
    for (const row of rows) {
      const cellLines = layout(Array.from({ length: columns }, (_, c) => row[c] ?? []))
      const height = Math.max(...cellLines.map((lines) => lines.length)) * lineHeight + 2 * pad
      if (this.y - height < MARGIN.bottom) {
        this.newPage()
        drawRow(headerLines, true)
      }
      // A row taller than a whole page is cut into pieces that each fit one.
      const perPage = Math.max(1, Math.floor((PAGE_HEIGHT - MARGIN.top - MARGIN.bottom - 2 * pad) / lineHeight) - 4)
      const longest = Math.max(...cellLines.map((lines) => lines.length))
      for (let from = 0; from < longest; from += perPage) {
        if (from > 0) {
          this.newPage()
          drawRow(headerLines, true)
        }
        drawRow(
          cellLines.map((lines) => lines.slice(from, from + perPage)),
          false,
        )
      }
    }
  }

  /** The page URL and "Page n of m" at the foot of every page. */
  footers() {
    const count = this.doc.getPageCount()
    const size = 8
    this.doc.getPages().forEach((page, i) => {
      const label = `Page ${i + 1} of ${count}`
      const labelWidth = this.fonts.regular.widthOfTextAtSize(label, size)
      const room = PAGE_WIDTH - MARGIN.left - MARGIN.right - labelWidth - 16
      const [line] = wrapRuns([{ text: this.text(`${this.source.siteName} · ${this.source.url}`), style: 'url' as Style }], room, this.measure(size))
      const y = MARGIN.bottom / 2
      page.drawLine({ start: { x: MARGIN.left, y: y + 12 }, end: { x: PAGE_WIDTH - MARGIN.right, y: y + 12 }, thickness: 0.5, color: RULE })
      page.drawText(line?.runs.map((run) => run.text).join('') ?? '', { x: MARGIN.left, y, size, font: this.fonts.regular, color: MUTED })
      page.drawText(label, { x: PAGE_WIDTH - MARGIN.right - labelWidth, y, size, font: this.fonts.regular, color: MUTED })
    })
  }
}

/** The page as PDF bytes. Never throws on the page's text: characters the fonts lack are replaced. */
export async function renderPagePdf(source: PdfSource): Promise<Uint8Array> {
  const doc = await PDFDocument.create()
  const [regular, bold, italic, boldItalic, code] = await Promise.all(
    [StandardFonts.Helvetica, StandardFonts.HelveticaBold, StandardFonts.HelveticaOblique, StandardFonts.HelveticaBoldOblique, StandardFonts.Courier].map(
      (font) => doc.embedFont(font),
    ),
  )
  const writer = new PdfWriter(doc, { regular: regular!, bold: bold!, italic: italic!, boldItalic: boldItalic!, code: code! }, source)
  doc.setTitle(writer.text(source.title))
  doc.setCreator(writer.text(source.siteName))
  doc.setLanguage('en')
  writer.blocks(new Lexer({ gfm: true }).lex(source.markdown), { x: MARGIN.left, width: PAGE_WIDTH - MARGIN.left - MARGIN.right })
  writer.footers()
  return doc.save()
}
