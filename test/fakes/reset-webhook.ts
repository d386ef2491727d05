/** A mail relay's webhook as PASSWORD_RESET_WEBHOOK_URL names it: records each JSON POST it receives. */
export interface ResetWebhook {
  url: string
  received: Record<string, unknown>[]
  /** The next message, waiting up to `ms`; undefined when none came. */
  next(ms?: number): Promise<Record<string, unknown> | undefined>
  close(): Promise<void>
}

export function startResetWebhook(): ResetWebhook {
  const received: Record<string, unknown>[] = []
  let read = 0
  const server = Bun.serve({
    port: 0,
    hostname: '127.0.0.1',
    async fetch(request) {
      if (request.method !== 'POST' || request.headers.get('content-type') !== 'application/json') return new Response('bad request', { status: 400 })
      received.push((await request.json()) as Record<string, unknown>)
      return new Response(null, { status: 204 })
    },
  })
  return {
    url: `http://127.0.0.1:${server.port}/password-reset`,
    received,
    async next(ms = 2000) {
      const deadline = Date.now() + ms
      while (received.length <= read && Date.now() < deadline) await Bun.sleep(10)
      return received.length > read ? received[read++] : undefined
    },
    close: () => server.stop(true),
  }
}
