/**
 * The static check of a generated site before it is published: every HTML page is parsed by parse5 (the HTML
 * standard's parsing algorithm), and the parse errors that change what the page means, end tags that close
 * nothing and elements left open are reported with their line; every local link and asset of the pages
 * (attributes, inline styles) and of the style sheets (`url()`, `@import`) must name a file of the site.
 */
import { posix } from 'node:path'
import { Parser, type DefaultTreeAdapterMap, type DefaultTreeAdapterTypes, type ParserError, type Token } from 'parse5'
import { candidateFiles } from './site-files.ts'

export interface SiteFileBytes {
  path: string
  bytes: Uint8Array
}

type Element = DefaultTreeAdapterTypes.Element

/**
 * The parse errors reported, with what each means to the author. The others are left alone because the parser
 * recovers from them the way the author meant: character references without `;` (`&copy 2024`), a `<` in text
 * (`1 < 2`), attributes without a space between them, an end tag with attributes, head elements after </head>,
 * legacy doctypes, control characters, odd comments.
 */
const REPORTED_PARSE_ERRORS: Record<string, string> = {
  'missing-doctype': 'the page does not start with <!doctype html>, so browsers render it in quirks mode',
  'non-void-html-element-start-tag-with-trailing-solidus': 'a `/>` does not close this element in HTML: it stays open',
  'duplicate-attribute': 'an attribute is given twice; browsers ignore the second',
  'missing-attribute-value': 'an attribute has `=` and no value',
  'unexpected-character-in-attribute-name': 'an attribute name holds a quote or `<` (a stray or missing quote?)',
  'unexpected-character-in-unquoted-attribute-value': 'an unquoted attribute value holds a quote, `<`, `=` or backtick (a missing quote?)',
  'unexpected-equals-sign-before-attribute-name': 'an attribute starts with `=`',
  'eof-in-tag': 'the page ends inside a tag',
  'eof-in-comment': 'the page ends inside a comment: everything after `<!--` is hidden',
  'eof-in-element-that-can-contain-only-text': 'the page ends inside <script>, <style>, <title> or <textarea>: the rest of the page is its text',
  'eof-in-script-html-comment-like-text': 'the page ends inside a `<!--` in a script',
  'eof-in-doctype': 'the page ends inside the doctype',
  'eof-in-cdata': 'the page ends inside a CDATA section',
}

// Elements whose end tag HTML lets an author leave out (or that have none): the parser closes them itself.
const END_TAG_OPTIONAL = new Set([
  'html',
  'head',
  'body',
  'p',
  'li',
  'dt',
  'dd',
  'option',
  'optgroup',
  'rb',
  'rp',
  'rt',
  'rtc',
  'colgroup',
  'caption',
  'thead',
  'tbody',
  'tfoot',
  'tr',
  'td',
  'th',
])
const END_TAG_OPTIONAL_ROOTS = new Set(['html', 'head', 'body'])
const VOID = new Set(['area', 'base', 'br', 'col', 'embed', 'frame', 'hr', 'img', 'input', 'link', 'meta', 'param', 'source', 'track', 'wbr'])
// Elements holding text only: nothing but their own end tag closes them, and the end of the page is a parse error.
const TEXT_ONLY = new Set(['script', 'style', 'title', 'textarea', 'xmp', 'iframe', 'noembed', 'noframes', 'noscript', 'plaintext'])

/** The attributes of each element that name a file the page needs or links to. */
const REFERENCE_ATTRIBUTES: Record<string, string[]> = {
  a: ['href'],
  area: ['href'],
  link: ['href'],
  script: ['src'],
  img: ['src', 'srcset'],
  source: ['src', 'srcset'],
  video: ['src', 'poster'],
  audio: ['src'],
  track: ['src'],
  iframe: ['src'],
  embed: ['src'],
  object: ['data'],
  input: ['src'],
  image: ['href'],
  use: ['href'],
}

/**
 * parse5 reports the tree-construction errors of a few insertion modes only, so an end tag that closes nothing and
 * an element left open are found here instead: this parser keeps every end tag it reads, to be matched against
 * the end tags the tree's elements record.
 */
class EndTagRecordingParser extends Parser<DefaultTreeAdapterMap> {
  readonly endTags: Token.TagToken[] = []
  override onEndTag(token: Token.TagToken): void {
    this.endTags.push(token)
    super.onEndTag(token)
  }
}

interface Reference {
  link: string
  line: number
}

interface Finding {
  line: number
  message: string
}

