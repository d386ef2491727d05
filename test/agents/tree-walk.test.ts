/** The tree walk never leaves the tree, even when a directory is swapped for a link while it walks. */
import { afterAll, expect, test } from 'bun:test'
import { mkdirSync, mkdtempSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { walkTree } from '../../plugins/agents/workspaces/tree-walk.ts'

const root = mkdtempSync(join(tmpdir(), 'tree-walk-'))
afterAll(() => rmSync(root, { recursive: true, force: true }))

function layout(name: string) {
  const tree = join(root, name, 'tree')
  const outside = join(root, name, 'outside')
  mkdirSync(join(tree, 'dir'), { recursive: true })
  mkdirSync(outside)
  writeFileSync(join(tree, 'dir', 'inside.txt'), 'in')
  writeFileSync(join(outside, 'secret-name.txt'), 'out')
  return { tree, outside }
}

test('a directory swapped for a link after it was seen is not gone into', async () => {
  const { tree, outside } = layout('swap-before-open')
  const seen: string[] = []
  await walkTree(tree, (entry) => {
    seen.push(entry.path)
    if (entry.path === 'dir') {
      renameSync(join(tree, 'dir'), join(tree, 'moved'))
      symlinkSync(outside, join(tree, 'dir'))
    }
    return 'descend'
  })
  expect(seen).toEqual(['dir'])
})

test('a directory swapped while it is being read is read as it was opened', async () => {
  const { tree, outside } = layout('swap-while-reading')
  writeFileSync(join(tree, 'dir', 'second.txt'), 'in')
  const seen: string[] = []
  await walkTree(tree, (entry) => {
    seen.push(entry.path)
    // Once inside, the directory's path is made a link elsewhere: the walk goes on through the directory it opened.
    if (entry.path === 'dir/inside.txt') {
      renameSync(join(tree, 'dir'), join(tree, 'moved'))
      symlinkSync(outside, join(tree, 'dir'))
    }
    return 'descend'
  })
  expect(seen).toEqual(['dir', 'dir/inside.txt', 'dir/second.txt'])
  expect(seen.join()).not.toContain('secret-name')
})

test('a start reached through a link is refused when it must lie inside the tree', async () => {
  const { tree, outside } = layout('start-through-link')
  symlinkSync(outside, join(tree, 'link'))
  mkdirSync(join(outside, 'sub'))
  await expect(walkTree(join(tree, 'link', 'sub'), () => 'descend', tree)).rejects.toThrow('leads outside')
})
