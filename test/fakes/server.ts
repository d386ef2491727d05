import type { Server } from 'bun'

export interface RecordedRequest {
  method: string
  path: string
  headers: Record<string, string>
  body: string
}

export interface FakeServer {
  readonly url: string
  readonly port: number
  /** Every request received, in order. */
  readonly requests: RecordedRequest[]
  close(): Promise<void>
}

/**
 * The base of every fake upstream: a Bun server on 127.0.0.1 and a random port that
 * records what it receives and answers through `handle`.
 */
export function startFakeServer(handle: (request: Request, recorded: RecordedRequest) => Response | Promise<Response>): FakeServer {
  const requests: RecordedRequest[] = []
  const server: Server<unknown> = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    idleTimeout: 0,
    async fetch(request) {
      const url = new URL(request.url)
      const recorded: RecordedRequest = {
        method: request.method,
        path: url.pathname + url.search,
        headers: Object.fromEntries(request.headers),
        body: request.body ? await request.clone().text() : '',
      }
      requests.push(recorded)
      return handle(request, recorded)
    },
  })
  return {
    url: `http://127.0.0.1:${server.port}`,
    port: server.port!,
    requests,
    close: () => server.stop(true),
  }
}
