import { AppError } from './errors.ts'

/** Process state shared by the health checks and shutdown. */
export interface Lifecycle {
  /** Set on SIGTERM: readiness fails so load balancers stop sending traffic. */
  draining: boolean
  readonly startedAt: number
  /** Requests that have arrived so far: shutdown closes the listener once a poll of the sockets brings none. */
  requestsArrived: number
  /** Aborted when draining starts: streams another process can serve end with a reconnect hint. */
  readonly drain: AbortSignal
  startDraining(): void
  /**
   * Throws 503 `unavailable` with Retry-After while the process drains: new long work (a chat turn, an import, an
   * agent task) would outlive the shutdown, so the proxy is told to send it to another process.
   */
  admitLongWork(what: string): void
}

/** Seconds a client refused by a draining process waits before trying again (a proxy retries at once elsewhere). */
export const DRAINING_RETRY_AFTER_SECONDS = 1

function drainingRefusal(what: string): AppError {
  return new AppError('unavailable', `This server is restarting and takes no new ${what}; send it again (another server takes it)`, {
    headers: { 'retry-after': String(DRAINING_RETRY_AFTER_SECONDS) },
  })
}

export function createLifecycle(): Lifecycle {
  const drain = new AbortController()
  return {
    draining: false,
    startedAt: Date.now(),
    requestsArrived: 0,
    drain: drain.signal,
    startDraining() {
      this.draining = true
      drain.abort()
    },
    admitLongWork(what) {
      if (this.draining) throw drainingRefusal(what)
    },
  }
}
