import { afterAll, describe, expect, test } from 'bun:test'
import { createApp } from '../src/main/app.ts'
import { loadConfig } from '../src/main/config.ts'
import { buildDependencies } from '../src/main/dependencies.ts'
import { memoryLogger } from '../src/log.ts'
import { startServer } from '../src/main/server.ts'
import { tempDir } from './helpers.ts'

describe('server lifecycle', () => {
  const dir = tempDir()
  afterAll(() => dir.remove())

  test('SIGTERM-style shutdown lets an in-flight request finish, then refuses new ones and closes storage', async () => {
    const config = loadConfig({ DATA_DIR: dir.path, SHUTDOWN_TIMEOUT_MS: '5000' })
    const logger = memoryLogger()
    const deps = await buildDependencies(config, { logger })
    let release!: () => void
    const gate = new Promise<void>((r) => (release = r))
    const app = createApp(deps).get('/slow', async () => {
      await gate
      return { done: true }
    })
    const running = startServer(app, deps, { port: 0, hostname: '127.0.0.1' })
    const port = running.server.port

    const inFlight = fetch(`http://127.0.0.1:${port}/slow`)
    await Bun.sleep(50)
    const stopped = running.shutdown('test')
    await Bun.sleep(50)
    expect(deps.lifecycle.draining).toBe(true)
    await expect(fetch(`http://127.0.0.1:${port}/health`)).rejects.toThrow()

    release()
    const res = await inFlight
    expect(res.status).toBe(200)
    expect(await res.json()).toEqual({ done: true })
    await stopped
    await expect(deps.db.ping()).rejects.toThrow()
    expect(logger.lines.map((l) => l.msg)).toContain('stopped')
  })

  test('a request still running at the timeout is cut off and shutdown completes', async () => {
    const config = loadConfig({ DATA_DIR: dir.path, SHUTDOWN_TIMEOUT_MS: '100' })
    const deps = await buildDependencies(config, { logger: memoryLogger() })
    const app = createApp(deps).get('/forever', () => new Promise(() => {}))
    const running = startServer(app, deps, { port: 0, hostname: '127.0.0.1' })
    const hanging = fetch(`http://127.0.0.1:${running.server.port}/forever`).catch((e) => e)
    await Bun.sleep(50)
    const started = Date.now()
    await running.shutdown('test')
    expect(Date.now() - started).toBeLessThan(4000)
    expect(await hanging).toBeInstanceOf(Error)
  })
})
