/**
 * The plugin's sub-folders (tasks/, workspaces/, develop/, sites/, connections/) are each entered through their
 * index.ts, and depend on one another in one direction, so each can be read knowing only the faces below it. The
 * files at the top (the plugin's face, the command table, the schemas and settings) count as one node each: a
 * sub-folder importing the command table, which imports that sub-folder, is a cycle too.
 */
import { expect, test } from 'bun:test'
import { join } from 'node:path'
import { cycles, folderOf, pastFaces, subFolders } from '../architecture/sub-folders.ts'

const PLUGIN = join(import.meta.dir, '../../plugins/agents')

test('a sub-folder is imported from outside it only through its index.ts', () => {
  expect(pastFaces(PLUGIN)).toEqual([])
})

test('the sub-folders and the files at the top import one another without a cycle', () => {
  expect(cycles(PLUGIN, (path) => folderOf(path) || path)).toEqual([])
  // A walk that found no folder would pass: the five must be there.
  expect(subFolders(PLUGIN)).toEqual(['connections', 'develop', 'sites', 'tasks', 'workspaces'])
})
