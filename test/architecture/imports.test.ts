/**
 * The import boundaries, checked on every import of src/, plugins/, bench/ and test/:
 * - the core (src/ outside src/main/) imports no plugin, and only the composition root and bench/ or test/ import
 *   src/main/;
 * - a plugin is entered through its face, plugins/<name>/index.ts: no other of its files is imported from outside
 *   it, except by the unit tests in its own test folder, test/<name>/.
 */
import { describe, expect, test } from 'bun:test'
import { readFileSync, readdirSync, statSync } from 'node:fs'
import { dirname, join, normalize, relative } from 'node:path'

const ROOT = join(import.meta.dir, '../..')
const WALKED = ['src', 'plugins', 'bench', 'test']

/** Imports that break a rule today and are known to; each must still exist, so a fixed one leaves this list. */
interface Import {
  from: string
  to: string
}

/** The plugin a repository path belongs to, if any. */
function pluginOf(path: string): string | undefined {
  return /^plugins\/([^/]+)\//.exec(path)?.[1]
}

/** Why `from` may not import `to`, or undefined when it may. Paths are relative to the repository root. */
function violation(from: string, to: string): string | undefined {
  const target = pluginOf(to)
  const source = pluginOf(from)
  const inCore = from.startsWith('src/') && !from.startsWith('src/main/')
  if (inCore && target) return 'the core imports a plugin'
  if (to.startsWith('src/main/') && (inCore || source)) return 'only the composition root, bench/ and test/ import src/main/'
  if (!target || target === source) return undefined
  if (to === `plugins/${target}/index.ts`) return undefined
  if (from.startsWith(`test/${target}/`)) return undefined
  return `an internal file of plugin ${target} is imported from outside it (import its index.ts)`
}

// Statement imports and re-exports (`import x from`, `import type {…} from`, `export * from`, `import './x'`), then
// `import('…')` and `require('…')` with a string literal. Import clauses hold no quotes or semicolons.
const STATIC = /(?:^|[\n;])[ \t]*(?:import|export)\s+(?:[^'";]*?\s+from\s*)?['"]([^'"\n]+)['"]/g
const CALLED = /\b(?:import|require)\(\s*['"]([^'"\n]+)['"]\s*\)/g

/** The relative specifiers a source text imports. */
function specifiers(source: string): string[] {
  const found: string[] = []
  for (const pattern of [STATIC, CALLED]) for (const m of source.matchAll(pattern)) found.push(m[1]!)
  return found.filter((s) => s.startsWith('./') || s.startsWith('../'))
}

function sourceFiles(dir: string): string[] {
  const files: string[] = []
  for (const name of readdirSync(join(ROOT, dir))) {
    if (name === 'node_modules') continue
    const path = `${dir}/${name}`
    if (statSync(join(ROOT, path)).isDirectory()) files.push(...sourceFiles(path))
    else if (/\.(ts|tsx|mts)$/.test(name) && !name.endsWith('.d.ts')) files.push(path)
  }
  return files
}

const scanners = { ts: new Bun.Transpiler({ loader: 'ts' }), tsx: new Bun.Transpiler({ loader: 'tsx' }) }

/** Every relative import of the walked folders, and the runtime imports Bun's own scanner finds that the parse missed. */
function allImports(): { imports: Import[]; missed: string[] } {
  const imports: Import[] = []
  const missed: string[] = []
  for (const from of WALKED.flatMap(sourceFiles)) {
    const source = readFileSync(join(ROOT, from), 'utf8')
    const found = specifiers(source)
    for (const spec of found) {
      const to = relative(ROOT, normalize(join(ROOT, dirname(from), spec)))
        .split('\\')
        .join('/')
      imports.push({ from, to })
    }
    // Bun's scanner sees only the imports that remain at run time, so it checks the parse rather than replacing it.
    const scanner = from.endsWith('.tsx') ? scanners.tsx : scanners.ts
    for (const { path } of scanner.scanImports(source))
      if ((path.startsWith('./') || path.startsWith('../')) && !found.includes(path)) missed.push(`${from} -> ${path}`)
  }
  return { imports, missed }
}

describe('the import rule', () => {
  test('refuses what crosses a boundary', () => {
    expect(violation('src/http.ts', 'plugins/chat/index.ts')).toBeDefined()
    expect(violation('src/llm/provider.ts', 'plugins/chat/service.ts')).toBeDefined()
    expect(violation('plugins/agents/commands.ts', 'plugins/chat/service.ts')).toBeDefined()
    expect(violation('src/main/app.ts', 'plugins/docs/site-plugin.ts')).toBeDefined()
    expect(violation('bench/chat.bench.ts', 'plugins/chat/provider.ts')).toBeDefined()
    expect(violation('test/helpers.ts', 'plugins/chat/store.ts')).toBeDefined()
    expect(violation('test/agents/tasks.test.ts', 'plugins/chat/store.ts')).toBeDefined()
    expect(violation('plugins/chat/index.ts', 'src/main/dependencies.ts')).toBeDefined()
    expect(violation('src/sse.ts', 'src/main/app.ts')).toBeDefined()
  })

  test('allows faces, the core, a plugin’s own files and its own unit tests', () => {
    expect(violation('src/main/app.ts', 'plugins/docs/index.ts')).toBeUndefined()
    expect(violation('plugins/agents/commands.ts', 'plugins/chat/index.ts')).toBeUndefined()
    expect(violation('plugins/chat/service.ts', 'src/llm/provider.ts')).toBeUndefined()
    expect(violation('plugins/chat/service.ts', 'plugins/chat/store.ts')).toBeUndefined()
    expect(violation('test/chat/commands.test.ts', 'plugins/chat/commands.ts')).toBeUndefined()
    expect(violation('test/helpers.ts', 'src/main/app.ts')).toBeUndefined()
  })

  test('finds static, type-only, re-exported and dynamic imports', () => {
    const source = [
      `import { a } from './a.ts'`,
      `import type {`,
      `  B,`,
      `  C as D,`,
      `} from '../b.ts'`,
      `export * from "./c.ts"`,
      `import './d.ts'`,
      `const e = await import('./e.ts')`,
      `import { f } from 'elysia'`,
      `// import { g } from './g.ts'`,
    ].join('\n')
    expect(specifiers(source)).toEqual(['./a.ts', '../b.ts', './c.ts', './d.ts', './e.ts'])
  })
})

test('every import of src/, plugins/, bench/ and test/ keeps to the boundaries', () => {
  const { imports, missed } = allImports()
  expect(missed).toEqual([])
  const broken = imports.map(({ from, to }) => ({ edge: `${from} -> ${to}`, why: violation(from, to) })).filter((v) => v.why !== undefined)
  const isFace = (to: string) => to === `plugins/${pluginOf(to)}/index.ts`
  // Imports into a plugin from outside it, its own unit tests left out.
  const entering = imports.filter(({ from, to }) => pluginOf(to) && pluginOf(to) !== pluginOf(from) && !from.startsWith(`test/${pluginOf(to)}/`))
  const betweenPlugins = entering.filter(({ from }) => pluginOf(from))
  console.log(
    `${betweenPlugins.length} imports between plugins, ${betweenPlugins.filter(({ to }) => isFace(to)).length} through a face; ` +
      `${entering.length} imports into a plugin from anywhere outside it, ${entering.filter(({ to }) => isFace(to)).length} through a face; ` +
      `${imports.length} relative imports in all`,
  )
  expect(broken.map((v) => `${v.edge}: ${v.why}`)).toEqual([])
})
