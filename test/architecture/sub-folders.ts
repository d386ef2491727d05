/**
 * The imports between a plugin's sub-folders, read from its source: which go past a sub-folder's index.ts face,
 * and which close a cycle between the nodes a plugin's layout is read as.
 */
import { readFileSync, readdirSync, statSync } from 'node:fs'
import { dirname, join, normalize, relative } from 'node:path'

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name)
    return statSync(path).isDirectory() ? sourceFiles(path) : name.endsWith('.ts') ? [path] : []
  })
}

/** The sub-folder a plugin-relative path is in, or '' at the top. */
export const folderOf = (path: string) => (path.includes('/') ? path.slice(0, path.indexOf('/')) : '')

// Statement imports and re-exports, type-only ones included (a folder cycle through types is a cycle to a reader),
// then `import('…')` with a string literal.
const STATIC = /(?:^|[\n;])[ \t]*(?:import|export)\s+(?:[^'";]*?\s+from\s*)?['"]([^'"\n]+)['"]/g
const CALLED = /\bimport\(\s*['"]([^'"\n]+)['"]\s*\)/g

/** Every import from one file of the plugin to another, as paths relative to the plugin. */
export function pluginImports(plugin: string): { from: string; to: string }[] {
  return sourceFiles(plugin).flatMap((file) => {
    const source = readFileSync(file, 'utf8')
    const specifiers = [STATIC, CALLED].flatMap((pattern) => [...source.matchAll(pattern)].map((m) => m[1]!))
    return specifiers
      .filter((s) => s.startsWith('./') || s.startsWith('../'))
      .map((s) => ({ from: relative(plugin, file), to: relative(plugin, normalize(join(dirname(file), s))) }))
      .filter(({ to }) => !to.startsWith('..'))
  })
}

/** Imports into a sub-folder from outside it that do not go through its index.ts. */
export function pastFaces(plugin: string): string[] {
  return pluginImports(plugin)
    .filter(({ from, to }) => {
      const folder = folderOf(to)
      return folder !== '' && folder !== folderOf(from) && to !== `${folder}/index.ts`
    })
    .map(({ from, to }) => `${from} -> ${to}`)
}

/** Cycles between the nodes `nodeOf` makes of paths (a node of '' is left out), each as `a -> b -> a`. */
export function cycles(plugin: string, nodeOf: (path: string) => string): string[] {
  const edges = new Map<string, Set<string>>()
  for (const { from, to } of pluginImports(plugin)) {
    const [a, b] = [nodeOf(from), nodeOf(to)]
    if (a && b && a !== b) edges.set(a, (edges.get(a) ?? new Set()).add(b))
  }
  const found: string[] = []
  const visit = (node: string, path: string[]) => {
    for (const next of edges.get(node) ?? []) {
      if (path.includes(next)) found.push([...path.slice(path.indexOf(next)), next].join(' -> '))
      else visit(next, [...path, next])
    }
  }
  for (const node of edges.keys()) visit(node, [node])
  return found
}

/** The plugin's sub-folders that take part in imports. */
export function subFolders(plugin: string): string[] {
  const folders = new Set(pluginImports(plugin).flatMap(({ from, to }) => [folderOf(from), folderOf(to)]))
  folders.delete('')
  return [...folders].sort()
}
