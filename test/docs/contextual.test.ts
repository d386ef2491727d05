import { describe, expect, test } from 'bun:test'
import { validateDocsConfig } from '@mintlify/validation'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import {
  BUILT_IN_OPTIONS,
  ContextualConfigError,
  DISPLAY_OPTIONS,
  ICON_TYPES,
  MAX_ENCODED_VALUE_LENGTH,
  NEUTRAL_OPTION_ALIASES,
  appendQuery,
  assistantPrompt,
  cursorInstallLink,
  parseContextualConfig,
  resolveHref,
  resolveMenu,
  substitutePlaceholders,
  vscodeInstallLink,
} from '../../plugins/docs/contextual.ts'
import { samplePage as page } from './support.ts'

const docsJson = () => JSON.parse(readFileSync(join(import.meta.dir, '..', '..', 'docs.json'), 'utf8')) as Record<string, unknown>

interface Issue {
  code: string
  path: (string | number)[]
  options?: string[]
  unionErrors?: { issues: Issue[] }[]
}

/** Every issue the platform's validator reports, unions unfolded. */
async function platformIssues(config: unknown): Promise<Issue[]> {
  const result = await validateDocsConfig(config)
  if (result.success) return []
  const flat: Issue[] = []
  const visit = (issue: Issue) => {
    flat.push(issue)
    for (const union of issue.unionErrors ?? []) union.issues.forEach(visit)
  }
  ;(result.error.issues as unknown as Issue[]).forEach(visit)
  return flat
}

/** The values a platform enum accepts, read from its rejection of `config`. */
async function platformEnum(config: unknown, pathEnd: (string | number)[]): Promise<string[]> {
  const issue = (await platformIssues(config)).find(
    (i) => i.code === 'invalid_enum_value' && JSON.stringify(i.path.slice(-pathEnd.length)) === JSON.stringify(pathEnd),
  )
  if (!issue?.options) throw new Error(`the validator named no enum at ${pathEnd.join('.')}`)
  return issue.options
}

const withContextual = (contextual: unknown) => ({ ...docsJson(), contextual })

describe('docs.json and the documentation platform validator', () => {
  test('docs.json passes the platform validator', async () => {
    const result = await validateDocsConfig(docsJson())
    expect(result.success, JSON.stringify(await platformIssues(docsJson()), null, 1)).toBe(true)
  })

  test('a copy with an unknown option id fails it', async () => {
    const issues = await platformIssues(withContextual({ options: ['copy', 'gemini'] }))
    expect(issues.some((i) => i.code === 'invalid_enum_value' && i.path.join('.') === 'contextual.options.1')).toBe(true)
  })

  test('a copy with a custom option without href fails it', async () => {
    const issues = await platformIssues(withContextual({ options: [{ title: 'T', description: 'D', icon: 'link' }] }))
    expect(issues.some((i) => i.path.join('.') === 'contextual.options.0.href')).toBe(true)
  })

  test('our built-in ids are exactly the ids the platform schema accepts', async () => {
    const accepted = await platformEnum(withContextual({ options: ['not-an-option'] }), ['options', 0])
    expect<string[]>([...BUILT_IN_OPTIONS].sort()).toEqual([...accepted].sort())
    expect((await validateDocsConfig(withContextual({ options: [...BUILT_IN_OPTIONS] }))).success).toBe(true)
  })

  test('our icon styles and display values are those of the platform schema', async () => {
    const styles = await platformEnum(withContextual({ options: [{ title: 'T', description: 'D', icon: { name: 'x', style: 'bold' }, href: '/x' }] }), [
      'icon',
      'style',
    ])
    expect<string[]>([...ICON_TYPES].sort()).toEqual([...styles].sort())
    const displays = await platformEnum(withContextual({ options: ['copy'], display: 'sidebar' }), ['contextual', 'display'])
    expect<string[]>([...DISPLAY_OPTIONS].sort()).toEqual([...displays].sort())
  })

  test('docs.json uses every built-in option of the contract and both kinds of custom option', () => {
    const options = (docsJson().contextual as { options: unknown[] }).options
    for (const id of ['copy', 'view', 'chatgpt', 'claude', 'perplexity', 'mcp', 'cursor', 'vscode']) expect(options).toContain(id)
    const custom = options.filter((o): o is { href: unknown } => typeof o === 'object')
    const dynamic = custom.find((o) => typeof o.href === 'object') as { href: { query: { value: string }[] } } | undefined
    const values = dynamic?.href.query.map((q) => q.value).join(' ') ?? ''
    for (const placeholder of ['$page', '$path', '$mcp']) expect(values).toContain(placeholder)
    expect(custom.some((o) => typeof o.href === 'string')).toBe(true)
    expect(() => parseContextualConfig(docsJson().contextual)).not.toThrow()
  })
})

