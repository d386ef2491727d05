/**
 * An import accepted before SIGTERM is let finish within SHUTDOWN_TIMEOUT_MS, as chat answers and agent tasks are,
 * rather than stopped as interrupted the moment the process closes.
 */
import { afterAll, describe, expect, test } from 'bun:test'
import { createApp } from '../../src/main/app.ts'
import { loadConfig } from '../../src/main/config.ts'
import { buildDependencies } from '../../src/main/dependencies.ts'
import { startServer } from '../../src/main/server.ts'
import { memoryLogger } from '../../src/log.ts'
import { startGitServer } from '../fakes/git-server.ts'
import { tempDir } from '../helpers.ts'

const ADMIN = { email: 'owner@import-shutdown.example', password: 'import-shutdown-password-1234' }

describe('shutdown with an import running', () => {
  const dir = tempDir()
  const git = startGitServer()
  afterAll(async () => {
    await git.close()
    dir.remove()
  })

  test('the import finishes before the process stops, and is recorded as succeeded', async () => {
    const files: Record<string, string> = {}
    for (let i = 0; i < 40; i++) files[`src/module${i}.ts`] = `export const value${i} = ${i} // ${'x'.repeat(400)}\n`
    git.createRepository('acme/slow', files)
    const env = {
      DATA_DIR: dir.path,
      ADMIN_EMAIL: ADMIN.email,
      ADMIN_PASSWORD: ADMIN.password,
      IMPORT_CODEHOST_URL: git.url,
      IMPORT_ALLOW_HOSTS: `127.0.0.1:${git.port}`,
      SHUTDOWN_TIMEOUT_MS: '30000',
    }
    const deps = await buildDependencies(loadConfig(env), { logger: memoryLogger('error') })
    const running = startServer(createApp(deps), deps, { port: 0, hostname: '127.0.0.1' })
    const login = await fetch(`${running.url}/auth/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(ADMIN) })
    const { accessToken, user } = (await login.json()) as { accessToken: string; user: { organizationId: string } }
    // The pack trickles in, so the import is still cloning when the signal comes.
    git.behaviour = { kind: 'trickle', chunkBytes: 512, delayMs: 20 }
    const started = await fetch(`${running.url}/api/codehost/import`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${accessToken}` },
      body: JSON.stringify({ repository: 'acme/slow' }),
    })
    expect(started.status).toBe(202)
    const { importId } = (await started.json()) as { importId: string }
    for (let i = 0; i < 500 && (await deps.imports.get(user.organizationId, importId))?.status !== 'cloning'; i++) await Bun.sleep(10)
    expect((await deps.imports.get(user.organizationId, importId))?.status).toBe('cloning')

    await running.shutdown('test')
    git.behaviour = { kind: 'normal' }

    // Read back by the next process on the same data.
    const next = await buildDependencies(loadConfig(env), { logger: memoryLogger('error') })
    try {
      expect(await next.imports.get(user.organizationId, importId)).toMatchObject({ status: 'succeeded' })
    } finally {
      await next.close()
    }
  }, 120_000)
})
