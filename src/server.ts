import type { Server } from 'bun'
import type { AnyElysia } from 'elysia'
import type { Dependencies } from './dependencies.ts'

export interface RunningServer {
  readonly server: Server<unknown>
  readonly url: string
  /** Stops accepting, lets in-flight requests finish up to SHUTDOWN_TIMEOUT_MS, then closes storage. */
  shutdown(reason: string): Promise<void>
}

export function startServer(app: AnyElysia, deps: Dependencies, overrides: { port?: number; hostname?: string } = {}): RunningServer {
  const { config, logger } = deps
  // Bun refuses larger bodies at the socket; below that the pipeline answers 413 with a problem body.
  app.listen({
    port: overrides.port ?? config.port,
    hostname: overrides.hostname ?? config.host,
    maxRequestBodySize: config.bodyLimitBytes + 64 * 1024,
  })
  const server = app.server!
  const url = `http://${server.hostname}:${server.port}`
  logger.info('listening', {
    url,
    storage: deps.db.dialect,
    dataDir: config.dataDir,
    redis: config.redisUrl ? 'configured' : 'not configured (in-process state)',
  })

  let stopping: Promise<void> | undefined
  const shutdown = (reason: string) =>
    (stopping ??= (async () => {
      deps.lifecycle.draining = true
      logger.info('shutting down', { reason, timeoutMs: config.shutdownTimeoutMs })
      // 1001 tells agent clients to reconnect (to another process) and subscribe to their tasks again.
      deps.agentConnections.closeAll(1001, 'server shutting down; reconnect and subscribe')
      const drained = server.stop(false).then(() => true)
      const finished = await Promise.race([drained, Bun.sleep(config.shutdownTimeoutMs).then(() => false)])
      if (!finished) {
        logger.warn('in-flight requests still running at the shutdown timeout; closing them')
        await server.stop(true)
      }
      await deps.close()
      logger.info('stopped')
    })())

  return { server, url, shutdown }
}