/** The problems start-up validation reports for `contextual`, or [] when it is accepted. */
function problemsOf(contextual: unknown): string[] {
  try {
    parseContextualConfig(contextual)
    return []
  } catch (err) {
    expect(err).toBeInstanceOf(ContextualConfigError)
    return (err as ContextualConfigError).problems
  }
}

const custom = (fields: Record<string, unknown> = {}) => ({
  title: 'Ask',
  description: 'Ask about it',
  icon: 'sparkles',
  href: 'https://example.com/ask',
  ...fields,
})

describe('start-up validation of the contextual section', () => {
  test('neutral ids are aliases of the vendor ids', () => {
    const config = parseContextualConfig({ options: ['copy', 'assistant1', 'assistant2', 'assistant3', 'mcp', 'editor1', 'editor2'] })
    expect(config.options).toEqual(['copy', 'chatgpt', 'claude', 'perplexity', 'mcp', 'cursor', 'vscode'])
    expect(Object.keys(NEUTRAL_OPTION_ALIASES).sort()).toEqual(['assistant1', 'assistant2', 'assistant3', 'editor1', 'editor2'])
    expect(config.display).toBe('header')
  })

  test('no contextual section is an empty menu', () => {
    expect(parseContextualConfig(undefined)).toEqual({ options: [], display: 'header' })
  })

  test('an unknown built-in id is named with its index', () => {
    expect(problemsOf({ options: ['copy', 'gemini'] })).toEqual([
      expect.stringMatching(/^contextual\.options\[1\]: "gemini" is not a built-in option; known ids are copy, /),
    ])
  })

  test('a repeated option, also through its alias, is rejected', () => {
    expect(problemsOf({ options: ['chatgpt', 'view', 'assistant1'] })).toEqual([
      'contextual.options[2]: "assistant1" repeats contextual.options[0] (chatgpt); each option may appear once',
    ])
  })

  test('each missing required field of a custom option is named', () => {
    expect(problemsOf({ options: ['copy', {}] })).toEqual([
      'contextual.options[1].title: is required',
      'contextual.options[1].description: is required',
      'contextual.options[1].icon: is required',
      'contextual.options[1].href: is required',
    ])
  })

  test('a bad iconType is named with the allowed values', () => {
    const [problem, ...rest] = problemsOf({ options: [custom({ iconType: 'bold' })] })
    expect(rest).toEqual([])
    expect(problem).toStartWith('contextual.options[0].iconType: must be one of brands, duotone, light, regular,')
    expect(problem).toEndWith('got "bold"')
    expect(problemsOf({ options: [custom({ iconType: 'sharp-solid' })] })).toEqual([])
  })

  test("the contract's icon styles are all accepted", () => {
    for (const iconType of ['regular', 'solid', 'light', 'thin', 'sharp-solid', 'duotone', 'brands'])
      expect(problemsOf({ options: [custom({ iconType })] })).toEqual([])
  })

  test('bad href shapes are named down to the query entry', () => {
    expect(problemsOf({ options: [custom({ href: 42 })] })).toEqual([
      'contextual.options[0].href: must be a string or an object with base and query, got number',
    ])
    expect(problemsOf({ options: [custom({ href: { query: [] } })] })).toEqual(['contextual.options[0].href.base: is required'])
    expect(problemsOf({ options: [custom({ href: { base: 'https://x.test' } })] })).toEqual([
      'contextual.options[0].href.query: is required (a list of { key, value })',
    ])
    expect(problemsOf({ options: [custom({ href: { base: 'https://x.test', query: { q: '$page' } } })] })).toEqual([
      'contextual.options[0].href.query: must be a list of { key, value }, got object',
    ])
    expect(problemsOf({ options: ['view', custom({ href: { base: 'https://x.test', query: [{ key: 'q', value: 1 }, { value: '$path' }, 'x'] } })] })).toEqual([
      'contextual.options[1].href.query[0].value: must be a string, got number',
      'contextual.options[1].href.query[1].key: is required',
      'contextual.options[1].href.query[2]: must be an object with key and value, got string',
    ])
    expect(problemsOf({ options: [custom({ href: { base: 'https://x.test', query: [], extra: 1 } })] })).toEqual([
      'contextual.options[0].href.extra: is not a known field',
    ])
  })

  test('links that would run script, or lead nowhere, are refused', () => {
    expect(problemsOf({ options: [custom({ href: 'javascript:alert(1)' })] })).toEqual(['contextual.options[0].href: must not use the javascript: scheme'])
    expect(problemsOf({ options: [custom({ href: { base: ' DATA:text/html,x', query: [] } })] })).toEqual([
      'contextual.options[0].href.base: must not use the data: scheme',
    ])
    expect(problemsOf({ options: [custom({ href: 'relative/page' })] })).toEqual([
      'contextual.options[0].href: must be an absolute URL or a path starting with "/", got "relative/page"',
    ])
    expect(problemsOf({ options: [custom({ href: 'cursor://anysphere.cursor-deeplink/x' }), custom({ title: 'Two', href: '/swagger' })] })).toEqual([])
  })

  test('unknown fields, a bad icon object and a bad display are named', () => {
    expect(problemsOf({ options: [custom({ display: 'toc' })] })).toEqual(['contextual.options[0].display: is not a known field'])
    expect(problemsOf({ options: [custom({ icon: { style: 'solid' } })] })).toEqual(['contextual.options[0].icon.name: is required (a string)'])
    expect(problemsOf({ options: [custom({ icon: { name: 'x', library: 'material' } })] })[0]).toStartWith(
      'contextual.options[0].icon.library: must be one of fontawesome, lucide, tabler',
    )
    expect(problemsOf({ options: ['copy'], display: 'sidebar' })).toEqual(['contextual.display: must be one of header, toc, got "sidebar"'])
    expect(problemsOf({ options: [3] })).toEqual(['contextual.options[0]: must be a built-in id (a string) or a custom option (an object), got number'])
    expect(problemsOf({})).toEqual(['contextual.options: is required (a list)'])
    expect(problemsOf(['copy'])).toEqual(['contextual: must be an object with options, got an array'])
  })

  test('every problem is reported at once, and the error message lists them', () => {
    let error: unknown
    try {
      parseContextualConfig({ options: ['nope', custom({ href: undefined, iconType: 'huge' })] })
    } catch (err) {
      error = err
    }
    expect(error).toBeInstanceOf(ContextualConfigError)
    expect((error as ContextualConfigError).problems).toHaveLength(3)
    expect((error as Error).message).toContain('contextual.options[0]: "nope"')
    expect((error as Error).message).toContain('contextual.options[1].href: is required')
    expect((error as Error).message).toContain('contextual.options[1].iconType')
  })
})

