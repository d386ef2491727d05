import type { Server } from 'bun'
import type { AnyElysia } from 'elysia'
import type { Dependencies } from './dependencies.ts'
import { startMetricsListener } from '../../plugins/metrics/index.ts'

// How long shutdown waits for a pause in arriving requests before it closes the listener regardless.
const LISTENER_QUIET_WAIT_MS = 200

/** Another process listens on the port (and PORT_SHARED does not ask to share it): a configuration error. */
export class PortInUseError extends Error {
  constructor(hostname: string, port: number) {
    super(
      `${hostname}:${port} is already in use by another process; choose another PORT, stop that process, or set PORT_SHARED=true to share the port on purpose`,
    )
  }
}

export interface RunningServer {
  readonly server: Server<unknown>
  readonly url: string
  /** The METRICS_PORT listener's /metrics URL, when it runs. */
  readonly metricsUrl: string | undefined
  /**
   * Drains (readiness fails, responses carry Connection: close), keeps accepting for SHUTDOWN_DRAIN_DELAY_MS,
   * stops accepting, lets in-flight requests finish up to SHUTDOWN_TIMEOUT_MS, then closes storage.
   */
  shutdown(reason: string): Promise<void>
}

export function startServer(app: AnyElysia, deps: Dependencies, overrides: { port?: number; hostname?: string } = {}): RunningServer {
  const { config, logger } = deps
  // Bun's own refusal of a large body is an empty 413 before the app sees it; the request pipeline counts the
  // body itself (BODY_LIMIT_BYTES) after the route's guards, so every refusal is a problem body and an
  // anonymous caller of a guarded route gets its 401 first.
  const port = overrides.port ?? config.port
  const hostname = overrides.hostname ?? config.host
  try {
    app.listen({
      port,
      hostname,
      maxRequestBodySize: Number.MAX_SAFE_INTEGER,
      // Elysia shares ports by default; a second process on a taken port would then answer half the connections.
      reusePort: config.portShared,
    })
  } catch (err) {
    if ((err as { code?: string }).code === 'EADDRINUSE') throw new PortInUseError(hostname, port)
    throw err
  }
  const server = app.server!
  const url = `http://${server.hostname}:${server.port}`
  // Other processes may send this one the searches of the code indexes it owns from now on.
  deps.codeIndex.forwarding?.listening(server.hostname ?? hostname, server.port!)
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
      logger.info('shutting down', { reason, timeoutMs: config.shutdownTimeoutMs, drainDelayMs: config.shutdownDrainDelayMs })
      // Stopping closes idle keep-alive connections at once, and a proxy may be writing a request to one at that
      // moment (a POST it must not resend). So first readiness fails and every response closes its connection,
      // while requests are still served as usual, until the proxy has ended its idle connections itself (its
      // upstream keepalive_timeout).
      if (config.shutdownDrainDelayMs > 0) {
        deps.lifecycle.draining = true
        await Bun.sleep(config.shutdownDrainDelayMs)
      }
      // Then new connections are refused, which the proxy retries elsewhere whatever the method. Closing the
      // listener resets every connection still waiting to be accepted, after the proxy has written its request
      // (a POST it will not resend), and a timer can run before the event loop has polled its sockets (after a
      // busy stretch, or when the process was descheduled). So the listener closes only once a poll of the
      // sockets has brought no new request (waiting at most LISTENER_QUIET_WAIT_MS under unbroken traffic), and
      // before any other work.
      for (const until = Date.now() + LISTENER_QUIET_WAIT_MS; ; ) {
        const arrived = deps.lifecycle.requestsArrived
        await Bun.sleep(1)
        if (deps.lifecycle.requestsArrived === arrived || Date.now() >= until) break
      }
      const stopped = server.stop(false)
      // Then chat streams that another process can serve end with a reconnect hint, and agent clients are told to
      // reconnect.
      deps.lifecycle.startDraining()
      deps.agentConnections.closeForShutdown()
      const deadline = Date.now() + config.shutdownTimeoutMs
      const untilDeadline = <T>(work: Promise<T>) => Promise.race([work.then(() => true), Bun.sleep(Math.max(0, deadline - Date.now())).then(() => false)])
      if (!(await untilDeadline(stopped))) {
        logger.warn('in-flight requests still running at the shutdown timeout; closing them')
        await server.stop(true)
      }
      // Elysia runs afterResponse hooks (the access log line, metrics, the request's span) in a setImmediate; the
      // rest of shutdown can finish in microtasks alone, so a request answered just before the signal would lose them.
      await new Promise((resolve) => setImmediate(resolve))
      // Answers, tasks and imports with no request left (their clients follow them elsewhere, or left) get the
      // rest of the time to finish; whatever still runs then is stopped and recorded as interrupted.
      if (!(await untilDeadline(Promise.all([deps.chat.idle(), deps.agents.idle(), deps.imports.idle()]))))
        logger.warn('chat answers, agent tasks or imports still running at the shutdown timeout; interrupting them')
      await metricsListener?.stop()
      await deps.close()
      logger.info('stopped')
    })())

  return { server, url, metricsUrl: metricsListener?.url, shutdown }
}
