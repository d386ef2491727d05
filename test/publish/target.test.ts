/** Repository, branch and domain rules, and where GitHub Pages serves the site. */
import { describe, expect, test } from 'bun:test'
import { AppError } from '../../src/errors.ts'
import { branchProblem } from '../../src/branch-names.ts'
import { domainProblem, parseTarget, publicUrl, repositoryProblem } from '../../plugins/publish/target.ts'

describe('repository names', () => {
  test('GitHub-valid owner/name pairs are accepted', () => {
    for (const name of ['octo-dev/site', 'a/b', 'Octo/my.site_v2-final', `${'a'.repeat(39)}/${'b'.repeat(100)}`, 'octo/octo.github.io'])
      expect(repositoryProblem(name)).toBeUndefined()
  })

  test('anything else is refused before it reaches a URL', () => {
    const refused = [
      'site',
      'a/b/c',
      '-octo/site',
      'octo-/site',
      'oc--to/site',
      `${'a'.repeat(40)}/site`,
      'octo/..',
      'octo/.',
      'octo/site.git',
      'octo/si te',
      'octo/site%2f..',
      'octo/',
      '/site',
      `octo/${'b'.repeat(101)}`,
      'octo/sité',
    ]
    for (const name of refused) expect(repositoryProblem(name), name).toBeString()
  })
})

describe('branches', () => {
  test('ordinary branch names are accepted', () => {
    for (const branch of ['gh-pages', 'main', 'site/live', 'release-1.2', 'a_b']) expect(branchProblem(branch)).toBeUndefined()
  })

  test('names git would refuse are refused', () => {
    for (const branch of ['', 'a..b', '/a', 'a/', 'a//b', '.hidden', 'a/.b', 'x.lock', 'a.', '-x', 'a b', 'a~1', 'a^', 'a:b', 'a?', 'a*', 'a[', 'a\\b', '@{x}'])
      expect(branchProblem(branch), branch).toBeString()
  })
})

describe('custom domains', () => {
  test('host names are accepted', () => {
    for (const domain of ['docs.example.com', 'www.example.co.uk', 'A-B.example.org', 'xn--bcher-kva.example']) expect(domainProblem(domain)).toBeUndefined()
  })

  test('anything that is not a host name is refused', () => {
    for (const domain of [
      'localhost',
      '127.0.0.1',
      'exa mple.com',
      '-a.example.com',
      'a-.example.com',
      'a..com',
      'https://example.com',
      'example.com/x',
      'a.example.com.',
      `${'a'.repeat(64)}.com`,
    ])
      expect(domainProblem(domain), domain).toBeString()
  })
})

test('parseTarget lists every bad field as validation_failed, and lower-cases the domain', () => {
  try {
    parseTarget({ repository: 'bad', branch: 'a..b', customDomain: 'localhost' }, 'gh-pages')
    throw new Error('accepted')
  } catch (error) {
    expect(error).toBeInstanceOf(AppError)
    expect((error as AppError).code).toBe('validation_failed')
    expect((error as AppError).options.errors!.map((e) => e.field)).toEqual(['repository', 'branch', 'customDomain'])
  }
  expect(parseTarget({ repository: 'Octo/Site', customDomain: 'Docs.Example.COM' }, 'gh-pages')).toEqual({
    owner: 'Octo',
    name: 'Site',
    branch: 'gh-pages',
    customDomain: 'docs.example.com',
  })
})

test('the public URL is the custom domain, the user site root, or the project path', () => {
  expect(publicUrl({ owner: 'Octo', name: 'Site', branch: 'gh-pages' })).toBe('https://octo.github.io/Site/')
  expect(publicUrl({ owner: 'Octo', name: 'octo.github.io', branch: 'main' })).toBe('https://octo.github.io/')
  expect(publicUrl({ owner: 'Octo', name: 'Site', branch: 'gh-pages', customDomain: 'docs.example.com' })).toBe('https://docs.example.com/')
})