/** The value of query parameter `key` as a URL parser reads it back. */
const queryValue = (href: string, key: string) => new URL(href).searchParams.get(key)
const dynamic = (value: string, key = 'q', base = 'https://chat.example.com/new') => ({ base, query: [{ key, value }] })

describe('placeholders and URL encoding', () => {
  test('$page, $path and $mcp are replaced by the page, its path and the MCP URL', () => {
    const href = resolveHref(
      {
        base: 'https://chat.example.com/new',
        query: [
          { key: 'a', value: '$page' },
          { key: 'b', value: '$path' },
          { key: 'c', value: '$mcp' },
        ],
      },
      page(),
    )
    expect(queryValue(href, 'a')).toBe('# Code search\n\nFind code.\n')
    expect(queryValue(href, 'b')).toBe('/docs/search')
    expect(queryValue(href, 'c')).toBe('https://api.example.com/mcp')
  })

  test('&, =, #, +, spaces, newlines and unicode survive as data, percent-encoded', () => {
    const markdown = 'a&b=c#d+e f\r\ng ✓ 日本 😀 100%'
    const href = resolveHref(dynamic('$page'), page({ markdown }))
    expect(href).toBe(`https://chat.example.com/new?q=${encodeURIComponent(markdown)}`)
    for (const escaped of ['%26', '%3D', '%23', '%2B', '%20', '%0D%0A', '%E2%9C%93', '%F0%9F%98%80', '%25']) expect(href).toContain(escaped)
    expect(href).not.toContain('+')
    expect(queryValue(href, 'q')).toBe(markdown)
  })

  test('literal text and keys are encoded the same way', () => {
    const href = resolveHref({ base: 'https://x.test/s', query: [{ key: 'q&x=1', value: 'Read $path & tell #me' }] }, page())
    expect(href).toBe('https://x.test/s?q%26x%3D1=Read%20%2Fdocs%2Fsearch%20%26%20tell%20%23me')
    expect(queryValue(href, 'q&x=1')).toBe('Read /docs/search & tell #me')
  })

  test('a value with two placeholders gets both', () => {
    expect(substitutePlaceholders('Page $path, server $mcp.', page())).toBe('Page /docs/search, server https://api.example.com/mcp.')
    expect(substitutePlaceholders('$path$path', page())).toBe('/docs/search/docs/search')
  })

  test('near misses stay as written; a placeholder may touch punctuation', () => {
    expect(substitutePlaceholders('$pathX $pages $mcp_url $Page $ path $page1 $$', page())).toBe('$pathX $pages $mcp_url $Page $ path $page1 $$')
    expect(substitutePlaceholders('https://docs.example.com$path.md ($mcp) x$path', page())).toBe(
      'https://docs.example.com/docs/search.md (https://api.example.com/mcp) x/docs/search',
    )
  })

  test('substituted text is never scanned again', () => {
    expect(substitutePlaceholders('$page', page({ markdown: 'costs $path and $mcp' }))).toBe('costs $path and $mcp')
  })

  test('a $page longer than the cap is cut at a character, ends with …, and the encoded value fits', () => {
    const markdown = `# Long\n\n${'Paragraph with unicode 😀 & symbols = + #. '.repeat(2000)}`
    const value = substitutePlaceholders('Context for $path:\n$page', page({ markdown }))
    expect(encodeURIComponent(value).length).toBeLessThanOrEqual(MAX_ENCODED_VALUE_LENGTH)
    expect(encodeURIComponent(value).length).toBeGreaterThan(MAX_ENCODED_VALUE_LENGTH - 20)
    expect(value).toStartWith('Context for /docs/search:\n# Long\n\nParagraph with unicode 😀')
    expect(value).toEndWith('…')
    const cut = value.slice('Context for /docs/search:\n'.length, -1)
    expect(markdown.startsWith(cut)).toBe(true)
    expect(value.isWellFormed()).toBe(true)
    const href = resolveHref(dynamic('Context for $path:\n$page'), page({ markdown }))
    expect(queryValue(href, 'q')).toBe(value)
  })

  test('two $page in one value share the cap', () => {
    const markdown = 'x'.repeat(10_000)
    const value = substitutePlaceholders('$page|$page', page({ markdown }))
    expect(encodeURIComponent(value).length).toBeLessThanOrEqual(MAX_ENCODED_VALUE_LENGTH)
    const [a, b] = value.split('|')
    expect(a).toBe(b!)
    expect(a).toEndWith('…')
  })

  test('a page within the cap is kept whole', () => {
    const markdown = 'é'.repeat(600)
    expect(substitutePlaceholders('$page', page({ markdown }))).toBe(markdown)
  })

  test('a lone surrogate in a value does not break encoding', () => {
    expect(() => resolveHref(dynamic('bad \ud800 text $path'), page())).not.toThrow()
    expect(queryValue(resolveHref(dynamic('bad \ud800'), page()), 'q')).toBe('bad \ufffd')
  })

  test('the query goes before a fragment and after an existing query', () => {
    expect(appendQuery('https://x.test/a?lang=en#top', [['q', 'a b']])).toBe('https://x.test/a?lang=en&q=a%20b#top')
    expect(appendQuery('https://x.test/a?', [['q', '1']])).toBe('https://x.test/a?q=1')
    expect(appendQuery('https://x.test/a', [])).toBe('https://x.test/a')
  })

  test('a string href is used as it is, placeholders included', () => {
    expect(resolveHref('https://x.test/?q=$page&p=$path', page())).toBe('https://x.test/?q=$page&p=$path')
  })
})

