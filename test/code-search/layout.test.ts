/**
 * The plugin's sub-folders (terms/, embeddings/, vectors/, index/, indexing/, search/) are each entered through their
 * index.ts, and depend on one another in one direction, so each can be read knowing only the faces below it.
 */
import { expect, test } from 'bun:test'
import { join } from 'node:path'
import { cycles, folderOf, pastFaces, subFolders } from '../architecture/sub-folders.ts'

const PLUGIN = join(import.meta.dir, '../../plugins/code-search')

test('a sub-folder is imported from outside it only through its index.ts', () => {
  expect(pastFaces(PLUGIN)).toEqual([])
})

test('the sub-folders import one another without a cycle', () => {
  expect(cycles(PLUGIN, folderOf)).toEqual([])
  // A walk that found no folder would pass: the six must be there.
  expect(subFolders(PLUGIN)).toEqual(['embeddings', 'index', 'indexing', 'search', 'terms', 'vectors'])
})
