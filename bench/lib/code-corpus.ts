/**
 * Real source code to index in benchmarks: the project's own node_modules (TypeScript, JavaScript,
 * declaration files, Markdown), read once, in a stable order.
 */
import { join } from 'node:path'
import { chunkFile, type RepositoryFile } from '../../plugins/code-search/index.ts'

const root = join(import.meta.dir, '..', '..', 'node_modules')

export interface CodeCorpus {
  /** One entry per repository to import: files from node_modules, repeated under another prefix if needed to reach the size. */
  repositories: { id: string; name: string; files: RepositoryFile[] }[]
  chunks: number
  bytes: number
}

/** Files until their chunks (as the indexer cuts them) reach `targetChunks`. */
export async function loadCodeCorpus(targetChunks: number): Promise<CodeCorpus> {
  const paths = [...new Bun.Glob('**/*.{ts,tsx,js,mjs,cjs,md}').scanSync({ cwd: root, followSymlinks: false })].sort()
  const pool: { file: RepositoryFile; chunks: number }[] = []
  let poolChunks = 0
  let bytes = 0
  for (const path of paths) {
    if (poolChunks >= targetChunks) break
    const handle = Bun.file(join(root, path))
    if (handle.size > 1 << 20) continue
    const content = await handle.text()
    const chunks = chunkFile(path, content).length
    if (chunks === 0) continue
    pool.push({ file: { path, content }, chunks })
    poolChunks += chunks
    bytes += content.length
  }
  // A smaller node_modules is imported again as a second repository, as a fork would be.
  const repositories: CodeCorpus['repositories'] = []
  let total = 0
  for (let copy = 0; total < targetChunks; copy++) {
    const files: RepositoryFile[] = []
    for (const { file, chunks } of pool) {
      if (total >= targetChunks) break
      files.push(file)
      total += chunks
    }
    repositories.push({ id: `bench-repo-${copy}`, name: `bench/node-modules-${copy}`, files })
  }
  return { repositories, chunks: total, bytes }
}