const isSpace = (c: string | undefined) => c === ' ' || c === '\t' || c === '\n' || c === '\r' || c === '\f'

const lineAt = (text: string, offset: number) => {
  let line = 1
  for (let i = text.indexOf('\n'); i >= 0 && i < offset; i = text.indexOf('\n', i + 1)) line++
  return line
}

/** The URLs a `srcset` lists, without their width or density descriptors. */
export function srcsetUrls(srcset: string): string[] {
  const urls: string[] = []
  let i = 0
  while (i < srcset.length) {
    while (i < srcset.length && (isSpace(srcset[i]) || srcset[i] === ',')) i++
    const start = i
    while (i < srcset.length && !isSpace(srcset[i])) i++
    let url = srcset.slice(start, i)
    if (url.endsWith(',')) url = url.replace(/,+$/, '')
    else {
      // Descriptors run to the next comma outside parentheses.
      let depth = 0
      for (; i < srcset.length && (srcset[i] !== ',' || depth > 0); i++) depth += srcset[i] === '(' ? 1 : srcset[i] === ')' ? -1 : 0
    }
    if (url) urls.push(url)
  }
  return urls
}

/** The targets of a style sheet's `url(...)` and `@import "..."`, with their offsets; comments and other strings are skipped. */
export function styleSheetReferences(css: string): { link: string; offset: number }[] {
  const found: { link: string; offset: number }[] = []
  /** The string starting at a quote, unescaped, and the offset after its closing quote. */
  const stringAt = (start: number) => {
    const quote = css[start]
    let value = ''
    let i = start + 1
    for (; i < css.length && css[i] !== quote && css[i] !== '\n'; i++) value += css[i] === '\\' ? (css[++i] ?? '') : css[i]
    return { value, end: i + 1 }
  }
  const at = (i: number, word: string) => css.slice(i, i + word.length).toLowerCase() === word
  let i = 0
  while (i < css.length) {
    const c = css[i]
    if (at(i, '/*')) {
      const end = css.indexOf('*/', i + 2)
      i = end < 0 ? css.length : end + 2
    } else if (c === '"' || c === "'") i = stringAt(i).end
    else if (at(i, 'url(') && !/[\w-]/.test(css[i - 1] ?? '')) {
      let j = i + 4
      while (isSpace(css[j])) j++
      if (css[j] === '"' || css[j] === "'") {
        const string = stringAt(j)
        found.push({ link: string.value.trim(), offset: i })
        i = string.end
      } else {
        const close = css.indexOf(')', j)
        const end = close < 0 ? css.length : close
        found.push({ link: css.slice(j, end).trim(), offset: i })
        i = end + 1
      }
    } else if (at(i, '@import')) {
      let j = i + 7
      while (isSpace(css[j])) j++
      if (css[j] === '"' || css[j] === "'") {
        const string = stringAt(j)
        found.push({ link: string.value.trim(), offset: i })
        i = string.end
      } else i = j
    } else i++
  }
  return found
}

