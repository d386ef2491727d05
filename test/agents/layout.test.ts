/**
 * The plugin's sub-folders (tasks/, workspaces/, develop/, sites/, connections/) are each entered through their
 * index.ts, and depend on one another in one direction, so each can be read knowing only the faces below it. The
 * files at the top (the plugin's face, the command table, the schemas and settings) count as one node each: a
 * sub-folder importing the command table, which imports that sub-folder, is a cycle too.
 */
import { expect, test } from 'bun:test'
import { readFileSync, readdirSync, statSync } from 'node:fs'
import { dirname, join, normalize, relative } from 'node:path'

const PLUGIN = join(import.meta.dir, '../../plugins/agents')

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name)
    return statSync(path).isDirectory() ? sourceFiles(path) : name.endsWith('.ts') ? [path] : []
  })
}

/** The sub-folder a plugin-relative path is in, or '' at the top. */
const folderOf = (path: string) => (path.includes('/') ? path.slice(0, path.indexOf('/')) : '')

/** A node of the dependency graph: a sub-folder, or a file at the top. */
const nodeOf = (path: string) => folderOf(path) || path

// Statement imports and re-exports, type-only ones included (a folder cycle through types is a cycle to a reader),
// then `import('…')` with a string literal.
const STATIC = /(?:^|[\n;])[ \t]*(?:import|export)\s+(?:[^'";]*?\s+from\s*)?['"]([^'"\n]+)['"]/g
const CALLED = /\bimport\(\s*['"]([^'"\n]+)['"]\s*\)/g

/** Every import from one file of the plugin to another, as paths relative to the plugin. */
function pluginImports(): { from: string; to: string }[] {
  return sourceFiles(PLUGIN).flatMap((file) => {
    const source = readFileSync(file, 'utf8')
    const specifiers = [STATIC, CALLED].flatMap((pattern) => [...source.matchAll(pattern)].map((m) => m[1]!))
    return specifiers
      .filter((s) => s.startsWith('./') || s.startsWith('../'))
      .map((s) => ({ from: relative(PLUGIN, file), to: relative(PLUGIN, normalize(join(dirname(file), s))) }))
      .filter(({ to }) => !to.startsWith('..'))
  })
}

test('a sub-folder is imported from outside it only through its index.ts', () => {
  const past = pluginImports().filter(({ from, to }) => {
    const folder = folderOf(to)
    return folder !== '' && folder !== folderOf(from) && to !== `${folder}/index.ts`
  })
  expect(past.map(({ from, to }) => `${from} -> ${to}`)).toEqual([])
})

test('the sub-folders and the files at the top import one another without a cycle', () => {
  const edges = new Map<string, Set<string>>()
  for (const { from, to } of pluginImports()) {
    const [a, b] = [nodeOf(from), nodeOf(to)]
    if (a !== b) edges.set(a, (edges.get(a) ?? new Set()).add(b))
  }
  const cycles: string[] = []
  const visit = (node: string, path: string[]) => {
    for (const next of edges.get(node) ?? []) {
      if (path.includes(next)) cycles.push([...path.slice(path.indexOf(next)), next].join(' -> '))
      else visit(next, [...path, next])
    }
  }
  for (const node of edges.keys()) visit(node, [node])
  expect(cycles).toEqual([])
  // A walk that found no folder would pass: the five must be there.
  const folders = new Set(pluginImports().flatMap(({ from, to }) => [folderOf(from), folderOf(to)]))
  folders.delete('')
  expect([...folders].sort()).toEqual(['connections', 'develop', 'sites', 'tasks', 'workspaces'])
})
