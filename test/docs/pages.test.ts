/** The documentation site itself: docs.json, the pages it lists, and the configuration page against src/config.ts. */
import { afterAll, describe, expect, test } from 'bun:test'
import { compile } from '@mdx-js/mdx'
import { validateDocsConfig } from '@mintlify/validation'
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describeVariables } from '../../src/main/config.ts'
import { OPENAPI_JSON_PATH } from '../../plugins/docs/index.ts'
import { makeApp } from '../helpers.ts'

const ROOT = join(import.meta.dir, '..', '..')
const docsJson = JSON.parse(readFileSync(join(ROOT, 'docs.json'), 'utf8'))

interface NavigationGroup {
  group: string
  pages: (string | NavigationGroup)[]
}
const listed: string[] = (docsJson.navigation.groups as NavigationGroup[]).flatMap(function visit(group: NavigationGroup): string[] {
  return group.pages.flatMap((entry) => (typeof entry === 'string' ? [entry] : visit(entry)))
})

describe('docs.json', () => {
  test('is a valid Mintlify configuration', () => {
    const result = validateDocsConfig(docsJson)
    if (!result.success) throw new Error(JSON.stringify(result.error.issues, null, 2))
    expect(result.success).toBe(true)
  })

  test('lists every page once, each with a title and a description', () => {
    expect(new Set(listed).size).toBe(listed.length)
    for (const page of listed) {
      expect(existsSync(join(ROOT, `${page}.mdx`))).toBe(true)
      const front = /^---\n([\s\S]*?)\n---\n/.exec(readFileSync(join(ROOT, `${page}.mdx`), 'utf8'))?.[1] ?? ''
      const meta = Bun.YAML.parse(front) as Record<string, unknown>
      expect({ page, title: typeof meta.title, description: typeof meta.description }).toEqual({ page, title: 'string', description: 'string' })
    }
  })

  test('every page is valid MDX (a bare <name> or {braces} outside code would break it)', async () => {
    for (const page of listed) {
      const body = readFileSync(join(ROOT, `${page}.mdx`), 'utf8').replace(/^---\n[\s\S]*?\n---\n/, '')
      await compile(body).catch((error: Error) => {
        throw new Error(`${page}.mdx: ${error.message}`)
      })
    }
  })

  test('every page in docs/ is in the navigation', () => {
    const files = readdirSync(join(ROOT, 'docs'))
      .filter((f) => f.endsWith('.mdx'))
      .map((f) => `docs/${f.slice(0, -4)}`)
    expect(files.filter((f) => !listed.includes(f))).toEqual([])
  })

  test('the API reference is the OpenAPI document the service serves', () => {
    const groups = docsJson.navigation.groups as (NavigationGroup & { openapi?: string })[]
    expect(groups.find((g) => g.group === 'Reference')?.openapi).toBe('/swagger/json')
  })
})

// The configuration page: one table row per variable, `| \`NAME\` | default | meaning |`, in any section.

/** A default as it would be written in the environment: strings bare, lists comma-separated. */
function defaultCell(fallback: string): string | undefined {
  if (fallback === 'derived') return undefined
  if (fallback === '(unset)') return 'unset'
  const value = JSON.parse(fallback) as unknown
  if (Array.isArray(value)) return value.length === 0 ? 'empty' : `\`${value.join(',')}\``
  return `\`${String(value)}\``
}