/** Parse problems and local references of one page. */
function examinePage(html: string): { problems: Finding[]; references: Reference[] } {
  const problems: Finding[] = []
  const references: Reference[] = []
  const parser = new EndTagRecordingParser({
    sourceCodeLocationInfo: true,
    onParseError: (error: ParserError) => {
      const meaning = REPORTED_PARSE_ERRORS[error.code]
      if (meaning) problems.push({ line: error.startLine, message: `${meaning} (${error.code})` })
    },
  })
  parser.tokenizer.write(html, true)

  const matchedEndTags = new Set<number>()
  const elements: Element[] = []
  const walk = (node: DefaultTreeAdapterTypes.ParentNode) => {
    for (const child of node.childNodes) {
      if (!('tagName' in child)) continue
      elements.push(child)
      const endTag = child.sourceCodeLocation?.endTag
      if (endTag) matchedEndTags.add(endTag.startOffset)
      walk(child.tagName === 'template' ? (child as DefaultTreeAdapterTypes.Template).content : child)
    }
  }
  walk(parser.document)

  const endTagAt = new Map(parser.endTags.map((token) => [token.location!.startOffset, token]))
  // html, head and body may have no start tag: the parser supplies them without a location to record their end tag in.
  for (const token of parser.endTags)
    if (!matchedEndTags.has(token.location!.startOffset) && !END_TAG_OPTIONAL_ROOTS.has(token.tagName))
      problems.push({ line: token.location!.startLine, message: `</${token.tagName}> closes no open element (end-tag-without-matching-open-element)` })

  for (const element of elements) {
    const location = element.sourceCodeLocation
    const name = element.tagName
    // No start tag in the source (an element the parser supplied), or closed as the author is allowed to leave it.
    if (!location?.startTag || location.endTag || VOID.has(name) || END_TAG_OPTIONAL.has(name) || TEXT_ONLY.has(name)) continue
    // `<path/>` in SVG closes itself; a `/>` on an HTML element is reported as a parse error already.
    if (html.slice(location.startTag.endOffset - 2, location.startTag.endOffset) === '/>') continue
    const line = location.startTag.startLine
    const closer = endTagAt.get(location.endOffset)
    if (location.endOffset >= html.length) problems.push({ line, message: `<${name}> is never closed (open-elements-left-after-eof)` })
    else if (closer)
      problems.push({
        line,
        message: `<${name}> is not closed before </${closer.tagName}> on line ${location.endLine} (closing-of-element-with-open-child-elements)`,
      })
    else problems.push({ line, message: `<${name}> is not closed: the tag on line ${location.endLine} ends it without its end tag` })
  }

  for (const element of elements) {
    const attributeLine = (name: string) => element.sourceCodeLocation?.attrs?.[name]?.startLine ?? element.sourceCodeLocation?.startLine ?? 1
    for (const attribute of element.attrs) {
      if (attribute.name === 'style') {
        const line = attributeLine('style')
        for (const found of styleSheetReferences(attribute.value)) references.push({ link: found.link, line })
      }
      if (!REFERENCE_ATTRIBUTES[element.tagName]?.includes(attribute.name)) continue
      const line = attributeLine(attribute.name)
      const links = attribute.name === 'srcset' ? srcsetUrls(attribute.value) : [attribute.value.trim()]
      for (const link of links) references.push({ link, line })
    }
    if (element.tagName === 'style') {
      for (const text of element.childNodes) {
        if (text.nodeName !== '#text') continue
        const { value, sourceCodeLocation } = text as DefaultTreeAdapterTypes.TextNode
        const firstLine = sourceCodeLocation?.startLine ?? 1
        for (const found of styleSheetReferences(value)) references.push({ link: found.link, line: firstLine + lineAt(value, found.offset) - 1 })
      }
    }
  }
  return { problems, references }
}

const isExternal = (link: string) => /^[a-z][a-z0-9+.-]*:/i.test(link) || link.startsWith('//') || link.startsWith('#')

/** Why a link of `from` does not reach a file of the site, or undefined when it does (or is not local). */
function referenceProblem(from: string, link: string, paths: ReadonlySet<string>): string | undefined {
  if (link === '' || isExternal(link)) return undefined
  let target: string
  try {
    target = decodeURIComponent(link.split(/[?#]/)[0]!)
  } catch {
    return `link ${link} is not a valid URL`
  }
  if (target === '') return undefined
  // Root-relative links resolve against the site's root; others against the directory of the file holding them.
  const resolved = posix.normalize(target.startsWith('/') ? target.slice(1) : posix.join(posix.dirname(from), target))
  if (resolved === '..' || resolved.startsWith('../')) return `link ${link} points outside the site`
  return candidateFiles(resolved).some((c) => paths.has(c)) ? undefined : `link ${link} names no file of the site`
}

/** The site's problems, each `path:line: what`; none means it can be published. */
export function checkSite(files: readonly SiteFileBytes[]): string[] {
  const paths = new Set(files.map((f) => f.path))
  const problems: string[] = []
  if (!paths.has('index.html')) problems.push('index.html: the site has no root page')
  const decoder = new TextDecoder()
  for (const file of files) {
    const isPage = /\.html?$/i.test(file.path)
    if (!isPage && !/\.css$/i.test(file.path)) continue
    const text = decoder.decode(file.bytes)
    const found = isPage
      ? examinePage(text)
      : { problems: [], references: styleSheetReferences(text).map((r) => ({ link: r.link, line: lineAt(text, r.offset) })) }
    const fileProblems: Finding[] = [...found.problems]
    for (const reference of found.references) {
      const problem = referenceProblem(file.path, reference.link, paths)
      if (problem) fileProblems.push({ line: reference.line, message: problem })
    }
    fileProblems.sort((a, b) => a.line - b.line)
    problems.push(...fileProblems.map((p) => `${file.path}:${p.line}: ${p.message}`))
  }
  return problems
}
