import { describe, expect, test } from 'bun:test'
import { join } from 'node:path'

// In a process of its own: this one may have loaded isomorphic-git already.
const script = (preloadGitAfterMs: number) => `
  import { createImportService } from './plugins/imports/import-service.ts'
  import { isomorphicGit } from './plugins/imports/git.ts'
  import { createLogger } from './src/log.ts'
  import { openDatabase } from './src/storage/database.ts'
  const db = await openDatabase({ sqliteFile: ':memory:' })
  const imports = createImportService({
    db, codeIndex: {} as never, dataDir: '/nonexistent', logger: createLogger({ level: 'error' }),
    settings: { allowHosts: [] } as never, preloadGitAfterMs: ${preloadGitAfterMs},
  })
  const atCreation = isomorphicGit.loaded !== undefined
  const started = performance.now()
  while (!isomorphicGit.loaded && performance.now() - started < 10_000) await Bun.sleep(20)
  console.log(JSON.stringify({ atCreation, later: isomorphicGit.loaded !== undefined, afterMs: performance.now() - started }))
  await imports.close()
  await db.close()
`

async function run(preloadGitAfterMs: number) {
  const child = Bun.spawn([process.execPath, '-e', script(preloadGitAfterMs)], { cwd: join(import.meta.dir, '../..'), stdout: 'pipe', stderr: 'pipe' })
  const [out, err, code] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited])
  expect(err).toBe('')
  expect(code).toBe(0)
  return JSON.parse(out) as { atCreation: boolean; later: boolean; afterMs: number }
}

describe('isomorphic-git preloading', () => {
  test('the import service loads isomorphic-git after its delay, before any import asks for it', async () => {
    const seen = await run(300)
    expect(seen.atCreation).toBe(false)
    expect(seen.later).toBe(true)
    expect(seen.afterMs).toBeGreaterThanOrEqual(250)
  })
})