describe('built-in entries', () => {
  const menu = resolveMenu(
    parseContextualConfig({
      options: ['copy', 'view', 'chatgpt', 'claude', 'perplexity', 'mcp', 'cursor', 'vscode', 'assistant', custom(), 'add-mcp', 'download-spec'],
    }),
    page(),
  )
  const entry = (id: string) => menu.find((e) => e.id === id)!
  const href = (id: string) => {
    const e = entry(id)
    if (e.kind !== 'link') throw new Error(`${id} is not a link`)
    return e.href
  }
  const prompt = 'Read https://api.example.com/docs/search.md so I can ask questions about it.'

  test('entries follow docs.json order, every built-in option included', () => {
    expect(menu.map((e) => e.id)).toEqual([
      'copy',
      'view',
      'chatgpt',
      'claude',
      'perplexity',
      'mcp',
      'cursor',
      'vscode',
      'assistant',
      'custom-9',
      'add-mcp',
      'download-spec',
    ])
    const all = resolveMenu(parseContextualConfig({ options: [...BUILT_IN_OPTIONS] }), page())
    expect(all.map((e) => e.id)).toEqual([...BUILT_IN_OPTIONS])
  })

  test('copy copies the page, view opens its Markdown', () => {
    expect(entry('copy')).toMatchObject({ kind: 'copy', copy: { page: true }, fallbackHref: '/docs/search.md' })
    expect(entry('view')).toMatchObject({ kind: 'link', href: '/docs/search.md', newTab: true })
  })

  test('assistants open with a prompt that points at the page Markdown', () => {
    expect(assistantPrompt('https://api.example.com/docs/search.md')).toBe(prompt)
    expect(href('chatgpt')).toBe(`https://chatgpt.com/?hints=search&q=${encodeURIComponent(prompt)}`)
    expect(href('claude')).toBe(`https://claude.ai/new?q=${encodeURIComponent(prompt)}`)
    expect(href('perplexity')).toBe(`https://www.perplexity.ai/search?q=${encodeURIComponent(prompt)}`)
    expect(queryValue(href('chatgpt'), 'hints')).toBe('search')
    expect(queryValue(href('claude'), 'q')).toBe(prompt)
  })

  test('an assistant prompt is capped like any value', () => {
    const long = assistantPrompt(`https://api.example.com/docs/${'a'.repeat(10_000)}.md`)
    expect(encodeURIComponent(long).length).toBeLessThanOrEqual(MAX_ENCODED_VALUE_LENGTH)
  })

  test('mcp and add-mcp copy the MCP URL and its install command', () => {
    expect(entry('mcp')).toMatchObject({ kind: 'copy', copy: { text: 'https://api.example.com/mcp' } })
    expect(entry('add-mcp')).toMatchObject({ kind: 'copy', copy: { text: 'npx add-mcp https://api.example.com/mcp' } })
  })

  test('cursor installs the server by name with its config as base64 JSON', () => {
    const link = href('cursor')
    expect(link).toStartWith('cursor://anysphere.cursor-deeplink/mcp/install?')
    const params = new URL(link).searchParams
    expect(params.get('name')).toBe('Example API')
    expect(JSON.parse(Buffer.from(params.get('config')!, 'base64').toString('utf8'))).toEqual({ url: 'https://api.example.com/mcp' })
    expect(link).toBe(cursorInstallLink('Example API', 'https://api.example.com/mcp'))
  })

  test('vscode installs an http server from URL-encoded JSON', () => {
    const link = href('vscode')
    expect(link).toStartWith('vscode:mcp/install?')
    expect(JSON.parse(decodeURIComponent(link.slice('vscode:mcp/install?'.length)))).toEqual({
      name: 'Example API',
      type: 'http',
      url: 'https://api.example.com/mcp',
    })
    expect(link).toBe(vscodeInstallLink('Example API', 'https://api.example.com/mcp'))
    expect(entry('vscode')).toMatchObject({ newTab: false })
  })

  test('download-spec downloads the OpenAPI document; custom links open in a new tab', () => {
    expect(entry('download-spec')).toMatchObject({ kind: 'link', href: '/swagger/json', download: true })
    expect(entry('custom-9')).toMatchObject({ kind: 'link', title: 'Ask', href: 'https://example.com/ask', newTab: true, icon: 'sparkles' })
  })
})
