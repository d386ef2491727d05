import { createApp } from './app.ts'
import { ConfigError, loadConfig } from './config.ts'
import { buildDependencies } from './dependencies.ts'

/** load config -> build dependencies -> createApp -> listen; SIGTERM/SIGINT -> drain and stop. */
async function main() {
  let config
  try {
    config = loadConfig()
  } catch (err) {
    if (err instanceof ConfigError) {
      console.error(err.message)
      process.exit(78) // EX_CONFIG
    }
    throw err
  }

  const deps = await buildDependencies(config)
  const { logger } = deps
  const app = createApp(deps)
  // Bun refuses larger bodies at the socket; the pipeline answers 413 with the problem body first.
  const server = Bun.serve({
    port: config.port,
    hostname: config.host,
    maxRequestBodySize: config.bodyLimitBytes + 64 * 1024,
    fetch: (request, srv) => app.fetch(request) as Promise<Response>,
  })
  app.server = server as never

  logger.info('listening', {
    url: `http://${server.hostname}:${server.port}`,
    storage: deps.db.dialect,
    dataDir: config.dataDir,
    redis: config.redisUrl ? 'configured' : 'not configured (in-process state)',
  })
  for (const part of config.unconfigured) logger.warn('not configured', { part })
  for (const name of config.generatedSecrets)
    logger.warn('secret generated into DATA_DIR/secrets.json; set it in production', { variable: name })

  let stopping = false
  const shutdown = async (signal: string) => {
    if (stopping) return
    stopping = true
    deps.lifecycle.draining = true
    logger.info('shutting down', { signal, timeoutMs: config.shutdownTimeoutMs })
    const drained = server.stop(false).then(() => true)
    const finished = await Promise.race([drained, Bun.sleep(config.shutdownTimeoutMs).then(() => false)])
    if (!finished) {
      logger.warn('in-flight requests still running at the shutdown timeout; closing them')
      await server.stop(true)
    }
    await deps.close()
    logger.info('stopped')
    process.exit(0)
  }
  process.on('SIGTERM', () => void shutdown('SIGTERM'))
  process.on('SIGINT', () => void shutdown('SIGINT'))
}

await main()
