/** The site checks that run before anything is sent: paths, limits, index.html. */
import { describe, expect, test } from 'bun:test'
import { AppError } from '../../src/errors.ts'
import { buildSite, MAX_PATH_BYTES, pathProblem, type InlineFile } from '../../plugins/publish/site-validation.ts'

const limits = { maxFiles: 10, maxBytes: 1000 }
const index: InlineFile = { path: 'index.html', content: '<h1>hi</h1>' }

/** The AppError `buildSite` throws for `files`. */
function refusal(files: InlineFile[], options: Parameters<typeof buildSite>[2] = {}, l = limits): AppError {
  try {
    buildSite(files, l, options)
  } catch (error) {
    if (error instanceof AppError) return error
    throw error
  }
  throw new Error('the site was accepted')
}

describe('file paths', () => {
  const attacks: [string, RegExp][] = [
    ['../outside.html', /inside the site/],
    ['docs/../../outside.html', /inside the site/],
    ['docs/..', /inside the site/],
    ['/etc/passwd', /relative/],
    ['C:/Windows/win.ini', /relative/],
    ['docs\\..\\index.html', /backslashes/],
    ['.git/config', /\.git/],
    ['docs/.GIT/hooks/pre-commit', /\.git/],
    ['a\0b.html', /NUL/],
    ['a\nb.html', /control/],
    ['docs//index.html', /empty segments/],
    ['docs/', /empty segments/],
    ['./index.html', /\. segments/],
    ['', /empty/],
    ['x'.repeat(MAX_PATH_BYTES + 1), /at most/],
  ]
  for (const [path, reason] of attacks)
    test(`${JSON.stringify(path.length > 40 ? `${path.slice(0, 10)}…` : path)} is refused`, () => {
      expect(pathProblem(path)).toMatch(reason)
      const error = refusal([index, { path, content: 'x' }])
      expect(error.code).toBe('invalid_site')
      expect(error.status).toBe(422)
      expect(error.options.errors).toEqual([{ field: 'files.1.path', message: expect.stringMatching(reason) }])
    })

  test('ordinary paths are accepted: nested, dotted names, unicode, spaces, .well-known', () => {
    for (const path of [
      'index.html',
      'a/b/c/d.html',
      '.well-known/security.txt',
      'file.name.with.dots',
      'été/naïve page.html',
      '_next/static/x.js',
      '..hidden',
      'a..b',
    ])
      expect(pathProblem(path)).toBeUndefined()
  })

  test('every bad file is reported at once, with the field of each', () => {
    const error = refusal([{ path: '../a', content: '' }, index, { path: '/b', content: '' }, { path: '.git/x', content: '' }])
    expect(error.options.errors!.map((e) => e.field)).toEqual(['files.0.path', 'files.2.path', 'files.3.path'])
    expect(error.message).toContain('and 2 more')
  })

  test('the same path twice, and a path that is both a file and a directory, are refused', () => {
    expect(refusal([index, { path: 'a.html', content: '1' }, { path: 'a.html', content: '2' }]).options.errors).toEqual([
      { field: 'files.2.path', message: '"a.html" is also files.1.path' },
    ])
    expect(refusal([index, { path: 'docs', content: '1' }, { path: 'docs/x.html', content: '2' }]).options.errors).toEqual([
      { field: 'files.1.path', message: '"docs" is a file but also a directory of "docs/x.html"' },
    ])
  })

  test('CNAME comes from customDomain, not from the files', () => {
    expect(refusal([index, { path: 'CNAME', content: 'x.example.com' }]).options.errors![0]!.message).toContain('customDomain')
  })
})

describe('contents and limits', () => {
  test('base64 files are decoded; text is UTF-8', () => {
    const site = buildSite(
      [index, { path: 'bin', content: Buffer.from([0, 255, 1]).toString('base64'), encoding: 'base64' }, { path: 'u.txt', content: 'é' }],
      limits,
    )
    expect([...site.find((f) => f.path === 'bin')!.bytes]).toEqual([0, 255, 1])
    expect([...site.find((f) => f.path === 'u.txt')!.bytes]).toEqual([0xc3, 0xa9])
  })

  test('invalid base64 is refused naming the content field', () => {
    for (const content of ['not base64!', 'abc', 'ab=c', 'YWJj\nZGVm'])
      expect(refusal([index, { path: 'x.bin', content, encoding: 'base64' }]).options.errors).toEqual([
        { field: 'files.1.content', message: 'is not valid base64 (encoding is base64)' },
      ])
  })

  test('too many files is 413 site_too_large with the counts', () => {
    const files = Array.from({ length: 11 }, (_, i) => ({ path: `p${i}.html`, content: '' }))
    const error = refusal(files)
    expect(error.code).toBe('site_too_large')
    expect(error.status).toBe(413)
    expect(error.options.extensions).toEqual({ fileCount: 11, maxFiles: 10 })
  })

  test('more decoded bytes than the limit is 413 site_too_large; exactly the limit passes', () => {
    const big = (n: number) => ({ path: 'big.bin', content: Buffer.alloc(n, 7).toString('base64'), encoding: 'base64' as const })
    const error = refusal([index, big(1000 - index.content.length + 1)])
    expect(error.code).toBe('site_too_large')
    expect(error.options.extensions).toEqual({ totalBytes: 1001, maxBytes: 1000 })
    expect(buildSite([index, big(1000 - index.content.length)], limits).length).toBe(3)
  })

  test('a site without a root index.html is refused unless requireIndex is false', () => {
    const files = [{ path: 'docs/index.html', content: '' }]
    expect(refusal(files).options.errors).toEqual([{ field: 'files', message: expect.stringContaining('requireIndex: false') }])
    expect(buildSite(files, limits, { requireIndex: false }).map((f) => f.path)).toEqual(['docs/index.html', '.nojekyll'])
  })

  test('.nojekyll is added (empty) unless present, and CNAME holds the custom domain', () => {
    const site = buildSite([index], limits, { customDomain: 'docs.example.com' })
    expect(site.map((f) => [f.path, Buffer.from(f.bytes).toString()])).toEqual([
      ['index.html', index.content],
      ['.nojekyll', ''],
      ['CNAME', 'docs.example.com\n'],
    ])
    expect(buildSite([index, { path: '.nojekyll', content: 'mine' }], limits).filter((f) => f.path === '.nojekyll')).toHaveLength(1)
  })
})
