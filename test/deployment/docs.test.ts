/** docs/deployment.mdx shows each deployment file as it is, and the README points to the page. */
import { expect, test } from 'bun:test'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { fencedBlocks } from '../docs/exchanges.ts'
import { DEPLOYMENT_FILES, readDeploymentFile, ROOT } from './files.ts'

const page = readFileSync(join(ROOT, 'docs', 'deployment.mdx'), 'utf8')
const lines = page.split('\n')

/** Code blocks titled with a file's path (```nginx docs/deployment/nginx.conf), by that path. */
const shown = new Map<string, string[]>()
for (const block of fencedBlocks(page)) {
  const title = /^\s*`{3,}\S*\s+(docs\/deployment\/\S+)\s*$/.exec(lines[block.line - 1]!)?.[1]
  if (title) shown.set(title, [...(shown.get(title) ?? []), block.text])
}

test('the page shows every deployment file exactly once', () => {
  expect([...shown.keys()].sort()).toEqual(DEPLOYMENT_FILES.map((name) => `docs/deployment/${name}`).sort())
  for (const blocks of shown.values()) expect(blocks.length).toBe(1)
})

for (const name of DEPLOYMENT_FILES)
  test(`the block for ${name} is the file as it is`, () => {
    // A block holds the lines between its fences: the file without its final newline.
    expect(shown.get(`docs/deployment/${name}`)?.[0]).toBe(readDeploymentFile(name).replace(/\n$/, ''))
  })

test('the README points to the deployment page and its files, after its first two commands', () => {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8')
  const commands = [...readme.matchAll(/^npm install && npm (start|test)\b/gm)]
  expect(commands.map((m) => m[1])).toEqual(['start', 'test'])
  const pointer = readme.indexOf('docs/deployment.mdx')
  expect(pointer).toBeGreaterThan(commands[1]!.index!)
  expect(readme).toContain('docs/deployment/')
})
