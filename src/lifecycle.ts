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
  }
}
