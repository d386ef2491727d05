/**
 * Run as its own process by start-up.test.ts: builds the service as `bun src/main/index.ts` does, answers one
 * GET /health, optionally runs the warm-up or signs in, and prints the packages it loaded (from Bun's module registry)
 * as JSON, each with the files of it that were loaded.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createApp } from '../../src/main/app.ts'
import { loadConfig } from '../../src/main/config.ts'
import { buildDependencies } from '../../src/main/dependencies.ts'
import { memoryLogger } from '../../src/log.ts'

const dataDir = mkdtempSync(join(tmpdir(), 'loaded-packages-'))
const env = JSON.parse(process.argv[2] ?? '{}') as Record<string, string>
const deps = await buildDependencies(loadConfig({ DATA_DIR: dataDir, ...env }), { logger: memoryLogger('error') })
const app = createApp(deps)
const health = await app.handle(new Request('http://localhost/health'))
if (health.status !== 200) throw new Error(`GET /health answered ${health.status}`)
if (process.argv[3] === 'warm-up') await deps.warmUp()
// The first sign-in and the first authenticated request of the process: they load what tokens need.
if (process.argv[3] === 'sign-in') {
  const json = { 'content-type': 'application/json' }
  const body = JSON.stringify({ email: env.ADMIN_EMAIL, password: env.ADMIN_PASSWORD })
  const login = await app.handle(new Request('http://localhost/auth/login', { method: 'POST', headers: json, body }))
  if (login.status !== 200) throw new Error(`POST /auth/login answered ${login.status}: ${await login.text()}`)
  const { accessToken } = (await login.json()) as { accessToken: string }
  const me = await app.handle(new Request('http://localhost/auth/me', { headers: { authorization: `Bearer ${accessToken}` } }))
  if (me.status !== 200) throw new Error(`GET /auth/me answered ${me.status}: ${await me.text()}`)
}
await deps.close()
rmSync(dataDir, { recursive: true, force: true })

// Each package loaded, with the files of it loaded (their paths inside the package).
const packages: Record<string, string[]> = {}
for (const path of Object.keys(require.cache)) {
  const found = /\/node_modules\/((?:@[^/]+\/)?[^/]+)\/(.*)$/.exec(path)
  if (found) (packages[found[1]!] ??= []).push(found[2]!)
}
console.log(JSON.stringify(packages))
// Timers of the services built above may still be pending; the answer is out.
process.exit(0)
