/**
 * Run as its own process by pages.test.ts: builds the service with tracing on, answers one request, stops, and
 * prints (JSON) the name of every environment variable anything in the process looked up, its libraries included.
 */
const read = new Set<string>()
const note = (key: string | symbol) => {
  if (typeof key === 'string') read.add(key)
}
process.env = new Proxy(process.env, {
  get: (target, key, receiver) => (note(key), Reflect.get(target, key, receiver)),
  has: (target, key) => (note(key), Reflect.has(target, key)),
  getOwnPropertyDescriptor: (target, key) => (note(key), Reflect.getOwnPropertyDescriptor(target, key)),
})

export {}

const { mkdtempSync, rmSync } = await import('node:fs')
const { tmpdir } = await import('node:os')
const { join } = await import('node:path')
const { loadConfig } = await import('../../src/main/config.ts')
const { buildDependencies } = await import('../../src/main/dependencies.ts')
const { createApp } = await import('../../src/main/app.ts')
const { memoryLogger } = await import('../../src/log.ts')

const dataDir = mkdtempSync(join(tmpdir(), 'env-reads-'))
// Settings read as `npm start` reads them, from the process environment, with every optional part that loads a library on.
Object.assign(process.env, { DATA_DIR: dataDir, OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9' })
const config = loadConfig()
const deps = await buildDependencies(config, { logger: memoryLogger('error'), sqliteFile: ':memory:' })
await createApp(deps).handle(new Request('http://localhost/health'))
await deps.close()
rmSync(dataDir, { recursive: true, force: true })
console.log(JSON.stringify([...read].sort()))
process.exit(0)
