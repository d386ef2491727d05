import type { Server } from 'bun'
import type { AnyElysia } from 'elysia'
import type { Dependencies } from './dependencies.ts'
import { startMetricsListener } from '../../plugins/metrics/index.ts'

export interface RunningServer {
  readonly server: Server<unknown>
  readonly url: string
  /** The METRICS_PORT listener's /metrics URL, when it runs. */
  readonly metricsUrl: string | undefined
  /** Stops accepting, lets in-flight requests finish up to SHUTDOWN_TIMEOUT_MS, then closes storage. */
  shutdown(reason: string): Promise<void>
}

export function startServer(app: AnyElysia, deps: Dependencies, overrides: { port?: number; hostname?: string } = {}): RunningServer {
  const { config, logger } = deps
  // Bun's own refusal of a large body is an empty 413 before the app sees it; the request pipeline counts the
  // body itself (BODY_LIMIT_BYTES) after the route's guards, so every refusal is a problem body and an
  // anonymous caller of a guarded route gets its 401 first.
  app.listen({
    port: overrides.port ?? config.port,
    hostname: overrides.hostname ?? config.host,
    maxRequestBodySize: Number.MAX_SAFE_INTEGER,
  })
  const server = app.server!
  const url = `http://${server.hostname}:${server.port}`
  const metricsListener =
    deps.metrics && config.metrics.port !== undefined
      ? startMetricsListener({ metrics: deps.metrics, token: config.metrics.token, port: config.metrics.port, logger })
      : undefined
  logger.info('listening', {
    url,
    storage: deps.db.dialect,
    dataDir: config.dataDir,
    redis: config.redisUrl ? 'configured' : 'not configured (in-process state)',
  })

  let stopping: Promise<void> | undefined
  const shutdown = (reason: string) =>
    (stopping ??= (async () => {
      const deadline = Date.now() + config.shutdownTimeoutMs
      const untilDeadline = <T>(work: Promise<T>) => Promise.race([work.then(() => true), Bun.sleep(Math.max(0, deadline - Date.now())).then(() => false)])
      // Readiness fails, and chat streams that another process can serve end with a reconnect hint.
      deps.lifecycle.startDraining()
      logger.info('shutting down', { reason, timeoutMs: config.shutdownTimeoutMs })
      deps.agentConnections.closeForShutdown()
      if (!(await untilDeadline(server.stop(false)))) {
        logger.warn('in-flight requests still running at the shutdown timeout; closing them')
        await server.stop(true)
      }
      // Elysia runs afterResponse hooks (the access log line, metrics, the request's span) in a setImmediate; the
      // rest of shutdown can finish in microtasks alone, so a request answered just before the signal would lose them.
      await new Promise((resolve) => setImmediate(resolve))
      // Answers and tasks with no request left (their clients follow them elsewhere, or left) get the
      // rest of the time to finish; whatever still runs then is stopped and recorded as interrupted.
      if (!(await untilDeadline(Promise.all([deps.chat.idle(), deps.agents.idle()]))))
        logger.warn('chat answers or agent tasks still running at the shutdown timeout; interrupting them')
      await metricsListener?.stop()
      await deps.close()
      logger.info('stopped')
    })())

  return { server, url, metricsUrl: metricsListener?.url, shutdown }
}