/** Markdown that MDX reads as text: outside code spans, `<` `{` `}` would start JSX or an expression. */
function mdxText(text: string): string {
  return text
    .split(/(`[^`]*`)/)
    .map((part, i) => (i % 2 === 1 ? part : part.replaceAll('<', '&lt;').replaceAll('{', '&#123;').replaceAll('}', '&#125;').replaceAll('|', '\\|')))
    .join('')
}

describe('the configuration page', () => {
  const page = readFileSync(join(ROOT, 'docs', 'configuration.mdx'), 'utf8')
  const rows = new Map([...page.matchAll(/^\| `([A-Z][A-Z0-9_]*)` \| (.*?) \| (.*) \|$/gm)].map((m) => [m[1]!, { fallback: m[2]!, doc: m[3]! }] as const))

  test('documents every variable src/config.ts reads, with its default and its meaning', () => {
    const wrong: string[] = []
    for (const v of describeVariables()) {
      const row = rows.get(v.name)
      const fallback = defaultCell(v.fallback)
      const expected = `| \`${v.name}\` | ${fallback ?? '<how it is derived>'} | ${mdxText(v.doc)} |`
      if (!row || row.doc !== mdxText(v.doc) || (fallback !== undefined && row.fallback !== fallback) || row.fallback.trim() === '') wrong.push(expected)
    }
    if (wrong.length > 0) throw new Error(`docs/configuration.mdx needs these rows (as src/config.ts describes them):\n${wrong.join('\n')}`)
    expect(wrong).toEqual([])
  })

  test("documents every variable the running service looks up, its libraries' pass-through ones included", () => {
    const run = Bun.spawnSync([process.execPath, join(import.meta.dir, 'environment-reads.ts')], { cwd: ROOT })
    if (run.exitCode !== 0) throw new Error(run.stderr.toString())
    const looked = JSON.parse(run.stdout.toString()) as string[]
    expect(looked).toContain('PORT')
    // Read, but not configuration: each with the reason it is left off the page.
    // NODE_*: the runtime's own (NODE_DEBUG's logging of its internals, node:cluster's NODE_UNIQUE_ID, NODE_USE_ENV_PROXY
    // for fetch), looked up by whichever Node modules the configured parts load (PostgreSQL and Redis in CI).
    const runtimeOwn = (name: string) => name.startsWith('NODE_')
    const notSettings = new Map([
      ['OTEL_EXPORTER_OTLP_TRACES_ENDPOINT', 'the exporter reads it, but the URL the service passes (from OTEL_EXPORTER_OTLP_ENDPOINT) wins'],
    ])
    // The exporter's per-signal forms: a page row that names the form documents it.
    const named = (name: string) => page.includes(name)
    const undocumented = looked.filter(
      (name) => !rows.has(name) && !notSettings.has(name) && !runtimeOwn(name) && !(/^OTEL_EXPORTER_OTLP_TRACES_/.test(name) && named(name)),
    )
    expect(undocumented).toEqual([])
  })

  test('documents no variable that src/config.ts does not read', () => {
    const known = new Set(describeVariables().map((v) => v.name))
    expect([...rows.keys()].filter((name) => !known.has(name))).toEqual([])
  })
})

// The authentication page's route table: `| \`METHOD /path\` | needs | budget |`, against the OpenAPI document.

interface Operation {
  'x-required-scope'?: string
  'x-required-plan'?: string
  'x-rate-limit'?: { name: string }[]
  security?: Record<string, string[]>[]
}

function needsCell(operation: Operation): string {
  const scope = operation['x-required-scope']
  if (scope === undefined) {
    // A route that checks its token itself (the agent upgrade) names the scope in `security` alone.
    const security = operation.security ?? []
    const scopes = security.flatMap((s) => s.bearer ?? [])
    if (scopes.length > 0 && !security.some((s) => Object.keys(s).length === 0)) return scopes.map((s) => `\`${s}\``).join(', ')
    return security.some((s) => 'bearer' in s) ? 'optional token' : 'none'
  }
  const what = scope === 'any' ? 'any token' : `\`${scope}\``
  return operation['x-required-plan'] ? `${what} on an ${operation['x-required-plan']} plan` : what
}

function budgetCell(operation: Operation): string {
  const policies = operation['x-rate-limit']
  if (!policies) return '—'
  return policies.map((p) => p.name).find((name) => name !== 'burst') ?? 'burst'
}

describe('the authentication page', () => {
  const t = makeApp()
  afterAll(async () => (await t).close())
  const page = readFileSync(join(ROOT, 'docs', 'authentication.mdx'), 'utf8')
  const rows = new Map([...page.matchAll(/^\| `([A-Z]+ \/\S*)` \| (.*?) \| (.*?) \|$/gm)].map((m) => [m[1]!, `| \`${m[1]}\` | ${m[2]} | ${m[3]} |`] as const))

  test('lists every route of the API reference with the scope and the budget it declares', async () => {
    const document = await (await (await t).request(OPENAPI_JSON_PATH)).json()
    const expected: string[] = []
    for (const [path, operations] of Object.entries<Record<string, Operation>>(document.paths))
      for (const [method, operation] of Object.entries(operations))
        expected.push(`| \`${method.toUpperCase()} ${path}\` | ${needsCell(operation)} | ${budgetCell(operation)} |`)
    // Compared as a whole so a failure shows every row to add or fix.
    expect(expected.map((row) => rows.get(/`(.*?)`/.exec(row)![1]!) ?? `(missing) ${row}`)).toEqual(expected)
    expect([...rows.keys()].filter((route) => !expected.some((row) => row.startsWith(`| \`${route}\``)))).toEqual([])
  })
})
