/**
 * The static check of a generated site: parse5's parse errors that change a page, elements left open and end
 * tags that close nothing, each with its line; local links and assets (attributes, srcset, inline and linked
 * style sheets) that name no file of the site.
 */
import { describe, expect, test } from 'bun:test'
import { checkSite, srcsetUrls, styleSheetReferences } from '../../plugins/agents/sites/site-check.ts'
import { bakerySite, page, siteOf } from './site-support.ts'

describe('valid sites pass', () => {
  test('a realistic multi-page site (optional end tags, inline SVG, entities, srcset, CSS url() and @import) has no problems', () => {
    expect(checkSite(bakerySite())).toEqual([])
  })

  test('what HTML recovers from the way the author meant is not a problem', () => {
    const body = [
      '<p>1 < 2 &copy 2024 <a href="index.html?a=1&b=2"class="x">home</a>',
      '<ul><li>one<li>two</ul><p>first<p>second<div>block</div>',
      '<script>if (a < b && "</div>") document.write("<p>")</script>',
      '<svg><path d="M0 0"/><circle r="1"></circle></svg><br/><img src="index.html" />',
      '</body></html>',
    ].join('\n')
    expect(checkSite(siteOf({ 'index.html': page(body) }))).toEqual([])
  })
})

describe('pages that do not parse as written', () => {
  test('an end tag that closes nothing is reported on its line', () => {
    expect(checkSite(siteOf({ 'index.html': page('<div>\n<p>text</p>\n</span>\n</div>') }))).toEqual([
      'index.html:5: </span> closes no open element (end-tag-without-matching-open-element)',
    ])
  })

  test('an element left open at the end of the page is reported where it opens', () => {
    expect(checkSite(siteOf({ 'index.html': page('<main>\n<section>\n<p>never closed') }))).toEqual([
      'index.html:3: <main> is never closed (open-elements-left-after-eof)',
      'index.html:4: <section> is never closed (open-elements-left-after-eof)',
    ])
  })

  test("an element closed by its parent's end tag is reported with both lines", () => {
    expect(checkSite(siteOf({ 'index.html': page('<div><span>\ntext</div>') }))).toEqual([
      'index.html:3: <span> is not closed before </div> on line 4 (closing-of-element-with-open-child-elements)',
    ])
  })

  test('the parse errors that change the page are reported with their code', () => {
    const problems = checkSite(
      siteOf({
        'index.html': '<title>No doctype</title>\n<a href="index.html" href="other.html">x</a>\n<div/>\n</div>\n<img src="index.html"',
      }),
    )
    expect(problems).toEqual([
      'index.html:1: the page does not start with <!doctype html>, so browsers render it in quirks mode (missing-doctype)',
      'index.html:2: an attribute is given twice; browsers ignore the second (duplicate-attribute)',
      'index.html:3: a `/>` does not close this element in HTML: it stays open (non-void-html-element-start-tag-with-trailing-solidus)',
      'index.html:5: the page ends inside a tag (eof-in-tag)',
    ])
  })

  test('a script never closed swallows the rest of the page, and says so', () => {
    expect(checkSite(siteOf({ 'index.html': page('<script>\nlet x = 1\n<p>lost</p>') }))).toEqual([
      'index.html:5: the page ends inside <script>, <style>, <title> or <textarea>: the rest of the page is its text (eof-in-element-that-can-contain-only-text)',
    ])
  })
})

describe('links and assets', () => {
  test('a broken link, a missing asset, a missing srcset candidate and a link out of the site are each reported on their line', () => {
    const body = [
      '<a href="missing.html">gone</a>',
      '<img src="img/logo.png">',
      '<img src="img/a.png" srcset="img/a.png 1x, img/a@2x.png 2x">',
      '<a href="../../etc/passwd">out</a>',
    ].join('\n')
    expect(checkSite(siteOf({ 'index.html': page(body), 'img/a.png': 'png' }))).toEqual([
      'index.html:3: link missing.html names no file of the site',
      'index.html:4: link img/logo.png names no file of the site',
      'index.html:5: link img/a@2x.png names no file of the site',
      'index.html:6: link ../../etc/passwd points outside the site',
    ])
  })

  test('links resolve like a static host: directories to index.html, page to page.html, root-relative from the root', () => {
    const site = siteOf({
      'index.html': page('<a href="about/">a</a> <a href="docs">d</a> <a href="/docs.html#x">d</a> <a href="blog/post?id=1">p</a> <a href="./">h</a>'),
      'about/index.html': page('<a href="../">home</a> <a href="/about/">self</a> <a href="..">up</a>'),
      'docs.html': page(''),
      'blog/post/index.html': page('<a href="../../index.html">home</a>'),
    })
    expect(checkSite(site)).toEqual([])
  })

  test('a site without a root page, and a link that is not a valid URL, are reported', () => {
    expect(checkSite(siteOf({ 'page.html': page('<a href="100%25%zz">bad</a>') }))).toEqual([
      'index.html: the site has no root page',
      'page.html:3: link 100%25%zz is not a valid URL',
    ])
  })

  test('url() and @import in style sheets, style elements and style attributes are checked against the file that holds them', () => {
    const site = siteOf({
      'index.html': page(
        '<style>\n.a { background: url("img/here.png") }\n.b { background: url(img/gone.png) }\n</style>\n<div style="background: url(\'img/nope.png\')"></div>',
      ),
      'css/site.css':
        '@import "base.css";\n/* url(commented.png) */\nbody { background: url(../img/here.png), url( "../img/missing.png" ) }\n.i { background: url(data:image/png;base64,AAAA) }\n',
      'css/base.css': '.x { content: "url(not-a-link)" }',
      'img/here.png': 'png',
    })
    expect(checkSite(site)).toEqual([
      'index.html:5: link img/gone.png names no file of the site',
      'index.html:7: link img/nope.png names no file of the site',
      'css/site.css:3: link ../img/missing.png names no file of the site',
    ])
  })

  test('srcset candidates and style sheet references are read the way browsers read them', () => {
    expect(srcsetUrls(' a.png 1x,b.png  2x , c.png, d.png 480w, data:image/png;base64,AA,BB 3x')).toEqual([
      'a.png',
      'b.png',
      'c.png',
      'd.png',
      'data:image/png;base64,AA,BB',
    ])
    expect(
      styleSheetReferences('@import url(a.css); @import \'b.css\'; .x{background:URL( "c\\".png" )} /* url(d.png) */ .y::after{content:"url(e.png)"}').map(
        (r) => r.link,
      ),
    ).toEqual(['a.css', 'b.css', 'c".png'])
  })
})
